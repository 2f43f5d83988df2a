package sim

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/respire-go/respire/sim/check"
)

// failedCheckers returns the names of the checkers with violations, sorted and without repeats.
func failedCheckers(v *check.Verdict) []string {
	var out []string
	for _, x := range v.Violations {
		out = append(out, x.Checker)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// TestSegmentedVerdictsMatch: judging a run from segments of 64 operations (check.Stream) gives
// the verdict of judging its whole records, for every scenario of testdata (the planted bugs'
// positive controls among them) and of scenarios/ (cut to 2 minutes), and the trace is the
// same. Enough of the runs are really cut for this to mean something.
func TestSegmentedVerdictsMatch(t *testing.T) {
	paths := testdataScenarios(t)
	shipped, err := filepath.Glob("../scenarios/*.yaml")
	if err != nil || len(shipped) == 0 {
		t.Fatalf("no shipped scenarios: %v", err)
	}
	paths = append(paths, shipped...)
	cut := 0
	for _, path := range paths {
		sc := shortened(t, path, 120)
		t.Run(filepath.Base(path), func(t *testing.T) {
			for _, seed := range []uint64{sc.Seed, sc.Seed + 1} {
				whole, err := Run(sc, seed, RunOptions{})
				if err != nil && whole == nil {
					return // cut to 2 minutes, the scenario is no longer valid (its liveness time was later)
				}
				st := check.NewStream()
				res, err2 := Run(sc, seed, RunOptions{Sink: st, SegmentOps: 64})
				if (err == nil) != (err2 == nil) {
					t.Fatalf("seed %d: run errors differ: %v and %v", seed, err, err2)
				}
				if res.TraceHash != whole.TraceHash {
					t.Fatalf("seed %d: the trace changed when the records were segmented", seed)
				}
				if err != nil {
					continue
				}
				if res.Segments > 0 {
					cut++
				}
				want, got := check.Judge(whole), st.Judge(res)
				if want.Pass() != got.Pass() || !slices.Equal(failedCheckers(want), failedCheckers(got)) ||
					!slices.Equal(want.Missing, got.Missing) || want.Ops != got.Ops || !slices.Equal(want.Checked, got.Checked) {
					t.Fatalf("seed %d (%d segments): whole run: pass=%v failed=%v missing=%v ops=%d; segmented: pass=%v failed=%v missing=%v ops=%d\n%v",
						seed, res.Segments, want.Pass(), failedCheckers(want), want.Missing, want.Ops,
						got.Pass(), failedCheckers(got), got.Missing, got.Ops, got.Violations)
				}
			}
		})
	}
	t.Logf("%d runs cut into segments", cut)
	if cut < 40 {
		t.Fatalf("only %d runs were cut into segments: the comparison says little", cut)
	}
}
