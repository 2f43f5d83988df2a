package sim

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/respire-go/respire/engine"
	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/sim/check"
	"github.com/respire-go/respire/sim/record"
	"github.com/respire-go/respire/sim/scenario"
)

func sentinelScenarios(t *testing.T) []string {
	t.Helper()
	paths, err := filepath.Glob("../scenarios/sentinel-*.yaml")
	if err != nil || len(paths) < 5 {
		t.Fatalf("want the sentinel scenarios, got %v (%v)", paths, err)
	}
	return paths
}

// TestSentinelScenarios: every Sentinel scenario passes its checkers, replays the same trace for
// its seed (a different seed gives another), and engine.Replay over its journal reproduces every
// recorded effect.
func TestSentinelScenarios(t *testing.T) {
	for _, path := range sentinelScenarios(t) {
		sc := mustLoad(t, path)
		t.Run(sc.Name, func(t *testing.T) {
			a := run(t, sc, sc.Seed, false)
			if v := check.Judge(a); !v.Pass() {
				t.Fatalf("violations %v, missing %v", v.Unexpected, v.Missing)
			}
			if b := run(t, sc, sc.Seed, false); b.TraceHash != a.TraceHash {
				t.Fatalf("same seed, different traces: %s %s", a.TraceHash, b.TraceHash)
			}
			if d := run(t, sc, sc.Seed+1000, false); d.TraceHash == a.TraceHash {
				t.Fatal("a different seed gave the same trace")
			}
			events := make([]fsm.Event, len(a.Steps))
			for i := range a.Steps {
				events[i] = a.Steps[i].Event
			}
			i := 0
			var got, want []byte
			engine.Replay(a.Scenario.EngineConfig(), events, func(ev *fsm.Event, effects []fsm.Effect) {
				rec := a.Steps[i].Effects
				if len(effects) != len(rec) {
					t.Fatalf("step %d (%s): %d effects replayed, %d recorded", i, ev, len(effects), len(rec))
				}
				for j := range effects {
					got, want = effects[j].AppendTo(got[:0]), rec[j].AppendTo(want[:0])
					if string(got) != string(want) {
						t.Fatalf("step %d effect %d:\nreplayed %s\nrecorded %s", i, j, got, want)
					}
				}
				i++
			})
			if i != len(a.Steps) {
				t.Fatalf("replayed %d of %d steps", i, len(a.Steps))
			}
		})
	}
}

// TestSentinelStaleRollbackControl is the positive control of sentinel-stale-rollback's
// expectation: with the epochs unreadable (SENTINEL MASTER refused), the client follows the
// stale Sentinel's late report to r2 (ROLE then turns it away), and the expectation that it
// never dials r2 after returning to r1 fails. With the epochs, the same run passes (above), and
// the stale answer is visibly refused.
func TestSentinelStaleRollbackControl(t *testing.T) {
	sc := mustLoad(t, "../scenarios/sentinel-stale-rollback.yaml")
	res := run(t, sc, sc.Seed, true)
	if !traceHas(res.Trace, "epoch=2", "answered", "addr=r2:6379") || !traceHas(res.Trace, "stale") {
		t.Fatal("the stale Sentinel's answer (r2 at epoch 2) was never received and refused")
	}
	control := sc.Clone()
	control.Topology.Sentinel.NoEpoch = true
	res = run(t, control, control.Seed, true)
	v := check.Judge(res)
	if v.Pass() {
		t.Fatal("without epochs the client must follow the stale report to r2, and the dials expectation catch it")
	}
	if len(v.Unexpected) != 1 || v.Unexpected[0].Checker != check.CheckDials || !strings.Contains(v.Unexpected[0].Message, "r2:6379") {
		t.Fatalf("only the dials expectation may fail, got %v", v.Unexpected)
	}
	if !traceHas(res.Trace, "sentinel warning") {
		t.Fatal("the client did not warn that it cannot read epochs")
	}
}

// TestSentinelAllDownSpinControl is the positive control of sentinel-all-down's no-spin bounds
// (expect.dial_rate, and the dials of expect.during): with the engine planted to dial a refusing
// Sentinel again at once instead of letting its machine back off, every Sentinel's bound fails,
// and nothing else does (the spin loses no write). The clean run passes (TestSentinelScenarios).
func TestSentinelAllDownSpinControl(t *testing.T) {
	sc := mustLoad(t, "../scenarios/sentinel-all-down.yaml")
	control := sc.Clone()
	control.Plant = []scenario.Plant{scenario.PlantSentinelRedialAtOnce}
	res := run(t, control, control.Seed, true)
	if plantLines(res, scenario.PlantSentinelRedialAtOnce) < 100 {
		t.Fatal("the planted redial did not spin")
	}
	v := check.Judge(res)
	caught := map[string]map[string]bool{}
	for _, u := range v.Unexpected {
		if u.Checker != check.CheckExpectDialRate && u.Checker != check.CheckExpectDuring {
			t.Errorf("only the dial bounds may fail, got %s: %s", u.Checker, u.Message)
			continue
		}
		for _, node := range []string{"s1", "s2", "s3"} {
			if strings.Contains(u.Message, "dials to "+node+" ") || strings.Contains(u.Message, "dials to "+node+":") {
				if caught[u.Checker] == nil {
					caught[u.Checker] = map[string]bool{}
				}
				caught[u.Checker][node] = true
			}
		}
	}
	for _, c := range []string{check.CheckExpectDialRate, check.CheckExpectDuring} {
		if len(caught[c]) != 3 {
			t.Errorf("%s caught the spin on %v, want s1, s2 and s3 (violations %v)", c, caught[c], v.Unexpected)
		}
	}
}

// TestSentinelPartitionBetweenSentinels: in sentinel-partition-between-sentinels, s1 (asked
// first) is partitioned from the other Sentinels and reports r1 at epoch 1 after the failover.
// The rediscovery the +sdown at 6 s triggers asks s1 and refuses its answer as stale, without
// dialing r1. The control turns the epochs off (no_epoch): the client then follows s1 to r1
// (ROLE turns it away), and the expectation that it never dials r1 again fails.
func TestSentinelPartitionBetweenSentinels(t *testing.T) {
	sc := mustLoad(t, "../scenarios/sentinel-partition-between-sentinels.yaml")
	res := run(t, sc, sc.Seed, true)
	refused := false
	for _, l := range res.Trace {
		if strings.Contains(l, "older configuration epoch") && strings.Contains(l, "addr=s1:26379") && !strings.HasPrefix(l, "t=3.") {
			refused = true
		}
	}
	if !refused || !traceHas(res.Trace, "answered", "addr=r1:6379", "epoch=1") {
		t.Fatal("s1's stale answer (r1 at epoch 1) was never received after the failover and refused")
	}
	if !traceHas(res.Trace, "+switch-master", "sentinel-monitor#1") || !traceHas(res.Trace, "sentinel=s1", "epoch=2") {
		t.Fatal("the partition never healed: s1 never took the new view and announced it")
	}
	control := sc.Clone()
	control.Topology.Sentinel.NoEpoch = true
	v := check.Judge(run(t, control, control.Seed, true))
	if v.Pass() {
		t.Fatal("without epochs the client must follow the partitioned Sentinel back to r1, and the dials expectation catch it")
	}
	for _, u := range v.Unexpected {
		if u.Checker != check.CheckDials || !strings.Contains(u.Message, "r1:6379") {
			t.Errorf("only the dials expectation on r1 may fail, got %s: %s", u.Checker, u.Message)
		}
	}
}

// TestSentinelSpecErrors: a bad sentinel topology or fault gets a clear error naming its field.
func TestSentinelSpecErrors(t *testing.T) {
	head := "name: x\nduration: 1s\n"
	topo := "topology:\n  kind: sentinel\n  nodes: [{id: r1}, {id: r2}, {id: s1}]\n"
	for _, c := range []struct{ name, yaml, field string }{
		{"no sentinels", topo + "  sentinel: {primary: r1, replicas: [r2]}\n", "topology.sentinel.sentinels"},
		{"unknown primary", topo + "  sentinel: {primary: x, replicas: [r2], sentinels: [s1]}\n", "topology.sentinel.primary"},
		{"node twice", topo + "  sentinel: {primary: r1, replicas: [r2, r1], sentinels: [s1]}\n", "topology.sentinel.replicas[1]"},
		{"node in no role", topo + "  sentinel: {primary: r1, sentinels: [s1]}\n", "topology.nodes[1]"},
		{"configured not a sentinel", topo + "  sentinel: {primary: r1, replicas: [r2], sentinels: [s1], configured: [r2]}\n", "topology.sentinel.configured[0]"},
		{"name with space", topo + "  sentinel: {primary_name: \"a b\", primary: r1, replicas: [r2], sentinels: [s1]}\n", "topology.sentinel.primary_name"},
		{"section on standalone", "topology:\n  sentinel: {primary: r1, sentinels: [s1]}\n", "topology.sentinel"},
		{"promote a sentinel", topo + "  sentinel: {primary: r1, replicas: [r2], sentinels: [s1]}\nfaults:\n  - {at: 0s, sentinel: {failover: {promote: s1}}}\n", "faults[0].sentinel.failover.promote"},
		{"view of a data node", topo + "  sentinel: {primary: r1, replicas: [r2], sentinels: [s1]}\nfaults:\n  - {at: 0s, sentinel: {failover: {promote: r2, views: [{sentinel: r1}]}}}\n", "faults[0].sentinel.failover.views[0].sentinel"},
		{"no action", topo + "  sentinel: {primary: r1, replicas: [r2], sentinels: [s1]}\nfaults:\n  - {at: 0s, sentinel: {}}\n", "faults[0].sentinel"},
		{"split without promote", topo + "  sentinel: {primary: r1, replicas: [r2], sentinels: [s1]}\nfaults:\n  - {at: 0s, sentinel: {failover: {primary: r2, split: 1s}}}\n", "faults[0].sentinel.failover.split"},
		{"too many down", topo + "  sentinel: {primary: r1, replicas: [r2], sentinels: [s1]}\nfaults:\n  - {at: 0s, sentinel: {down: {sentinels: [" + strings.Repeat("s1, ", 64) + "s1]}}}\n", "faults[0].sentinel.down.sentinels"},
		{"fault without topology", "faults:\n  - {at: 0s, sentinel: {down: {}}}\n", "faults[0].sentinel"},
		{"too many nodes", "topology:\n  kind: sentinel\n  nodes: [{id: r1}, {id: s1}" + manyNodes(255) + "]\n  sentinel: {primary: r1, sentinels: [s1]}\n", "topology.nodes"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := scenario.Parse([]byte(head + c.yaml))
			if err == nil || !strings.Contains(err.Error(), c.field+":") {
				t.Fatalf("want an error on %s, got %v", c.field, err)
			}
		})
	}
}

// traceHas reports whether a line of trace contains every one of words.
func traceHas(trace []string, words ...string) bool {
	for _, l := range trace {
		all := true
		for _, w := range words {
			all = all && strings.Contains(l, w)
		}
		if all {
			return true
		}
	}
	return false
}

// TestSentinelReadOnlyNotices: in sentinel-readonly-notices no Sentinel announces the failover,
// so it is a READONLY reply that retires r1's generation; the later +sdown/+odown reach the
// monitors and trigger a rediscovery that ROLE confirms on r2.
func TestSentinelReadOnlyNotices(t *testing.T) {
	sc := mustLoad(t, "../scenarios/sentinel-readonly-notices.yaml")
	res := run(t, sc, sc.Seed, true)
	if traceHas(res.Trace, "notified", "+switch-master") {
		t.Fatal("a +switch-master reached the client: the failover was meant to be quiet")
	}
	if !traceHas(res.Trace, "primary-failed", "READONLY") {
		t.Fatal("no READONLY reply retired the primary's generation")
	}
	if !traceHas(res.Trace, "notified", "+odown") || !traceHas(res.Trace, "rediscovery-requested") {
		t.Fatal("the Sentinels' +odown did not reach the monitors and trigger a rediscovery")
	}
}

// TestSentinelSplitBrain: in sentinel-split-brain the old primary r1 acknowledges writes while
// it diverges, and Redis discards them when it rejoins. check.SplitLosses names them (some
// acknowledged writes among them: the loss happened), the run passes every checker with them
// left out, and nothing was replayed. Judged as if r1 had never diverged (the positive
// control), the same history is not linearizable: the checker sees the loss.
func TestSentinelSplitBrain(t *testing.T) {
	sc := mustLoad(t, "../scenarios/sentinel-split-brain.yaml")
	res := run(t, sc, sc.Seed, true)
	if v := check.Judge(res); !v.Pass() {
		t.Fatalf("violations %v", v.Unexpected)
	}
	lost := map[uint64]bool{}
	for _, id := range check.SplitLosses(res) {
		lost[id] = true
	}
	acked := 0
	for _, op := range res.Ops {
		if lost[op.ID] && op.Outcome == record.OpOK && op.ServerError == "" && op.Name != "GET" && op.Name != "MGET" {
			acked++
		}
	}
	if acked == 0 {
		t.Fatal("r1 acknowledged no write while it diverged: the loss never happened")
	}
	t.Logf("Redis lost %d acknowledged writes (%d commands applied on the discarded copy)", acked, len(lost))
	if !traceHas(res.Trace, "sentinel rejoined", "node=r1") {
		t.Fatal("r1 never rejoined")
	}
	blind := *res
	blind.Scenario = res.Scenario.Clone()
	blind.Scenario.Faults[0].Sentinel.Failover.Split = 0
	if got := (check.Linearizable{}).Check(&blind); len(got) == 0 {
		t.Fatal("judged without the divergence, the lost writes must make the history non-linearizable")
	}
}

// TestSentinelColocatedDies: in sentinel-colocated-dies (rueidis #1016) the client's first
// Sentinel dies with the primary; the failover still reaches the client as another Sentinel's
// +switch-master, and the new primary is validated within 500 ms of the announcement.
func TestSentinelColocatedDies(t *testing.T) {
	sc := mustLoad(t, "../scenarios/sentinel-colocated-dies.yaml")
	res := run(t, sc, sc.Seed, true)
	announced := sc.Faults[2].At.Value()
	notified, validated := false, time.Duration(-1)
	for i, l := range res.Trace {
		if strings.Contains(l, "notified") && strings.Contains(l, "+switch-master") && strings.Contains(l, "r1:6379->r2:6379") {
			notified = true
		}
		if validated < 0 && strings.Contains(l, "publish addr=r2:6379") {
			validated = traceTime(t, res.Trace[i])
		}
	}
	if !notified {
		t.Fatal("no surviving Sentinel's +switch-master reached the client")
	}
	if validated < announced || validated > announced+500*time.Millisecond {
		t.Fatalf("r2 validated at %v, want within 500ms of %v", validated, announced)
	}
	t.Logf("new primary validated %v after the surviving Sentinels announced it", validated-announced)
}

// traceTime returns the virtual time of a trace line ("t=1.500000000 ...").
func traceTime(t *testing.T, line string) time.Duration {
	t.Helper()
	f, _, _ := strings.Cut(strings.TrimPrefix(line, "t="), " ")
	d, err := time.ParseDuration(f + "s")
	if err != nil {
		t.Fatalf("trace line %q: %v", line, err)
	}
	return d
}

// manyNodes returns n more node entries of a YAML flow list, with distinct ids.
func manyNodes(n int) string {
	var b strings.Builder
	for i := range n {
		b.WriteString(", {id: x" + strconv.Itoa(i) + "}")
	}
	return b.String()
}

// TestSentinelLeaderWindowSeen: in sentinel-leader-window the fault of issue 13 happens: the
// leader s1, asked first, answers SENTINEL MASTER with r1 under the new epoch 2 and
// failover_in_progress, and r1 is validated again by ROLE (the split keeps it a primary) without
// the epoch moving to 2; then the client follows s1's switch to r2 (the scenario's expectations,
// TestSentinelScenarios). Reverting the resolution's rule makes the scenario fail: r2 is refused
// as stale and every command fails once r1 rejoins as a replica.
func TestSentinelLeaderWindowSeen(t *testing.T) {
	sc := mustLoad(t, "../scenarios/sentinel-leader-window.yaml")
	res := run(t, sc, sc.Seed, true)
	if !traceHas(res.Trace, "answered", "addr=r1:6379", "epoch=2", "in-failover") {
		t.Fatal("the leader's report of r1 under epoch 2 mid-failover never reached the client")
	}
	if !traceHas(res.Trace, "t=3.", "answered", "role=primary", "publish addr=r1:6379 generation=1 epoch=1") ||
		traceHas(res.Trace, "publish addr=r1:6379 generation=1 epoch=2") {
		t.Fatal("r1 must be validated again in the window under epoch 1, never under epoch 2")
	}
	if !traceHas(res.Trace, "publish", "addr=r2:6379", "epoch=2", "changed") {
		t.Fatal("the client never followed the failover to r2 under epoch 2")
	}
	if v := check.Judge(res); !v.Pass() {
		t.Fatalf("violations %v, missing %v", v.Unexpected, v.Missing)
	}
}
