package sim

import (
	"testing"

	"github.com/respire-go/respire/sim/check"
	"github.com/respire-go/respire/sim/scenario"
)

// TestLivenessQuietDemand: the shipped quiet scenario passes with liveness counted from demand,
// fails when counted from the heal (the false failure of a quiet window), and still fails from
// demand when the node stays dead after the heal (the dead-after-heal plant, the positive
// control).
func TestLivenessQuietDemand(t *testing.T) {
	sc := mustLoad(t, "../scenarios/liveness-quiet-demand.yaml")
	judge := func(s *scenario.Scenario) *check.Verdict { return check.Judge(run(t, s, s.Seed, false)) }
	if v := judge(sc); !v.Pass() {
		t.Fatalf("from demand: %+v", v.Unexpected)
	}
	fromHeal := sc.Clone()
	fromHeal.Expect.Liveness.From = scenario.LivenessFromHeal
	if v := judge(fromHeal); v.Pass() {
		t.Fatal("from the heal, the quiet window should fail the 2s bound")
	}
	dead := sc.Clone()
	dead.Plant = []scenario.Plant{scenario.PlantDeadAfterHeal}
	v := judge(dead)
	found := false
	for _, x := range v.Unexpected {
		found = found || x.Checker == check.CheckLiveness
	}
	if !found {
		t.Fatalf("from demand, a node dead after the heal must fail liveness: %+v", v.Unexpected)
	}
}
