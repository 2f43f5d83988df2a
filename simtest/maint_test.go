package simtest_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/respire-go/respire/client"
	"github.com/respire-go/respire/sim/scenario"
	"github.com/respire-go/respire/simtest"
)

// maintWorld is the maintenance world of these tests: MIGRATING at 1 s and MIGRATED at 6 s on
// r1, a 500 ms command timeout relaxed to 3 s, the node paused from 2 s to 3.5 s (a slow reply
// inside the window), and from 5 s its link 1 s slower each way, so that MIGRATED reaches the
// client at 7 s while commands sent after 5 s still wait for their replies (due at about 7.2 s).
const maintWorld = `
name: simtest-maint
duration: 20s
topology: {kind: standalone, nodes: [{id: r1}]}
network: {latency: 500us}
client:
  connections: 1
  connect_timeout: 1s
  command_timeout: 500ms
  maintenance_notifications: auto
  maintenance_relaxed_timeout: 3s
  maintenance_window_timeout: 20s
maintenance:
  - {at: 1s, node: r1, kind: MIGRATING, time: 10s, shards: [shard-1]}
  - {at: 6s, node: r1, kind: MIGRATED, shards: [shard-1]}
faults:
  - {at: 2s, pause: {node: r1, for: 1500ms}}
  - {at: 5s, delay: {node: r1, extra: 1s, for: 3s}}
`

func maintScenario(t *testing.T) *scenario.Scenario {
	t.Helper()
	sc, err := scenario.Parse([]byte(maintWorld))
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// timed runs fn at virtual time at and checks what it returned and when: ok wants no error and
// an end within [minTook, maxTook] of its start; !ok wants a *client.TimeoutError then.
func timed(env *simtest.Env, what string, at, minTook, maxTook time.Duration, ok bool, fn func() error) {
	env.Sleep(at - env.Now())
	start := env.Now()
	err := fn()
	took := env.Now() - start
	var te *client.TimeoutError
	switch {
	case ok && err != nil:
		env.Errorf("%s at %v: %v after %v, want success (the relaxed deadline)", what, at, err, took)
	case !ok && !errors.As(err, &te):
		env.Errorf("%s at %v: %v after %v, want a *client.TimeoutError", what, at, err, took)
	case took < minTook || took > maxTook:
		env.Errorf("%s at %v: ended after %v, want %v to %v", what, at, took, minTook, maxTook)
	}
}

// The windows these tests expect: a call made at 2.1 s waits through the pause for its reply at
// 3.5 s, 1.4 s, longer than its own 500 ms and within the relaxed 3 s; a call made at 5.2 s is
// kept alive past 5.7 s by the window and times out when MIGRATED closes it, at 7 s (1.8 s),
// before its reply (about 7.2 s) and long before its relaxed deadline (8.2 s). Without the
// relaxation both time out after 500 ms; without the window's shrink the second one succeeds.
const (
	slowAt, slowMin, slowMax         = 2100 * time.Millisecond, 1300 * time.Millisecond, 1500 * time.Millisecond
	shrinkAt, shrinkMin, shrinkMax   = 5200 * time.Millisecond, 1750 * time.Millisecond, 1850 * time.Millisecond
	maintNoticesBefore, maintEndTime = time.Second, 9 * time.Second
)

// TestMaintenanceRelaxesSimulatedBatches: a simulated client's pipelines and atomic batches
// follow the production relaxation rule (relaxAt, through waitRelaxedSim): a run slower than
// CommandTimeout but within MaintenanceRelaxedTimeout succeeds in a MIGRATING window, and one
// kept alive by the window times out when MIGRATED closes it. Before the simulator's batch wait
// asked the relaxation, both timed out at 500 ms.
func TestMaintenanceRelaxesSimulatedBatches(t *testing.T) {
	simtest.Test(t, simtest.Config{Scenario: maintScenario(t), Seed: 18}, func(env *simtest.Env) {
		ctx := context.Background()
		c := env.Client()
		pipeline := func() error {
			var b client.Batch
			set := b.Set("k", "v")
			get := b.Get("k")
			if err := c.Pipeline(ctx, &b); err != nil {
				return err
			}
			if set.Err() != nil || get.Err() != nil {
				return errors.Join(set.Err(), get.Err())
			}
			return nil
		}
		atomic := func() error {
			var b client.Batch
			b.Incr("n")
			return c.Atomic(ctx, &b)
		}
		env.Go(func() { timed(env, "pipeline", slowAt, slowMin, slowMax, true, pipeline) })
		env.Go(func() { timed(env, "atomic batch", slowAt, slowMin, slowMax, true, atomic) })
		env.Go(func() { timed(env, "pipeline", shrinkAt, shrinkMin, shrinkMax, false, pipeline) })
		env.Go(func() { timed(env, "atomic batch", shrinkAt, shrinkMin, shrinkMax, false, atomic) })
		// A single command follows the same rule.
		env.Go(func() {
			timed(env, "INCR", slowAt, slowMin, slowMax, true, func() error { _, err := c.Incr(ctx, "m"); return err })
		})
		env.Sleep(maintEndTime)
	})
}

// TestMaintenanceRelaxesSimulatedDedicated: a simulated dedicated connection that opted in
// during its handshake relaxes its own commands and batches with its own maintenance state:
// its single commands (roundTripSim) and its transactions and pipelines (awaitGroupHost) wait
// through a slow reply in a MIGRATING window and time out when MIGRATED closes it. Before the
// simulator's dedicated waits asked the relaxation, all of them timed out at 500 ms.
func TestMaintenanceRelaxesSimulatedDedicated(t *testing.T) {
	simtest.Test(t, simtest.Config{Scenario: maintScenario(t), Seed: 18}, func(env *simtest.Env) {
		ctx := context.Background()
		c := env.Client()
		// Four connections, rented before the notice so that each receives it; each serves one
		// call (a call that times out discards its connection).
		var ds []*client.DedicatedConn
		for range 4 {
			d, err := c.Dedicated(ctx)
			if err != nil {
				env.Fatalf("Dedicated: %v", err)
			}
			ds = append(ds, d)
		}
		if env.Now() >= maintNoticesBefore {
			env.Fatalf("the connections were rented at %v, after MIGRATING", env.Now())
		}
		incr := func(d *client.DedicatedConn) func() error {
			return func() error { _, err := d.Incr(ctx, "n"); return err }
		}
		exec := func(d *client.DedicatedConn) func() error {
			return func() error { _, err := d.Exec(ctx, func(tx *client.Tx) { tx.Incr("n") }); return err }
		}
		env.Go(func() { timed(env, "dedicated INCR", slowAt, slowMin, slowMax, true, incr(ds[0])) })
		env.Go(func() { timed(env, "dedicated EXEC", slowAt, slowMin, slowMax, true, exec(ds[1])) })
		env.Go(func() { timed(env, "dedicated INCR", shrinkAt, shrinkMin, shrinkMax, false, incr(ds[2])) })
		env.Go(func() { timed(env, "dedicated EXEC", shrinkAt, shrinkMin, shrinkMax, false, exec(ds[3])) })
		env.Sleep(maintEndTime)
		for _, d := range ds {
			_ = d.Close()
		}
	})
}
