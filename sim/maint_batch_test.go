package sim

import (
	"testing"
	"time"

	"github.com/respire-go/respire/sim/check"
	"github.com/respire-go/respire/sim/record"
)

// TestMaintBatchRelaxed: in maint-batch-migrating the batches follow their connection's
// relaxation as one command each: pipelines and atomic batches caught by the pause in the
// window outlive their 500 ms budget and complete; those in flight when MIGRATED arrives at 7 s
// end then, by their budget, before their replies; after the window the last pause times them
// out at 500 ms. Without the relaxation every batch caught by the first pause timed out at
// 500 ms (the plant control below).
func TestMaintBatchRelaxed(t *testing.T) {
	sc := mustLoad(t, "../scenarios/maint-batch-migrating.yaml")
	res := run(t, sc, sc.Seed, false)
	if v := check.Judge(res); !v.Pass() {
		t.Fatalf("violations: %v", v.Unexpected)
	}
	own := sc.Client.CommandTimeout
	relaxed := map[bool]int{}
	var shrunk, after int
	for i := range res.Batches {
		b := &res.Batches[i]
		took := b.Return - b.Call
		switch {
		case b.Call >= 2*time.Second && b.Call < 4*time.Second && took > own:
			if b.Outcome != record.BatchOK {
				t.Fatalf("batch %d called at %v in the window ended %s after %v", b.ID, b.Call, b.Outcome, took)
			}
			relaxed[b.Atomic]++
		case b.Outcome == record.BatchTimeout && b.Return > 6900*time.Millisecond && b.Return < 7100*time.Millisecond:
			if took <= own {
				t.Fatalf("batch %d ended at MIGRATED only %v after its call", b.ID, took)
			}
			shrunk++
		case b.Outcome == record.BatchTimeout && b.Call >= 10*time.Second:
			if took != own {
				t.Fatalf("batch %d timed out after %v after the window, want %v", b.ID, took, own)
			}
			after++
		}
	}
	if relaxed[false] == 0 || relaxed[true] == 0 || shrunk == 0 || after == 0 {
		t.Fatalf("relaxed through the pause: %d pipelines, %d atomic; ended by MIGRATED %d; timed out after the window %d: want each",
			relaxed[false], relaxed[true], shrunk, after)
	}
}

// TestMaintBatchPlantCaught: with maint-ignore-relaxation the batchers time out at their own
// budget inside the window, and maint-relaxed-deadlines catches it on the batches (the control
// has no multiplexed callers); without the plant it passes.
func TestMaintBatchPlantCaught(t *testing.T) {
	sc := mustLoad(t, "testdata/plant_maint_ignore_relaxation_batch.yaml")
	if sc.Workload.Callers != 0 || sc.Workload.Batches == nil {
		t.Fatal("the control must judge batches only")
	}
	if n := countViolations(run(t, sc, sc.Seed, false), check.CheckMaintRelaxed); n == 0 {
		t.Fatal("the plant went unnoticed by maint-relaxed-deadlines")
	}
	if n := countViolations(run(t, withoutPlants(sc), sc.Seed, false), check.CheckMaintRelaxed); n != 0 {
		t.Fatalf("maint-relaxed-deadlines fails without the plant: %d violations", n)
	}
}
