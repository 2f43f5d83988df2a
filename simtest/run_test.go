package simtest_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/respire-go/respire/client"
	"github.com/respire-go/respire/sim"
	"github.com/respire-go/respire/sim/scenario"
	"github.com/respire-go/respire/simtest"
)

// racers is a body whose outcome depends on the interleaving: three tasks append to a shared
// key in turns, yielding at every client call.
func racers(env *simtest.Env) {
	ctx := context.Background()
	c := env.Client()
	var tasks []*simtest.Task
	for i := 0; i < 3; i++ {
		tasks = append(tasks, env.Go(func() {
			for j := 0; j < 3; j++ {
				v, _, err := c.Get(ctx, "log")
				if err != nil {
					env.Fatalf("get: %v", err)
				}
				if err := c.Set(ctx, "log", v+strconv.Itoa(i)); err != nil {
					env.Fatalf("set: %v", err)
				}
			}
		}))
	}
	for _, t := range tasks {
		t.Wait()
	}
	v, _, err := c.Get(ctx, "log")
	if err != nil {
		env.Fatalf("get: %v", err)
	}
	env.Logf("log=%s", v)
}

// TestSeedReplaysTheRun: the same seed gives the same trace, interleaving and outcome; other
// seeds interleave the tasks differently.
func TestSeedReplaysTheRun(t *testing.T) {
	sc := simtest.DefaultScenario()
	sc.Network.Jitter = 200 * time.Microsecond
	sc.Faults = []scenario.Fault{{At: scenario.At(2 * time.Millisecond), LoseReply: &scenario.Target{Node: "r1"}}}
	run := func(seed uint64) *simtest.Result {
		return simtest.Run(simtest.Config{Scenario: sc, Seed: seed, KeepTrace: true}, racers)
	}
	a, b := run(7), run(7)
	if a.TraceHash != b.TraceHash || strings.Join(a.Trace, "\n") != strings.Join(b.Trace, "\n") {
		t.Fatalf("seed 7 gave two traces:\n%s\n---\n%s", strings.Join(a.Trace, "\n"), strings.Join(b.Trace, "\n"))
	}
	if strings.Join(a.Logs, ",") != strings.Join(b.Logs, ",") {
		t.Fatalf("seed 7 gave two outcomes: %v and %v", a.Logs, b.Logs)
	}
	if len(a.Sim.Applies) == 0 || !strings.Contains(strings.Join(a.Trace, "\n"), "lose-reply") {
		t.Fatalf("the run applied nothing or lost no reply: %d applies", len(a.Sim.Applies))
	}
	// Different seeds: the schedule (task turns) differs, not only the seed in the first line.
	schedule := func(r *simtest.Result) string {
		var out []string
		for _, l := range r.Trace {
			if strings.Contains(l, " task run ") {
				out = append(out, l)
			}
		}
		return strings.Join(out, "\n")
	}
	differ := 0
	for seed := uint64(1); seed <= 5; seed++ {
		if schedule(run(seed)) != schedule(a) {
			differ++
		}
	}
	if differ == 0 {
		t.Fatal("five other seeds all gave seed 7's schedule")
	}
}

// TestCommandTimeoutRunsInVirtualTime: a command to a paused node times out after the
// scenario's command timeout in virtual time (exactly 1 s on the virtual clock), as an unknown
// outcome.
func TestCommandTimeoutRunsInVirtualTime(t *testing.T) {
	sc := simtest.DefaultScenario()
	sc.Faults = []scenario.Fault{{At: scenario.At(100 * time.Millisecond), Pause: &scenario.PauseFault{Node: "r1", For: ptr(scenario.At(time.Hour))}}}
	simtest.Test(t, simtest.Config{Scenario: sc, Seed: 1}, func(env *simtest.Env) {
		env.Sleep(200 * time.Millisecond)
		at := env.Now()
		_, err := env.Client().Incr(context.Background(), "n")
		var te *client.TimeoutError
		if !errors.As(err, &te) || !errors.Is(err, client.ErrUnknownOutcome) {
			env.Fatalf("INCR to a paused node: %v, want a timeout with an unknown outcome", err)
		}
		if waited := env.Now() - at; waited != time.Second {
			env.Errorf("the timeout came after %v of virtual time, want the 1s command timeout", waited)
		}
	})
}

func ptr[T any](v T) *T { return &v }

// TestContextsAndTimersRunInVirtualTime: WithTimeout cancels a waiting command, AfterFunc runs
// its function as a task, Sleep advances the clock.
func TestContextsAndTimersRunInVirtualTime(t *testing.T) {
	sc := simtest.DefaultScenario()
	sc.Client.CommandTimeout = 10 * time.Second
	sc.Faults = []scenario.Fault{{At: scenario.At(10 * time.Millisecond), Pause: &scenario.PauseFault{Node: "r1", For: ptr(scenario.At(time.Hour))}}}
	simtest.Test(t, simtest.Config{Scenario: sc, Seed: 3}, func(env *simtest.Env) {
		env.Sleep(20 * time.Millisecond)
		fired := time.Duration(-1)
		env.AfterFunc(300*time.Millisecond, func() { fired = env.Now() })
		ctx, cancel := env.WithTimeout(context.Background(), 500*time.Millisecond)
		defer cancel()
		at := env.Now()
		_, err := env.Client().Incr(ctx, "n")
		if !errors.Is(err, context.Canceled) || env.Now()-at != 500*time.Millisecond {
			env.Errorf("INCR under a 500ms context: %v after %v", err, env.Now()-at)
		}
		if fired != at+300*time.Millisecond {
			env.Errorf("AfterFunc ran at %v, want %v", fired, at+300*time.Millisecond)
		}
	})
}

// TestRunReportsTasksThatCannotFinish: a deadlock, a run that outlives the scenario, and a task
// blocked outside the yield points each end the run with an error saying so.
func TestRunReportsTasksThatCannotFinish(t *testing.T) {
	sc := simtest.DefaultScenario()
	sc.Duration = 5 * time.Second
	cases := []struct {
		name string
		body func(env *simtest.Env)
		want string
	}{
		{"deadlock", func(env *simtest.Env) {
			var a, b *simtest.Task
			a = env.Go(func() { env.Yield(); b.Wait() })
			b = env.Go(func() { env.Yield(); a.Wait() })
			a.Wait()
		}, "deadlock"},
		{"duration", func(env *simtest.Env) { env.Sleep(time.Minute) }, "duration"},
		{"watchdog", func(env *simtest.Env) { <-make(chan struct{}) }, "without yielding"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := simtest.Run(simtest.Config{Scenario: sc, Seed: 1, Watchdog: 200 * time.Millisecond}, tc.body)
			if res.Err == nil || !strings.Contains(res.Err.Error(), tc.want) {
				t.Fatalf("run error %v, want one mentioning %q", res.Err, tc.want)
			}
			if !res.Failed() {
				t.Fatal("Failed() is false for a run with an error")
			}
		})
	}
}

// TestFailuresAreRecorded: Errorf, Fatalf and a panic fail the run; Fatalf and a panic end only
// their task.
func TestFailuresAreRecorded(t *testing.T) {
	res := simtest.Run(simtest.Config{Seed: 1}, func(env *simtest.Env) {
		a := env.Go(func() { env.Fatalf("fatal %d", 1); env.Errorf("not reached") })
		b := env.Go(func() { panic("boom") })
		a.Wait()
		b.Wait()
		env.Errorf("error %d", 2)
	})
	got := strings.Join(res.Failures, "\n")
	if len(res.Failures) != 3 || !strings.Contains(got, "fatal 1") || !strings.Contains(got, "boom") ||
		!strings.Contains(got, "error 2") || strings.Contains(got, "not reached") || res.Err != nil {
		t.Fatalf("failures %q, error %v", res.Failures, res.Err)
	}
}

// TestOptionsMustMatchTheScenario: options that change connections must come from the scenario;
// the others may be adjusted; features the simulator lacks are refused.
func TestOptionsMustMatchTheScenario(t *testing.T) {
	run := func(adjust func(*client.Options)) *simtest.Result {
		return simtest.Run(simtest.Config{Seed: 1, Options: adjust}, func(env *simtest.Env) {
			if err := env.Client().Set(context.Background(), "k", "v"); err != nil {
				env.Errorf("set: %v", err)
			}
		})
	}
	if res := run(func(o *client.Options) { o.CommandTimeout = 5 * time.Second }); res.Err == nil ||
		!strings.Contains(res.Err.Error(), "scenario's client section") {
		t.Fatalf("a command timeout set outside the scenario: %v", res.Err)
	}
	for name, adjust := range map[string]func(*client.Options){
		"ReplicaEndpoints":       func(o *client.Options) { o.ReplicaEndpoints = []client.Endpoint{{Host: "r2", Port: 6379}} },
		"SplitCrossSlotCommands": func(o *client.Options) { o.UseCluster, o.SplitCrossSlotCommands = true, true },
	} {
		var ce *client.ConfigError
		if res := run(adjust); !errors.As(res.Err, &ce) || ce.Option != name || !strings.Contains(ce.Reason, "simulator") {
			t.Errorf("%s: %v, want a *client.ConfigError naming it", name, res.Err)
		}
	}
	res := run(func(o *client.Options) { o.KeyPrefix = "app:" })
	if res.Failed() {
		t.Fatalf("KeyPrefix: %s", res.Summary())
	}
}

// TestUnsupportedFeaturesFailClearly: what a simulated client does not offer yet fails at once
// with an error naming it, instead of blocking outside the yield points: a command a Cluster
// client sends to every node.
func TestUnsupportedFeaturesFailClearly(t *testing.T) {
	sc, err := scenario.Parse([]byte(`
name: cluster-wide
duration: 10s
topology:
  kind: cluster
  nodes: [{id: a1}, {id: b1}]
  cluster: {shards: [{primary: a1}, {primary: b1}]}
client: {connect_timeout: 500ms, command_timeout: 1s}
`))
	if err != nil {
		t.Fatal(err)
	}
	simtest.Test(t, simtest.Config{Scenario: sc, Seed: 1}, func(env *simtest.Env) {
		if _, err := env.Client().DBSize(context.Background()); err == nil || !strings.Contains(err.Error(), "not supported by the simulator") {
			env.Errorf("DBSIZE on a Cluster client: %v", err)
		}
	})
}

// TestFaultSpaceBounds: an invalid fault space is an error before anything is drawn.
func TestFaultSpaceBounds(t *testing.T) {
	for _, fs := range []simtest.FaultSpace{{MaxFaults: -1}, {MaxFaults: simtest.MaxFaultsBound + 1}, {Horizon: -1},
		{Step: time.Nanosecond}, {Kinds: []simtest.FaultKind{"flood"}}, {Slot: -1},
		{Kinds: []simtest.FaultKind{simtest.WrongKindReply}}, {Kinds: []simtest.FaultKind{simtest.Kill, simtest.MalformedReply}},
		{Commands: []string{"INCR  "}}, {Commands: []string{""}}, {Commands: []string{"CLIENT KILL ID"}}} {
		if _, err := simtest.Sweep(simtest.Config{}, fs, 1, func(*simtest.Env) {}); !errors.Is(err, simtest.ErrFaultSpace) {
			t.Errorf("%+v: %v, want ErrFaultSpace", fs, err)
		}
	}
}

// TestClusterClient: a Cluster scenario gives a Cluster client, which follows a failover with
// the production client's redirects and topology refresh, in virtual time.
func TestClusterClient(t *testing.T) {
	sc, err := scenario.Parse([]byte(`
name: cluster-simtest
duration: 30s
topology:
  kind: cluster
  nodes: [{id: a1}, {id: a2}, {id: b1}, {id: b2}]
  cluster:
    shards:
      - {primary: a1, replicas: [a2]}
      - {primary: b1, replicas: [b2]}
client: {connect_timeout: 500ms, command_timeout: 1s, reconnect_policy: {initial_delay: 100ms, max_delay: 1s}}
faults:
  - {at: 2s, cluster: {promote: {node: a2, old: readonly}}}
`))
	if err != nil {
		t.Fatal(err)
	}
	body := func(env *simtest.Env) {
		ctx := context.Background()
		c := env.Client()
		keys := []string{"k0", "k1", "k2", "k3", "k4", "k5"}
		for round := 0; round < 6; round++ {
			for _, k := range keys {
				if _, err := c.Incr(ctx, k); err != nil {
					env.Logf("round %d %s: %v", round, k, err)
				}
			}
			env.Sleep(time.Second)
		}
		for _, k := range keys {
			v, _, err := c.Get(ctx, k)
			if err != nil || v == "" {
				env.Errorf("after the failover, %s: %q %v", k, v, err)
			}
		}
	}
	res := simtest.Test(t, simtest.Config{Scenario: sc, Seed: 4}, body)
	if again := simtest.Run(simtest.Config{Scenario: sc, Seed: 4}, body); again.TraceHash != res.TraceHash {
		t.Fatalf("seed 4 gave two traces: %s and %s", res.TraceHash, again.TraceHash)
	}
	nodes := map[string]bool{}
	for _, a := range res.Sim.Applies {
		nodes[a.Node] = true
	}
	if !nodes["a1"] || !nodes["a2"] || !nodes["b1"] {
		t.Fatalf("applies on %v, want a1 before the failover, a2 after, and b1", nodes)
	}
}

// TestBatches: pipelines and MULTI/EXEC transactions run in a simulated client; a batch whose
// reply is lost ends with an unknown outcome, and is not resent.
func TestBatches(t *testing.T) {
	sc := simtest.DefaultScenario()
	sc.Faults = []scenario.Fault{{At: scenario.At(time.Second), LoseReply: &scenario.Target{Node: "r1"}}}
	res := simtest.Test(t, simtest.Config{Scenario: sc, Seed: 2}, func(env *simtest.Env) {
		ctx := context.Background()
		c := env.Client()
		var b client.Batch
		set := b.Set("k", "v")
		n := b.Incr("n")
		if err := c.Pipeline(ctx, &b); err != nil || set.Err() != nil || n.Val() != 1 {
			env.Fatalf("pipeline: %v %v %d", err, set.Err(), n.Val())
		}
		var tx client.Batch
		m := tx.Incr("n")
		if err := c.Atomic(ctx, &tx); err != nil || m.Val() != 2 {
			env.Fatalf("transaction: %v %d", err, m.Val())
		}
		env.Sleep(time.Second)
		var lost client.Batch
		l := lost.Incr("n")
		if err := c.Pipeline(ctx, &lost); !errors.Is(err, client.ErrUnknownOutcome) || !errors.Is(l.Err(), client.ErrUnknownOutcome) {
			env.Fatalf("a batch whose reply is lost: %v / %v, want an unknown outcome", err, l.Err())
		}
		v, _, err := c.Get(ctx, "n")
		if err != nil || v != "3" {
			env.Fatalf("after the lost reply n=%q %v, want 3 (applied once, never resent)", v, err)
		}
	})
	incrs := 0
	ids := map[uint64]string{}
	for _, a := range res.Sim.Applies {
		if a.Name == "INCR" {
			incrs++
		}
		if a.Name == "SET" || a.Name == "INCR" {
			// A pipeline travels as one command (engine.Multi), each of its commands under
			// its own command id (Multi.IDs), as the simulator's checkers need.
			if prev, dup := ids[a.CmdID]; a.CmdID == 0 || dup {
				t.Fatalf("%s applied under command id %d (already %q): want an id of its own", a.Name, a.CmdID, prev)
			}
			ids[a.CmdID] = a.Name
		}
	}
	if incrs != 3 {
		t.Fatalf("%d INCRs applied, want 3", incrs)
	}
}

// TestScenarioForAHost: the application's code is the workload, so a scenario with one is a
// scenario error, as an invalid scenario is.
func TestScenarioForAHost(t *testing.T) {
	withWorkload := simtest.DefaultScenario()
	withWorkload.Workload = scenario.Workload{Callers: 1, Rate: 10, Keys: 1, Mix: scenario.Mix{Get: 1}}
	res := simtest.Run(simtest.Config{Scenario: withWorkload, Seed: 1}, func(*simtest.Env) {})
	if !errors.Is(res.Err, simtest.ErrScenario) || !errors.Is(res.Err, sim.ErrHostWorkload) {
		t.Fatalf("a scenario with a workload: %v", res.Err)
	}
	if res := simtest.Run(simtest.Config{Scenario: &scenario.Scenario{Name: "no-duration"}}, func(*simtest.Env) {}); !errors.Is(res.Err, simtest.ErrScenario) {
		t.Fatalf("a scenario without a duration: %v", res.Err)
	}
}
