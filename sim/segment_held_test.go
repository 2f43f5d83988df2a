package sim

import (
	"slices"
	"testing"
	"time"

	"github.com/respire-go/respire/sim/check"
	"github.com/respire-go/respire/sim/record"
)

// TestSegmentsCutPastHeldCommands: cluster-incident-19h black-holes a1 and b1 for good at 1 h,
// so commands written to them just before their callers time out are never applied nor
// answered, and the engine holds them until the end. Such a command no longer keeps its
// segment open: the run is still cut after them, with the verdict and trace of the whole run.
// Before, the first such command kept every later record until the end (the last cut came
// before it, and the run's 34,000 operations were judged at the end).
func TestSegmentsCutPastHeldCommands(t *testing.T) {
	sc := mustLoad(t, "../scenarios/cluster-incident-19h.yaml")
	whole, err := Run(sc, sc.Seed, RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The fault: an operation timed out with its command written and never applied.
	applied := map[uint64]bool{}
	for _, a := range whole.Applies {
		applied[a.CmdID] = true
	}
	held := time.Duration(-1)
	for _, op := range whole.Ops {
		if op.Outcome == record.OpUnknown && !applied[op.ID] && op.Call > time.Hour {
			held = op.Return
			break
		}
	}
	if held < 0 {
		t.Fatal("no operation timed out with its command held by the black-hole: the test tests nothing")
	}
	want := check.Judge(whole)
	if !want.Pass() {
		t.Fatalf("the whole run fails: %v", want.Violations)
	}
	for _, ops := range []int{64, DefaultSegmentOps} {
		st := check.NewStream()
		res, err := Run(sc, sc.Seed, RunOptions{Sink: st, SegmentOps: ops, JournalSteps: 500})
		if err != nil {
			t.Fatal(err)
		}
		if res.Start <= held {
			t.Fatalf("segments of %d ops: the last cut is at %v, before the held command's caller gave up at %v (%d segments)",
				ops, res.Start, held, res.Segments)
		}
		if res.TraceHash != whole.TraceHash {
			t.Fatalf("segments of %d ops: the trace changed", ops)
		}
		got := st.Judge(res)
		if !got.Pass() || got.Ops != want.Ops || !slices.Equal(got.Checked, want.Checked) {
			t.Fatalf("segments of %d ops: verdict pass=%v ops=%d, whole run pass=%v ops=%d: %v",
				ops, got.Pass(), got.Ops, want.Pass(), want.Ops, got.Violations)
		}
		t.Logf("segments of %d ops: %d segments, last cut at %v, records left at the end: %d ops", ops, res.Segments, res.Start, len(res.Ops))
	}
}
