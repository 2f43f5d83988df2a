package sim

import (
	"strings"
	"testing"
	"time"

	"github.com/respire-go/respire/sim/check"
	"github.com/respire-go/respire/sim/record"
)

// TestMaintDedicatedRelaxed: in maint-dedicated-migrating the dedicated connections receive
// the notices on their own, and their round trips follow the relaxation: a round trip caught by
// the pause in the window outlives its 500 ms and completes; those in flight when MIGRATED
// arrives at 7 s end then, by their timeout, before their replies; after the window the last
// pause times them out at 500 ms. Before the renters asked the relaxation, every round trip
// caught by the first pause timed out at 500 ms.
func TestMaintDedicatedRelaxed(t *testing.T) {
	sc := mustLoad(t, "../scenarios/maint-dedicated-migrating.yaml")
	res := run(t, sc, sc.Seed, false)
	if v := check.Judge(res); !v.Pass() {
		t.Fatalf("violations: %v", v.Unexpected)
	}
	own := sc.Client.CommandTimeout
	var relaxedOK, shrunk, after int
	for i := range res.Dedicated {
		op := &res.Dedicated[i]
		if len(op.Cmds) == 0 {
			continue
		}
		sent := op.Cmds[len(op.Cmds)-1].Sent
		timedOut := strings.HasPrefix(op.Err, "sim: command timed out")
		switch {
		case sent >= 2*time.Second && sent < 4*time.Second && op.Return-sent > own:
			if op.Outcome != record.DedicatedOK && op.Outcome != record.DedicatedConflict {
				t.Fatalf("op %d sent at %v in the window ended %s (%s) after %v", op.ID, sent, op.Outcome, op.Err, op.Return-sent)
			}
			relaxedOK++
		case timedOut && op.Return > 6900*time.Millisecond && op.Return < 7100*time.Millisecond:
			if op.Return-sent <= own {
				t.Fatalf("op %d ended at MIGRATED only %v after its round trip began", op.ID, op.Return-sent)
			}
			shrunk++
		case timedOut && sent >= 10*time.Second:
			if op.Return-sent != own {
				t.Fatalf("op %d timed out after %v after the window, want %v", op.ID, op.Return-sent, own)
			}
			after++
		}
	}
	if relaxedOK == 0 || shrunk == 0 || after == 0 {
		t.Fatalf("relaxed through the pause %d, ended by MIGRATED %d, timed out after the window %d: want each", relaxedOK, shrunk, after)
	}
}

// TestMaintDedicatedPlantCaught: with maint-ignore-relaxation the renters time out at their own
// budget inside the window, and maint-relaxed-deadlines catches it on the dedicated round trips
// (the control has no multiplexed callers); without the plant it passes.
func TestMaintDedicatedPlantCaught(t *testing.T) {
	sc := mustLoad(t, "testdata/plant_maint_ignore_relaxation_dedicated.yaml")
	if sc.Workload.Callers != 0 {
		t.Fatal("the control must judge dedicated round trips only")
	}
	if n := countViolations(run(t, sc, sc.Seed, false), check.CheckMaintRelaxed); n == 0 {
		t.Fatal("the plant went unnoticed by maint-relaxed-deadlines")
	}
	if n := countViolations(run(t, withoutPlants(sc), sc.Seed, false), check.CheckMaintRelaxed); n != 0 {
		t.Fatalf("maint-relaxed-deadlines fails without the plant: %d violations", n)
	}
}
