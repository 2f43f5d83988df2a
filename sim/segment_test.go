package sim

import (
	"errors"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/sim/check"
	"github.com/respire-go/respire/sim/record"
	"github.com/respire-go/respire/sim/scenario"
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
	cut, journaled, sentinels := 0, 0, 0
	for i, path := range paths {
		sc := shortened(t, path, 120)
		seeds := []uint64{sc.Seed, sc.Seed + 1}
		if i >= testdata {
			seeds = seeds[:1] // the shipped scenarios are longer: one seed each
		}
		t.Run(filepath.Base(path), func(t *testing.T) {
			for _, seed := range seeds {
				st := check.NewStream()
				res, err2 := Run(sc, seed, RunOptions{Sink: st, SegmentOps: 64, JournalSteps: 50})
				if res == nil {
					return // cut to 2 minutes, the scenario is no longer valid (its liveness time was later)
				}
				if res.StepBase > 0 {
					journaled++
				}
				if res.Segments == 0 && res.StepBase == 0 {
					continue // not cut (too short, or not accepted): it was judged as a whole run
				}
				cut++
				if sc.IsSentinel() && res.Segments > 0 {
					sentinels++
				}
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
	t.Logf("%d runs cut into segments, %d of them handing their journal over, %d of them Sentinel runs", cut, journaled, sentinels)
	if cut < 30 || journaled < 30 {
		t.Fatalf("only %d runs were cut into segments and %d handed their journal over: the comparison says little", cut, journaled)
	}
	if sentinels < 5 {
		t.Fatalf("only %d Sentinel runs were cut into segments", sentinels)
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

// journalLog is a sink that passes the journal on to a stream and notes the batches.
type journalLog struct {
	*check.Stream
	batches []int
	next    int // the step index the next batch must start at
	gaps    int
}

func (l *journalLog) Steps(base int, steps []record.Step, clients []record.ClientGen) {
	if base != l.next {
		l.gaps++
	}
	l.next = base + len(steps)
	l.batches = append(l.batches, len(steps))
	l.Stream.Steps(base, steps, clients)
}

// TestJournalWindowBoundsTheSteps: with a sink that takes the journal, a run keeps fewer than
// JournalSteps engine steps: they are handed over in order, without gaps, in batches of that
// size, and the verdict is the whole run's. KeepJournal keeps them all (the control), and a
// window out of its bound is refused.
func TestJournalWindowBoundsTheSteps(t *testing.T) {
	sc := mustLoad(t, "../scenarios/client-close-recreate.yaml")
	l := &journalLog{Stream: check.NewStream()}
	res, err := Run(sc, sc.Seed, RunOptions{Sink: l, JournalSteps: 10})
	if err != nil {
		t.Fatal(err)
	}
	whole := run(t, sc, sc.Seed, false)
	if len(l.batches) < 5 || l.gaps != 0 || len(res.Steps) >= 10 || res.StepBase != l.next ||
		res.StepBase+len(res.Steps) != len(whole.Steps) {
		t.Fatalf("batches %v (gaps %d), %d steps kept from %d, whole run %d", l.batches, l.gaps, len(res.Steps), res.StepBase, len(whole.Steps))
	}
	for i, n := range l.batches {
		if n != 10 {
			t.Fatalf("batch %d holds %d steps, want 10", i, n)
		}
	}
	if v := l.Judge(res); !v.Pass() || !slices.Equal(v.Checked, check.Judge(whole).Checked) {
		t.Fatalf("verdict: pass=%v checked %v, %v", v.Pass(), v.Checked, v.Unexpected)
	}
	kept := check.NewStream()
	kept.KeepJournal()
	res, err = Run(sc, sc.Seed, RunOptions{Sink: kept, JournalSteps: 10})
	if err != nil || res.StepBase != 0 || len(res.Steps) != len(whole.Steps) {
		t.Fatalf("KeepJournal: %v, %d steps from %d", err, len(res.Steps), res.StepBase)
	}
	for _, n := range []int{-1, MaxSegmentOps + 1} {
		if _, err := Run(sc, 1, RunOptions{Sink: check.NewStream(), JournalSteps: n}); !errors.Is(err, ErrSegmentOps) {
			t.Fatalf("JournalSteps %d: want ErrSegmentOps, got %v", n, err)
		}
	}
}

// TestJournalStreamCatchesPlants: the checkers that read the journal catch their planted bugs
// when they take it in batches of 10 steps: the replay checker a tampered step (the control:
// the same run untampered passes), the policy checker the late-timers plant.
func TestJournalStreamCatchesPlants(t *testing.T) {
	sc := mustLoad(t, "testdata/plant_late_timers.yaml")
	st := check.NewStream()
	res, err := Run(sc, sc.Seed, RunOptions{Sink: st, JournalSteps: 10})
	if err != nil {
		t.Fatal(err)
	}
	if res.StepBase == 0 {
		t.Fatal("the journal was not handed over")
	}
	if v := st.Judge(res); !v.Pass() || !slices.Contains(failedCheckers(v), check.CheckPolicy) {
		t.Fatalf("late timers: pass=%v failed %v missing %v", v.Pass(), failedCheckers(v), v.Missing)
	}
	clean := mustLoad(t, "testdata/recovery.yaml")
	for _, tamper := range []bool{false, true} {
		tl := &tamperLog{Stream: check.NewStream(), tamper: tamper}
		res, err := Run(clean, clean.Seed, RunOptions{Sink: tl, JournalSteps: 10})
		if err != nil {
			t.Fatal(err)
		}
		v := tl.Judge(res)
		if failed := slices.Contains(failedCheckers(v), check.CheckReplay); failed != tamper || tl.tampered != tamper {
			t.Fatalf("tamper=%v: replay failed=%v (tampered %v)", tamper, failed, tl.tampered)
		}
	}
}

// tamperLog changes the attempt of the first Dial effect it is handed, when tamper is set.
type tamperLog struct {
	*check.Stream
	tamper, tampered bool
}

func (l *tamperLog) Steps(base int, steps []record.Step, clients []record.ClientGen) {
	for i := range steps {
		for j := range steps[i].Effects {
			if f := &steps[i].Effects[j]; l.tamper && !l.tampered && f.Kind == fsm.Dial {
				f.Attempt += 7
				l.tampered = true
			}
		}
	}
	l.Stream.Steps(base, steps, clients)
}

// TestExpectDuringInSegments: expect.during is judged from segments (the run is cut), with the
// whole run's findings: passing as shipped, and with the same violations when its bounds are
// made to fail (the control).
func TestExpectDuringInSegments(t *testing.T) {
	sc := mustLoad(t, "../scenarios/dial-rate-refusing-peer.yaml")
	bad := sc.Clone()
	huge := 1_000_000
	bad.Expect.During[0].Outcomes.Failed.Min = &huge
	bad.Expect.During[1].Outcomes.OK.Min = &huge
	for _, s := range []*scenario.Scenario{sc, bad} {
		st := check.NewStream()
		res, err := Run(s, s.Seed, RunOptions{Sink: st, SegmentOps: 2000})
		if err != nil {
			t.Fatal(err)
		}
		if res.Segments < 10 {
			t.Fatalf("%d segments: the run was not judged in segments", res.Segments)
		}
		got := st.Judge(res)
		want := check.Judge(run(t, s, s.Seed, false))
		var g, w []string
		for _, v := range got.Violations {
			g = append(g, v.Message)
		}
		for _, v := range want.Violations {
			w = append(w, v.Message)
		}
		if !slices.Equal(g, w) || !slices.Equal(got.Checked, want.Checked) {
			t.Fatalf("segmented %v, whole %v", g, w)
		}
		if (s == bad) != (len(g) == 2) {
			t.Fatalf("want the two during violations exactly for the bad bounds, got %v", g)
		}
	}
}

// drainTamper notes the connections the journal drains and, when tamper is set, moves one
// write of a later segment onto a drained connection.
type drainTamper struct {
	*check.Stream
	tamper   bool
	drained  map[fsm.ConnID]time.Duration
	tampered bool
	segments int
}

func (d *drainTamper) Steps(base int, steps []record.Step, clients []record.ClientGen) {
	for i := range steps {
		for _, f := range steps[i].Effects {
			if f.Kind == fsm.Close && f.Drain {
				d.drained[f.Conn] = steps[i].Event.At
			}
		}
	}
	d.Stream.Steps(base, steps, clients)
}

func (d *drainTamper) Segment(seg *record.Result) {
	d.segments++
	for i := range seg.Sends {
		for c, at := range d.drained {
			if d.tamper && !d.tampered && seg.Sends[i].At > at {
				seg.Sends[i].Conn = c
				d.tampered = true
			}
		}
	}
	d.Stream.Segment(seg)
}

// TestLifetimeInSegments: a lifetime scenario is judged in segments, its writes against the
// drains of the journal handed over before each segment: it passes as shipped, and a write moved
// onto a drained connection is caught (the control).
func TestLifetimeInSegments(t *testing.T) {
	sc := mustLoad(t, "../scenarios/lifetime-recycling-under-workload.yaml")
	for _, tamper := range []bool{false, true} {
		d := &drainTamper{Stream: check.NewStream(), tamper: tamper, drained: map[fsm.ConnID]time.Duration{}}
		res, err := Run(sc, sc.Seed, RunOptions{Sink: d, SegmentOps: 200})
		if err != nil {
			t.Fatal(err)
		}
		if d.segments < 5 || res.StepBase == 0 || len(d.drained) == 0 {
			t.Fatalf("%d segments, %d steps handed over, %d drains: the run was not judged in segments", d.segments, res.StepBase, len(d.drained))
		}
		v := d.Judge(res)
		caught := slices.Contains(failedCheckers(v), check.CheckLifetime)
		if caught != tamper || d.tampered != tamper {
			t.Fatalf("tamper=%v: lifetime failed=%v (tampered %v): %v", tamper, caught, d.tampered, v.Violations)
		}
	}
}
