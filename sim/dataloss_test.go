package sim

import (
	"testing"

	"github.com/respire-go/respire/sim/check"
	"github.com/respire-go/respire/sim/record"
)

// TestRestartLosesData: a kill with lose_data empties the node: the smallest value an INCR of
// each counter returns after the restart is 1, and the run is linearizable once the loss is counted. Judged as
// if the node had kept its data (the positive control), the same history is not linearizable:
// the loss really happened and the checker sees it.
func TestRestartLosesData(t *testing.T) {
	sc := mustLoad(t, "../scenarios/restart-loses-data.yaml")
	res := run(t, sc, sc.Seed, false)
	if v := check.Judge(res); !v.Pass() {
		t.Fatalf("lose_data run failed: %+v", v.Unexpected)
	}
	restart := res.Faults[0].To
	firstIncr := map[string]int64{}
	before := map[string]int64{}
	for _, op := range res.Ops {
		if op.Name != "INCR" || op.Outcome != record.OpOK || op.ServerError != "" {
			continue
		}
		if op.Call < res.Faults[0].From {
			before[op.Keys[0]] = op.Reply[0].Int
		} else if n, ok := firstIncr[op.Keys[0]]; op.Return >= restart && (!ok || op.Reply[0].Int < n) {
			firstIncr[op.Keys[0]] = op.Reply[0].Int // the smallest value returned after the restart
		}
	}
	if len(firstIncr) == 0 {
		t.Fatal("no INCR after the restart")
	}
	for k, n := range firstIncr {
		if n != 1 || before[k] < 2 {
			t.Fatalf("counter %s: %d before the kill, first INCR after the restart returned %d, want 1", k, before[k], n)
		}
	}
	kept := *res
	kept.Scenario = sc.Clone()
	kept.Scenario.Faults[0].Kill.LoseData = false
	if len(check.IllegalKeys(&kept)) == 0 {
		t.Fatal("judged as a persistent restart, the history should not be linearizable")
	}
}
