package check

import (
	"strings"
	"testing"
	"time"

	"github.com/respire-go/respire/sim/record"
	"github.com/respire-go/respire/sim/scenario"
)

// setOp, getOp and incrOp are ok operations of one caller on one key.
func setOp(id uint64, caller int, key, val string, call, ret time.Duration) record.Op {
	return record.Op{ID: id, Caller: caller, Name: "SET", Keys: []string{key}, Values: []string{val}, Call: call, Return: ret,
		Outcome: record.OpOK, Reply: []record.Datum{{Str: "OK"}}}
}

func getOp(id uint64, key, val string, call, ret time.Duration) record.Op {
	d := record.Datum{Str: val, Null: val == ""}
	return record.Op{ID: id, Name: "GET", Keys: []string{key}, Call: call, Return: ret, Outcome: record.OpOK, Reply: []record.Datum{d}}
}

// linearSegments checks the segments with a linearizability stream, the last as the run's end,
// and returns the violations.
func linearSegments(segs ...[]record.Op) []Violation {
	l := newLinearStream()
	var out []Violation
	for i, ops := range segs {
		r := &record.Result{Ops: ops, End: time.Hour}
		if i < len(segs)-1 {
			out = append(out, l.segment(r)...)
		} else {
			out = append(out, l.finish(r)...)
		}
	}
	return out
}

// TestLinearStreamCarriesState: a key's state crosses the cut. Reading, after the cut, a value
// the key could not hold at its end fails; reading one it could hold passes. Two writes overlap
// at the end of the first segment: either may be last, and a read after the cut picks one.
func TestLinearStreamCarriesState(t *testing.T) {
	first := []record.Op{
		setOp(1, 0, "k", "v1", ms(0), ms(1)),
		setOp(2, 0, "k", "v2", ms(2), ms(5)),
		setOp(3, 1, "k", "v3", ms(3), ms(6)),
	}
	for _, tc := range []struct {
		read string
		fail bool
	}{{"v2", false}, {"v3", false}, {"v1", true}, {"", true}} {
		got := linearSegments(first, []record.Op{getOp(4, "k", tc.read, ms(10), ms(11))})
		if (len(got) > 0) != tc.fail {
			t.Fatalf("read %q after the cut: want failure=%v, got %v", tc.read, tc.fail, got)
		}
		if tc.fail && (got[0].Checker != CheckLinearizable || !strings.Contains(got[0].Message, "op 4")) {
			t.Fatalf("read %q: the violation must name op 4: %+v", tc.read, got[0])
		}
	}
	// The whole history judged at once agrees.
	whole := append(append([]record.Op(nil), first...), getOp(4, "k", "v1", ms(10), ms(11)))
	if len(Linearizable{}.Check(&record.Result{Ops: whole, End: time.Hour})) == 0 {
		t.Fatal("the whole history with a stale read must fail too")
	}
	// A key not touched after the cut keeps its state for later segments.
	got := linearSegments(first, []record.Op{setOp(5, 0, "other", "x", ms(10), ms(11))},
		[]record.Op{getOp(6, "k", "v1", ms(20), ms(21))})
	if len(got) != 1 {
		t.Fatalf("a stale read two segments later: want one violation, got %v", got)
	}
}

// TestLinearStreamUnknownIncr: an INCR whose reply was lost but that was applied leaves the
// counter's value open at the cut; the part is carried, and the next segment's reads decide.
func TestLinearStreamUnknownIncr(t *testing.T) {
	incr := func(id uint64, reply int64, call, ret time.Duration) record.Op {
		return record.Op{ID: id, Name: "INCR", Keys: []string{"c"}, Call: call, Return: ret, Outcome: record.OpOK,
			Reply: []record.Datum{{Int: reply, IsInt: true}}}
	}
	lost := record.Op{ID: 2, Name: "INCR", Keys: []string{"c"}, Call: ms(2), Return: ms(4), Outcome: record.OpUnknown}
	l := newLinearStream()
	seg := &record.Result{Ops: []record.Op{incr(1, 1, ms(0), ms(1)), lost}, Applies: []record.Apply{{CmdID: 2, At: ms(3)}}, End: time.Hour}
	if v := l.segment(seg); len(v) != 0 {
		t.Fatalf("first segment: %v", v)
	}
	if h := l.keys["c"]; h == nil || len(h.carried) == 0 {
		t.Fatal("the part ending with an INCR of unknown reply must be carried")
	}
	ok := &record.Result{Ops: []record.Op{incr(3, 3, ms(10), ms(11))}, End: time.Hour}
	if v := l.finish(ok); len(v) != 0 {
		t.Fatalf("INCR to 3 after an applied lost INCR: %v", v)
	}
	l = newLinearStream()
	l.segment(seg)
	bad := &record.Result{Ops: []record.Op{incr(3, 2, ms(10), ms(11))}, End: time.Hour}
	if v := l.finish(bad); len(v) != 1 {
		t.Fatalf("INCR to 2 after an applied lost INCR must fail, got %v", v)
	}
}

// TestNoReplayStreamAcrossSegments: a command written or applied again in a later segment is a
// replay, which each segment checked alone would not show.
func TestNoReplayStreamAcrossSegments(t *testing.T) {
	n := &noReplayStream{}
	first := &record.Result{Sends: []record.Send{{CmdID: 7, Conn: 1}}, Applies: []record.Apply{{CmdID: 7}, {CmdID: 0}}}
	if v := n.segment(first); len(v) != 0 {
		t.Fatal(v)
	}
	again := &record.Result{Sends: []record.Send{{CmdID: 7, Conn: 2, At: ms(9)}, {CmdID: 8, Conn: 2}},
		Applies: []record.Apply{{CmdID: 7, At: ms(10)}, {CmdID: 8}, {CmdID: 0}}}
	v := n.finish(again)
	if len(v) != 2 || !strings.Contains(v[0].Message, "command 7 written again") || !strings.Contains(v[1].Message, "command 7 applied twice") {
		t.Fatalf("want command 7 written and applied again, got %v", v)
	}
}

// TestLivenessStreamMatchesWhole: liveness judged from segments agrees with liveness judged on
// the whole run, whether the heal is known at the cut or only at the end.
func TestLivenessStreamMatchesWhole(t *testing.T) {
	sc := &scenario.Scenario{Duration: 10 * time.Second, Expect: scenario.Expect{Liveness: &scenario.LivenessExpect{Within: time.Second}}}
	op := func(id uint64, at time.Duration, outcome record.OpOutcome) record.Op {
		return record.Op{ID: id, Name: "GET", Call: at, Return: at + ms(1), Outcome: outcome, Err: "boom"}
	}
	ops := []record.Op{op(1, ms(100), record.OpFailed), op(2, ms(2500), record.OpOK), op(3, ms(4000), record.OpFailed),
		op(4, ms(6000), record.OpOK), op(5, ms(9500), record.OpFailed)}
	for _, healedAtCut := range []bool{false, true} {
		for _, heal := range []time.Duration{ms(50), ms(2000), ms(3500)} {
			whole := Liveness{After: heal, Within: time.Second}.Check(&record.Result{Scenario: sc, Ops: ops, End: sc.Duration})
			s := newLivenessStream(sc)
			s.segment(&record.Result{Ops: ops[:3], End: ms(4500), HealedAt: min(heal, ms(40)), Healed: healedAtCut && heal < ms(4500)})
			if healedAtCut && heal < ms(4500) {
				s = newLivenessStream(sc)
				s.segment(&record.Result{Ops: ops[:3], End: ms(4500), HealedAt: heal, Healed: true})
			}
			got := s.finish(&record.Result{Scenario: sc, Ops: ops[3:], End: sc.Duration, HealedAt: heal})
			if len(got) != len(whole) {
				t.Fatalf("heal %v (known at cut: %v): whole %v, streamed %v", heal, healedAtCut, whole, got)
			}
			for i := range got {
				if got[i] != whole[i] {
					t.Fatalf("heal %v: violation %d: whole %+v, streamed %+v", heal, i, whole[i], got[i])
				}
			}
		}
	}
}

// TestStreamKeepsFailingWindow: a violation in a segment handed over before the end makes that
// segment the report's window, and the key the stream found is named, though the last records
// alone are linearizable.
func TestStreamKeepsFailingWindow(t *testing.T) {
	sc, err := scenario.Parse([]byte("name: window\nduration: 1h\nworkload: {callers: 1, rate: 1/s}\n" +
		"expect: {invariants: [honest], linearizable: true}\n"))
	if err != nil {
		t.Fatal(err)
	}
	s := NewStream()
	if !s.Accepts(sc) {
		t.Fatal("the stream must accept a scenario of callers")
	}
	stale := &record.Result{Scenario: sc, End: ms(20), Ops: []record.Op{setOp(1, 0, "k", "v1", ms(0), ms(1)), getOp(2, "k", "v0", ms(5), ms(6))},
		Applies: []record.Apply{{CmdID: 1}, {CmdID: 2}}}
	s.Segment(stale)
	last := &record.Result{Scenario: sc, End: time.Hour, Start: ms(20), Segments: 1, OpBase: 2,
		Ops: []record.Op{setOp(3, 0, "j", "v3", ms(30), ms(31))}, Applies: []record.Apply{{CmdID: 3}}}
	v := s.Judge(last)
	if v.Pass() || len(v.Violations) != 1 || v.Violations[0].Checker != CheckLinearizable || v.Ops != 3 {
		t.Fatalf("want one linearizability violation over 3 operations, got pass=%v %v ops=%d", v.Pass(), v.Violations, v.Ops)
	}
	if w := s.Window(last); len(w.Ops) != 2 || w.Ops[1].ID != 2 || w.End != time.Hour {
		t.Fatalf("the window must be the failing segment's records in the run's span: %+v", w)
	}
	if keys := s.IllegalKeys(last); len(keys) != 1 || keys[0] != "k" {
		t.Fatalf("IllegalKeys = %v, want [k]", keys)
	}
}
