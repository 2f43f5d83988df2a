package sim

import (
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
