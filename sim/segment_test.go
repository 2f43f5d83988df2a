package sim

import (
	"errors"
	"path/filepath"
	"slices"
	"testing"

	"github.com/respire-go/respire/sim/check"
	"github.com/respire-go/respire/sim/record"
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
// the verdict of judging its whole records, for every scenario of testdata with two seeds (the
// planted bugs' positive controls among them) and of scenarios/ with one (cut to 2 minutes), and
// the trace is the same. Enough of the runs are really cut for this to mean something.
func TestSegmentedVerdictsMatch(t *testing.T) {
	paths := testdataScenarios(t)
	shipped, err := filepath.Glob("../scenarios/*.yaml")
	if err != nil || len(shipped) == 0 {
		t.Fatalf("no shipped scenarios: %v", err)
	}
	testdata := len(paths)
	paths = append(paths, shipped...)
	cut := 0
	for i, path := range paths {
		sc := shortened(t, path, 120)
		seeds := []uint64{sc.Seed, sc.Seed + 1}
		if i >= testdata {
			seeds = seeds[:1] // the shipped scenarios are longer: one seed each
		}
		t.Run(filepath.Base(path), func(t *testing.T) {
			for _, seed := range seeds {
				st := check.NewStream()
				res, err2 := Run(sc, seed, RunOptions{Sink: st, SegmentOps: 64})
				if res == nil {
					return // cut to 2 minutes, the scenario is no longer valid (its liveness time was later)
				}
				if res.Segments == 0 {
					continue // not cut (too short, or not accepted): it was judged as a whole run
				}
				cut++
				whole, err := Run(sc, seed, RunOptions{})
				if (err == nil) != (err2 == nil) {
					t.Fatalf("seed %d: run errors differ: %v and %v", seed, err, err2)
				}
				if res.TraceHash != whole.TraceHash {
					t.Fatalf("seed %d: the trace changed when the records were segmented", seed)
				}
				if err != nil {
					continue
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
	if cut < 30 {
		t.Fatalf("only %d runs were cut into segments: the comparison says little", cut)
	}
}

// TestSegmentOpsBound: a segment size out of its bound is refused before the run starts.
func TestSegmentOpsBound(t *testing.T) {
	sc := mustLoad(t, "testdata/workload.yaml")
	for _, n := range []int{-1, MaxSegmentOps + 1} {
		if _, err := Run(sc, 1, RunOptions{Sink: check.NewStream(), SegmentOps: n}); !errors.Is(err, ErrSegmentOps) {
			t.Fatalf("SegmentOps %d: want ErrSegmentOps, got %v", n, err)
		}
	}
}

// segmentLog is a sink that passes segments on to a stream and notes their sizes.
type segmentLog struct {
	*check.Stream
	sizes []int
	ids   []uint64 // the first op id of each segment
	open  int      // operations still pending in a segment (never, at a quiescent cut)
}

func (l *segmentLog) Segment(seg *record.Result) {
	l.sizes = append(l.sizes, len(seg.Ops))
	if len(seg.Ops) > 0 {
		l.ids = append(l.ids, seg.Ops[0].ID)
	}
	for i := range seg.Ops {
		if seg.Ops[i].Outcome == record.OpPending {
			l.open++
		}
	}
	l.Stream.Segment(seg)
}

// TestSegmentsBoundTheRecords: with a sink, a run keeps no more than a segment of operation
// records: each segment holds about SegmentOps operations, numbered on from the last, none of
// them pending, and the Result keeps only those after the last cut.
func TestSegmentsBoundTheRecords(t *testing.T) {
	sc := mustLoad(t, "testdata/workload.yaml")
	l := &segmentLog{Stream: check.NewStream()}
	res, err := Run(sc, sc.Seed, RunOptions{Sink: l, SegmentOps: 500})
	if err != nil {
		t.Fatal(err)
	}
	if len(l.sizes) < 10 {
		t.Fatalf("want at least 10 segments of a 12,000-operation run, got %d", len(l.sizes))
	}
	next := uint64(1)
	for i, n := range l.sizes {
		if n < 500 || n > 600 {
			t.Fatalf("segment %d holds %d operations, want 500 and what comes until the next quiet moment", i, n)
		}
		if l.ids[i] != next {
			t.Fatalf("segment %d starts at op %d, want %d", i, l.ids[i], next)
		}
		next += uint64(n)
	}
	if l.open != 0 {
		t.Fatalf("%d operations were pending at a cut", l.open)
	}
	if res.Segments != len(l.sizes) || res.OpBase != int(next-1) || len(res.Ops) > 600 || (len(res.Ops) > 0 && res.Ops[0].ID != next) {
		t.Fatalf("the Result keeps %d operations from id %d (OpBase %d, %d segments)", len(res.Ops), res.Ops[0].ID, res.OpBase, res.Segments)
	}
	if v := l.Judge(res); !v.Pass() || v.Ops != res.OpBase+len(res.Ops) {
		t.Fatalf("verdict: pass=%v ops=%d %v", v.Pass(), v.Ops, v.Unexpected)
	}
}
