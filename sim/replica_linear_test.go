package sim

import (
	"testing"
	"time"

	"github.com/respire-go/respire/sim/check"
)

// TestReplicaLostHedgesCheckEnds: rapid's shrunk case of a replica run whose linearizability
// check did not end (testdata/rapid/replica_lost_hedges.yaml): r2's link goes down at 588ms for the
// rest of the run, and the hedged reads that reach it do so after the primary already
// answered them. Those hedges are no stale reads (their callers saw the primary's reply), and
// the reads r2 alone served are explained by its copy's state at 588ms, so the check ends at
// once and passes. Before, each such read was open from 588ms until its return and the check
// gave up after LinearizabilityTimeout, reporting a violation. (The file is in a folder of its
// own: the tests over testdata/*.yaml model a single node, without hedges or stale copies.)
func TestReplicaLostHedgesCheckEnds(t *testing.T) {
	sc := mustLoad(t, "testdata/rapid/replica_lost_hedges.yaml")
	res, err := Run(sc, sc.Seed, RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The case happened: reads that r2 executed on its stale copy after their callers returned.
	ops := map[uint64]int{}
	for i := range res.Ops {
		ops[res.Ops[i].ID] = i
	}
	lost := 0
	for _, a := range res.Applies {
		if i, ok := ops[a.CmdID]; ok && a.Node == "r2" && a.At >= 588*time.Millisecond && a.At > res.Ops[i].Return &&
			(res.Ops[i].Name == "GET" || res.Ops[i].Name == "MGET") {
			lost++
		}
	}
	stale := check.StaleReplicaReads(res)
	t.Logf("%d hedges ran on r2's stale copy after their read returned; %d reads executed on a stale copy", lost, len(stale))
	if lost < 100 {
		t.Fatalf("only %d hedges ran on the stale replica after their read returned: the case did not happen", lost)
	}
	if v := check.Judge(res); !v.Pass() {
		t.Fatalf("violations: %v", v.Unexpected)
	}
}
