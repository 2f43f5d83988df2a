package simtest_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/respire-go/respire/client"
	"github.com/respire-go/respire/netio/resp"
	"github.com/respire-go/respire/sim/scenario"
	"github.com/respire-go/respire/simtest"
)

// TestDedicatedConnections: a simulated client rents dedicated connections, runs commands and a
// WATCH/MULTI/EXEC transaction on them, and gives them back; a conflicting write between WATCH
// and EXEC makes the transaction fail with ErrTxConflict, as on a real server. Each wait yields
// to the other tasks in virtual time.
func TestDedicatedConnections(t *testing.T) {
	res := simtest.Test(t, simtest.Config{Seed: 3}, func(env *simtest.Env) {
		ctx := context.Background()
		c := env.Client()
		err := c.WithDedicated(ctx, func(d *client.DedicatedConn) error {
			if _, err := d.Incr(ctx, "n"); err != nil {
				return err
			}
			vals, err := d.Exec(ctx, func(tx *client.Tx) {
				tx.Incr("n")
				tx.Incr("n")
			})
			if err != nil || len(vals) != 2 || vals[1].Int != 3 {
				env.Errorf("exec: %v %+v", err, vals)
			}
			return nil
		})
		if err != nil {
			env.Fatalf("WithDedicated: %v", err)
		}
		// WATCH, then a write by another task, then EXEC: the transaction must not apply.
		d, err := c.Dedicated(ctx)
		if err != nil {
			env.Fatalf("Dedicated: %v", err)
		}
		if err := d.Watch(ctx, "n"); err != nil {
			env.Fatalf("watch: %v", err)
		}
		env.Go(func() {
			if _, err := c.Incr(ctx, "n"); err != nil {
				env.Errorf("the other task's INCR: %v", err)
			}
		}).Wait()
		if _, err := d.Exec(ctx, func(tx *client.Tx) { tx.Set("n", "0") }); !errors.Is(err, client.ErrTxConflict) {
			env.Errorf("exec after a conflicting write: %v, want ErrTxConflict", err)
		}
		_ = d.Close()
		if v, _, err := c.Get(ctx, "n"); err != nil || v != "4" {
			env.Errorf("n = %q %v, want 4", v, err)
		}
	})
	if res.Failed() {
		return
	}
	multis := 0
	for _, a := range res.Sim.Applies {
		if a.Name == "EXEC" {
			multis++
		}
	}
	if multis == 0 {
		t.Fatalf("no EXEC reached the simulated node: %+v", res.Sim.Applies)
	}
}

// TestBlockingCommands: a BLPOP waits on its own dedicated connection, in virtual time, until
// another task pushes 2 s later; a BLPOP whose block time passes returns nothing; and a BLPOP
// blocked when the node is killed ends with an unknown outcome and is never sent again, while
// the client recovers under its policy. The seed replays the same run.
func TestBlockingCommands(t *testing.T) {
	sc := simtest.DefaultScenario()
	sc.Client.ReconnectPolicy = &scenario.PolicySpec{InitialDelay: 100 * time.Millisecond, MaxDelay: time.Second}
	restart := scenario.At(time.Second)
	sc.Faults = []scenario.Fault{{At: scenario.At(10 * time.Second), Kill: &scenario.KillFault{Node: "r1", RestartAfter: &restart}}}
	body := func(env *simtest.Env) {
		ctx := context.Background()
		c := env.Client()
		env.AfterFunc(2*time.Second, func() {
			if _, err := c.RPush(ctx, "jobs", "j1"); err != nil {
				env.Errorf("push: %v", err)
			}
		})
		start := env.Now()
		key, val, ok, err := c.BLPop(ctx, 5*time.Second, "jobs")
		if err != nil || !ok || key != "jobs" || val != "j1" {
			env.Fatalf("BLPOP: %q %q %v %v", key, val, ok, err)
		}
		if waited := env.Now() - start; waited < 2*time.Second || waited > 2100*time.Millisecond {
			env.Errorf("BLPOP returned after %v of virtual time, want about 2s", waited)
		}
		if _, _, ok, err := c.BLPop(ctx, time.Second, "empty"); ok || err != nil {
			env.Errorf("BLPOP on an empty list: ok=%v %v, want nothing after its block time", ok, err)
		}
		env.Sleep(9*time.Second - env.Now())
		if _, _, _, err := c.BLPop(ctx, 10*time.Second, "never"); !errors.Is(err, client.ErrUnknownOutcome) {
			env.Errorf("BLPOP across a kill: %v, want an unknown outcome", err)
		}
		env.Sleep(2 * time.Second)
		v, err := c.Do(ctx, "LPUSH", "after", "x")
		if err != nil || v.Kind != resp.KindInteger {
			env.Errorf("after the restart: %v %v", v, err)
		}
	}
	a := simtest.Test(t, simtest.Config{Scenario: sc, Seed: 5}, body)
	b := simtest.Run(simtest.Config{Scenario: sc, Seed: 5}, body)
	if a.Failed() {
		return
	}
	if a.TraceHash != b.TraceHash {
		t.Fatalf("the seed does not replay: %s then %s", a.TraceHash, b.TraceHash)
	}
	sent := map[uint64]int{}
	blpops := 0
	for _, s := range a.Sim.Sends {
		sent[s.CmdID]++
		if sent[s.CmdID] > 1 {
			t.Fatalf("command %d sent twice", s.CmdID)
		}
	}
	for _, ap := range a.Sim.Applies {
		if strings.EqualFold(ap.Name, "BLPOP") {
			blpops++
		}
	}
	if blpops < 2 {
		t.Fatalf("%d BLPOPs applied, want the served one and the one that timed out", blpops)
	}
}

// TestUnblockOnCancelIsRefused: UnblockOnCancel's cleanup runs on real time, so a simulated
// client refuses it when it is built, with an error naming it.
func TestUnblockOnCancelIsRefused(t *testing.T) {
	res := simtest.Run(simtest.Config{Seed: 1, Options: func(o *client.Options) { o.DedicatedPool.UnblockOnCancel = true }}, func(*simtest.Env) {})
	if res.Err == nil || !strings.Contains(res.Err.Error(), "UnblockOnCancel") {
		t.Fatalf("run error %v, want UnblockOnCancel refused", res.Err)
	}
}
