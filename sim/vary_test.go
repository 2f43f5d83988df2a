package sim

import (
	"testing"

	"github.com/respire-go/respire/fsm"
)

// TestVaryReachesTheRun: the shipped vary-everything scenario's draws change the run itself:
// across seeds the runs dial different numbers of slots, and each run's resolved scenario holds
// the values it ran with.
func TestVaryReachesTheRun(t *testing.T) {
	sc := mustLoad(t, "../scenarios/vary-everything.yaml")
	slotCounts := map[int]bool{}
	for seed := uint64(1); seed <= 6; seed++ {
		res := run(t, sc, seed, false)
		slots := map[int]bool{}
		for _, f := range effects(res, fsm.Dial, 0, res.End+1) {
			slots[f.Slot] = true
		}
		if len(slots) != res.Scenario.Client.Connections {
			t.Fatalf("seed %d: %d slots dialled, the resolved scenario has %d connections", seed, len(slots), res.Scenario.Client.Connections)
		}
		if res.Scenario.Vary != nil {
			t.Fatal("the resolved scenario kept vary")
		}
		slotCounts[len(slots)] = true
	}
	if len(slotCounts) < 3 {
		t.Fatalf("six seeds ran with only %d distinct slot counts", len(slotCounts))
	}
}
