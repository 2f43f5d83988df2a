package sim

import (
	"path/filepath"
	"strings"
	"time"

	"testing"

	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/sim/check"
	"github.com/respire-go/respire/sim/record"
	"github.com/respire-go/respire/sim/scenario"
)

// readsByNode counts the workload's reads and writes sent to each node, through the dials.
func readsByNode(t *testing.T, res *record.Result) (reads, writes map[string]int) {
	t.Helper()
	nodes := map[fsm.ConnID]string{}
	for _, d := range res.Dials {
		nodes[d.Conn] = d.Endpoint
	}
	ops := map[uint64]*record.Op{}
	for i := range res.Ops {
		ops[res.Ops[i].ID] = &res.Ops[i]
	}
	reads, writes = map[string]int{}, map[string]int{}
	for _, s := range res.Sends {
		op := ops[s.CmdID]
		if op == nil {
			continue
		}
		if op.Name == "GET" || op.Name == "MGET" {
			reads[nodes[s.Conn]]++
		} else {
			writes[nodes[s.Conn]]++
		}
	}
	return reads, writes
}

// TestReplicaNearestReadsTheNearest: under Nearest the router's probes find the replica with
// the least latency and the reads go there; writes go to the primary only; the run passes its
// checkers, the replica ones among them, which found something to check.
func TestReplicaNearestReadsTheNearest(t *testing.T) {
	sc := mustLoad(t, "../scenarios/replica-nearest-latencies.yaml")
	res, err := Run(sc, sc.Seed, RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if v := check.Judge(res); !v.Pass() {
		t.Fatalf("violations %v, missing %v", v.Unexpected, v.Missing)
	}
	reads, writes := readsByNode(t, res)
	total := reads["r1:6379"] + reads["r2:6379"] + reads["r3:6379"]
	if total == 0 || reads["r3:6379"]*10 < total*9 {
		t.Fatalf("reads by node %v: want at least 90%% on r3, the nearest", reads)
	}
	if len(writes) != 1 || writes["r1:6379"] == 0 {
		t.Fatalf("writes by node %v: want the primary r1 only", writes)
	}
	if len(res.Candidates) == 0 || len(res.Router) == 0 {
		t.Fatalf("%d replica engine steps and %d router steps recorded: want both", len(res.Candidates), len(res.Router))
	}
	checked := map[string]bool{}
	for _, n := range check.Judge(res).Checked {
		checked[n] = true
	}
	for _, n := range []string{scenario.CheckReplicaNoWrite, scenario.CheckReplicaPolicy, scenario.CheckReplicaHedges, scenario.CheckReplicaReplay} {
		if !checked[n] {
			t.Errorf("checker %s did not run", n)
		}
	}
}

// TestReplicaNearestBand: with a latency tolerance, Nearest spreads the reads over the
// candidates within the band of the nearest (r3 at 1.4ms round trip, r2 at 3ms, within 2ms of
// it) and leaves the primary (7ms) out once the probes measured it.
func TestReplicaNearestBand(t *testing.T) {
	sc := mustLoad(t, "../scenarios/replica-nearest-latencies.yaml")
	tolerance := 2 * time.Millisecond
	sc.Client.ReplicaLatencyTolerance = &tolerance
	res, err := Run(sc, sc.Seed, RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if v := check.Judge(res); !v.Pass() {
		t.Fatalf("violations %v, missing %v", v.Unexpected, v.Missing)
	}
	s := time.Second
	r1, r2, r3 := readsOn(res, "r1", 2*s, 20*s), readsOn(res, "r2", 2*s, 20*s), readsOn(res, "r3", 2*s, 20*s)
	t.Logf("reads after 2s: r1 %d, r2 %d, r3 %d", r1, r2, r3)
	if r1 != 0 || r2*5 < r3 || r3*5 < r2 {
		t.Fatalf("reads after 2s: r1 %d, r2 %d, r3 %d: want r2 and r3 alike, none on r1", r1, r2, r3)
	}
}

// TestReplicaReplayCatchesATamperedStep is replica-replay's positive control: a recorded
// effect of a replica's engine, or of the router, that its event does not produce fails it.
func TestReplicaReplayCatchesATamperedStep(t *testing.T) {
	sc := mustLoad(t, "../scenarios/replica-nearest-latencies.yaml")
	res, err := Run(sc, sc.Seed, RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if v := (check.ReplicaReplay{}).Check(res); len(v) != 0 {
		t.Fatalf("untouched run: %v", v)
	}
	tampered := false
	for i := range res.Candidates {
		if st := &res.Candidates[i].Step; len(st.Effects) > 0 {
			st.Effects = st.Effects[1:]
			tampered = true
			break
		}
	}
	if !tampered {
		t.Fatal("no replica engine step with effects")
	}
	if v := (check.ReplicaReplay{}).Check(res); len(v) == 0 {
		t.Fatal("a replica engine step missing an effect replayed cleanly")
	}
	res, _ = Run(sc, sc.Seed, RunOptions{})
	for i := range res.Router {
		if st := &res.Router[i]; len(st.Effects) > 0 {
			st.Effects = append(st.Effects, st.Effects[0])
			break
		}
	}
	if v := (check.ReplicaReplay{}).Check(res); len(v) == 0 {
		t.Fatal("a router step with an extra effect replayed cleanly")
	}
}

// TestReplicaHedgesRaceASlowPrimary: reads to a slow primary get hedges to the near replica,
// some of which win, within the budget; the commands sent twice are exactly reads.
func TestReplicaHedgesRaceASlowPrimary(t *testing.T) {
	sc := mustLoad(t, "../scenarios/replica-hedge-slow-primary.yaml")
	res, err := Run(sc, sc.Seed, RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if v := check.Judge(res); !v.Pass() {
		t.Fatalf("violations %v, missing %v", v.Unexpected, v.Missing)
	}
	watched, hedges, won := 0, 0, 0
	for i := range res.Router {
		for _, e := range res.Router[i].Effects {
			switch {
			case e.Kind == fsm.RouteRead && e.Watched:
				watched++
			case e.Kind == fsm.SendHedge:
				hedges++
			case e.Kind == fsm.SettleRead && e.OK && e.Target != 0:
				won++
			}
		}
	}
	count := map[uint64]int{}
	twice := 0
	for _, s := range res.Sends {
		if count[s.CmdID]++; count[s.CmdID] == 2 {
			twice++
		}
	}
	t.Logf("watched %d, hedges %d, settled on the replica %d, sent twice %d", watched, hedges, won, twice)
	if hedges == 0 || won == 0 || twice != hedges {
		t.Fatalf("watched %d, hedges %d, settled on the replica %d, sent twice %d: want hedges, some winning, each sent once more",
			watched, hedges, won, twice)
	}
	if hedges*100 > watched*20+100 {
		t.Fatalf("%d hedges for %d watched reads: over 20%%", hedges, watched)
	}
}

// readsOn counts the workload's reads sent to node in [from, to).
func readsOn(res *record.Result, node string, from, to time.Duration) int {
	nodes := map[fsm.ConnID]string{}
	for _, d := range res.Dials {
		nodes[d.Conn] = d.Endpoint
	}
	ops := map[uint64]*record.Op{}
	for i := range res.Ops {
		ops[res.Ops[i].ID] = &res.Ops[i]
	}
	n := 0
	for _, s := range res.Sends {
		if op := ops[s.CmdID]; op != nil && (op.Name == "GET" || op.Name == "MGET") && nodes[s.Conn] == node+":6379" &&
			s.At >= from && s.At < to {
			n++
		}
	}
	return n
}

// runReplicaScenario runs a scenario of scenarios/ and fails the test unless it passes.
func runReplicaScenario(t *testing.T, name string) *record.Result {
	t.Helper()
	sc := mustLoad(t, "../scenarios/"+name+".yaml")
	res, err := Run(sc, sc.Seed, RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if v := check.Judge(res); !v.Pass() {
		t.Fatalf("violations %v, missing %v", v.Unexpected, v.Missing)
	}
	return res
}

// TestReplicaKill: reads leave the killed replica (at most what was on its way when it died)
// and come back after it restarts; the other replica takes them meanwhile; once the replicas
// were validated, no read went to the primary while a replica was healthy.
func TestReplicaKill(t *testing.T) {
	res := runReplicaScenario(t, "replica-kill")
	s := time.Second
	before, during, after := readsOn(res, "r2", 0, 5*s), readsOn(res, "r2", 5*s+100*time.Millisecond, 12*s), readsOn(res, "r2", 15*s, 25*s)
	other := readsOn(res, "r3", 5*s, 12*s)
	// Before the first validations answer, ReplicaPreferred's reads may go to the primary.
	primary := readsOn(res, "r1", s, 25*s)
	t.Logf("r2: %d before, %d while down, %d after; r3 while r2 was down: %d; primary: %d", before, during, after, other, primary)
	if before == 0 || during != 0 || after == 0 || other == 0 || primary != 0 {
		t.Fatalf("r2: %d before, %d while down, %d after; r3 while r2 was down: %d; primary: %d", before, during, after, other, primary)
	}
	// Reads were on their way to r2 when it died: they ended unknown (no-replay, in Judge, holds
	// that none was sent again).
	unknown := 0
	for i := range res.Ops {
		if op := &res.Ops[i]; op.Outcome == record.OpUnknown && (op.Name == "GET" || op.Name == "MGET") {
			unknown++
		}
	}
	if unknown == 0 {
		t.Fatal("no read ended unknown at the kill: the scenario lost its point")
	}
}

// masterDowns counts the reads answered MASTERDOWN in [from, to) of their return.
func masterDowns(res *record.Result, from, to time.Duration) int {
	n := 0
	for i := range res.Ops {
		op := &res.Ops[i]
		if len(op.ServerError) >= 10 && op.ServerError[:10] == "MASTERDOWN" && op.Return >= from && op.Return < to {
			n++
		}
	}
	return n
}

// TestReplicaLinkDown: a replica without serve-stale answers MASTERDOWN only until the router
// revalidates it (one refresh interval, plus a validation's round trip), and gets no reads
// until its link is back; the stale replica keeps serving.
func TestReplicaLinkDown(t *testing.T) {
	res := runReplicaScenario(t, "replica-link-down")
	s := time.Second
	ms := time.Millisecond
	early, late := masterDowns(res, 5*s, 5*s+600*ms), masterDowns(res, 5*s+600*ms, 20*s)
	r2, r3 := readsOn(res, "r2", 5*s+600*ms, 10*s), readsOn(res, "r3", 5*s+600*ms, 10*s)
	back := readsOn(res, "r2", 11*s, 20*s)
	t.Logf("MASTERDOWN %d early, %d late; while down r2 %d, r3 %d reads; r2 after %d", early, late, r2, r3, back)
	if early == 0 || late != 0 || r2 != 0 || r3 == 0 || back == 0 {
		t.Fatalf("MASTERDOWN %d early, %d late; while down r2 %d, r3 %d reads; r2 after %d", early, late, r2, r3, back)
	}
	// The stale reads happened, and only the staleness rule explains them: judged as if they
	// were linearizable reads, the history is not.
	stale := check.StaleReplicaReads(res)
	if len(stale) == 0 {
		t.Fatal("no read was served from a stale copy")
	}
	strict := *res
	strict.Scenario = res.Scenario.Clone()
	strict.Scenario.ReplicaEvents = nil
	if v := (check.Linearizable{}).Check(&strict); len(v) == 0 {
		t.Fatalf("%d stale reads, yet the history is linearizable without the staleness rule: they read nothing stale", len(stale))
	}
}

// TestReplicaPromoted: after r2's promotion the writes to the configured primary answer
// READONLY and run nowhere; the router drops r2 from the replicas within a refresh interval
// (ROLE answers master) and the reads go to r3.
func TestReplicaPromoted(t *testing.T) {
	res := runReplicaScenario(t, "replica-promoted")
	s, ms := time.Second, time.Millisecond
	readOnly := 0
	for i := range res.Ops {
		op := &res.Ops[i]
		if len(op.ServerError) >= 8 && op.ServerError[:8] == "READONLY" {
			readOnly++
			if op.Call < 6*s {
				t.Fatalf("op %d answered READONLY before the promotion", op.ID)
			}
		}
	}
	r2Before, r2After := readsOn(res, "r2", s, 6*s), readsOn(res, "r2", 6*s+700*ms, 15*s)
	r3After := readsOn(res, "r3", 6*s+700*ms, 15*s)
	t.Logf("READONLY writes %d; reads on r2 before %d and after %d, on r3 after %d", readOnly, r2Before, r2After, r3After)
	if readOnly == 0 || r2Before == 0 || r2After != 0 || r3After == 0 {
		t.Fatalf("READONLY writes %d; reads on r2 before %d and after %d, on r3 after %d", readOnly, r2Before, r2After, r3After)
	}
}

// TestReplicaZones: AzAffinity reads the same-zone replica; while it is down the other
// replicas, both the other zone's and the one of unknown zone, take the reads, the primary none; it takes them back
// after its restart.
func TestReplicaZones(t *testing.T) {
	res := runReplicaScenario(t, "replica-zones")
	s := time.Second
	r3, others := readsOn(res, "r3", s, 6*s), readsOn(res, "r2", s, 6*s)+readsOn(res, "r4", s, 6*s)
	r2Down, r4Down := readsOn(res, "r2", 6*s+500*time.Millisecond, 10*s), readsOn(res, "r4", 6*s+500*time.Millisecond, 10*s)
	down := r2Down + r4Down
	back := readsOn(res, "r3", 12*s, 18*s)
	primary := readsOn(res, "r1", s, 18*s)
	t.Logf("r3 %d and others %d before; others %d while r3 was down; r3 %d after; primary %d", r3, others, down, back, primary)
	if r3 == 0 || others != 0 || r2Down == 0 || r4Down == 0 || back == 0 || primary != 0 {
		t.Fatalf("r3 %d and others %d before; others %d while r3 was down; r3 %d after; primary %d", r3, others, down, back, primary)
	}
}

// TestReplicaScenariosDeterministic: each replica scenario's seed gives the same trace twice,
// every candidate's engine and the router included (their steps are trace lines).
func TestReplicaScenariosDeterministic(t *testing.T) {
	paths, err := filepath.Glob("../scenarios/replica-*.yaml")
	if err != nil || len(paths) < 6 {
		t.Fatalf("replica scenarios: %v %v", paths, err)
	}
	for _, p := range paths {
		sc := mustLoad(t, p)
		a, err := Run(sc, sc.Seed, RunOptions{KeepTrace: true})
		if err != nil {
			t.Fatal(err)
		}
		b, err := Run(sc, sc.Seed, RunOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if a.TraceHash != b.TraceHash {
			t.Fatalf("%s: trace hashes %s and %s", p, a.TraceHash, b.TraceHash)
		}
		candidates, router := 0, 0
		for _, line := range a.Trace {
			switch {
			case strings.HasPrefix(line, "c1 ") || strings.Contains(line, " c1 "):
				candidates++
			case strings.Contains(line, "router "):
				router++
			}
		}
		if candidates == 0 || router == 0 {
			t.Fatalf("%s: %d trace lines of replica 1's engine, %d of the router", p, candidates, router)
		}
	}
}
