package sim

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/respire-go/respire/sim/check"
)

// TestSegmentedPubSubRuns: a run with a pub/sub workload hands its callers' records over in
// segments and its journal in windows (the pub/sub checkers read the pub/sub records, which
// are not segmented, and the steps of their machines, which they keep). Every scenario with
// pub/sub, the planted bugs' positive controls among them, is cut at every quiescent moment,
// hands its journal over every 10 steps, and keeps the verdict and the trace of its whole run;
// before, no such run was streamed.
func TestSegmentedPubSubRuns(t *testing.T) {
	paths, err := filepath.Glob("testdata/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	shipped, err := filepath.Glob("../scenarios/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cut, streamed, plants := 0, 0, 0
	for _, path := range append(paths, shipped...) {
		sc := mustLoad(t, path)
		if sc.Workload.PubSub == nil {
			continue
		}
		sc = shortened(t, path, 60)
		st := check.NewStream()
		res, err2 := Run(sc, sc.Seed, RunOptions{Sink: st, SegmentOps: 1, JournalSteps: 10})
		if res == nil {
			continue // no longer valid when cut to a minute
		}
		if res.Segments == 0 && res.StepBase == 0 {
			continue // not streamed
		}
		streamed++
		if res.Segments > 0 {
			cut++
		}
		whole, err := Run(sc, sc.Seed, RunOptions{})
		if (err == nil) != (err2 == nil) {
			t.Fatalf("%s: run errors differ: %v and %v", path, err, err2)
		}
		if res.TraceHash != whole.TraceHash {
			t.Fatalf("%s: the trace changed when the records were segmented", path)
		}
		if err != nil {
			continue
		}
		want, got := check.Judge(whole), st.Judge(res)
		if want.Pass() != got.Pass() || !slices.Equal(failedCheckers(want), failedCheckers(got)) || want.Ops != got.Ops {
			t.Fatalf("%s (%d segments): whole run pass=%v failed=%v ops=%d; segmented pass=%v failed=%v ops=%d",
				path, res.Segments, want.Pass(), failedCheckers(want), want.Ops, got.Pass(), failedCheckers(got), got.Ops)
		}
		if len(sc.Expect.Fail) > 0 {
			plants++
		}
	}
	t.Logf("%d pub/sub runs streamed, %d of them positive controls, %d cut into segments", streamed, plants, cut)
	if streamed < 15 || plants < 4 || cut < 3 {
		t.Fatalf("only %d pub/sub runs were streamed (%d positive controls, %d cut): the comparison says little", streamed, plants, cut)
	}
}
