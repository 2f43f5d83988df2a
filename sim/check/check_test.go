package check

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/respire-go/respire/engine"
	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/sim/record"
)

// expectViolations asserts that checker c finds exactly want violations in r, each mentioning
// its substring.
func expectViolations(t *testing.T, c Checker, r *record.Result, want ...string) {
	t.Helper()
	got := c.Check(r)
	if len(got) != len(want) {
		t.Fatalf("%s: want %d violations %q, got %v", c.Name(), len(want), want, got)
	}
	for i, v := range got {
		if v.Checker != c.Name() || !strings.Contains(v.Message, want[i]) {
			t.Fatalf("%s: violation %d = %+v, want it to mention %q", c.Name(), i, v, want[i])
		}
	}
}

func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

func TestNoReplayControl(t *testing.T) {
	clean := &record.Result{
		Sends:   []record.Send{{CmdID: 1, Conn: 1}, {CmdID: 2, Conn: 1}},
		Applies: []record.Apply{{CmdID: 1}, {CmdID: 2}, {CmdID: 0}, {CmdID: 0}},
	}
	expectViolations(t, NoReplay{}, clean)
	planted := &record.Result{
		Sends:   []record.Send{{CmdID: 1, Conn: 1}, {CmdID: 1, Conn: 2, At: ms(5)}},
		Applies: []record.Apply{{CmdID: 1}, {CmdID: 1, At: ms(6)}},
	}
	expectViolations(t, NoReplay{}, planted, "written again on conn 2", "applied twice")
}

func TestOutcomesControl(t *testing.T) {
	clean := &record.Result{
		Sends: []record.Send{{CmdID: 2}},
		Ops:   []record.Op{{ID: 1, Outcome: record.OpFailed}, {ID: 2, Outcome: record.OpUnknown}, {ID: 3, Outcome: record.OpOK}},
	}
	expectViolations(t, Outcomes{}, clean)
	planted := &record.Result{
		Ops:        []record.Op{{ID: 1, Outcome: record.OpPending, Name: "GET"}, {ID: 2, Outcome: record.OpUnknown}},
		Duplicates: []record.Duplicate{{CmdID: 3}},
	}
	expectViolations(t, Outcomes{}, planted, "never completed", "never written", "more than once")
}

func TestHonestControl(t *testing.T) {
	clean := &record.Result{
		Applies: []record.Apply{{CmdID: 1}, {CmdID: 3}},
		Ops: []record.Op{{ID: 1, Outcome: record.OpOK}, {ID: 2, Outcome: record.OpFailed}, {ID: 3, Outcome: record.OpUnknown},
			{ID: 4, Outcome: record.OpUnknown}, {ID: 5, Outcome: record.OpOK, ServerError: "LOADING"}},
	}
	expectViolations(t, Honest{}, clean)
	planted := &record.Result{
		Applies: []record.Apply{{CmdID: 2}},
		Ops:     []record.Op{{ID: 1, Outcome: record.OpOK, Name: "SET"}, {ID: 2, Outcome: record.OpFailed, Name: "SET"}},
	}
	expectViolations(t, Honest{}, planted, "ok but no node applied", "definite failure but was applied")
}

func TestPairingControl(t *testing.T) {
	clean := &record.Result{
		Sends: []record.Send{{CmdID: 1, Conn: 1, At: ms(1)}, {CmdID: 2, Conn: 1, At: ms(2)}, {CmdID: 3, Conn: 2, At: ms(3)}},
		Ops: []record.Op{{ID: 1, Outcome: record.OpOK, Return: ms(5)}, {ID: 2, Outcome: record.OpOK, Return: ms(5)},
			{ID: 3, Outcome: record.OpOK, Return: ms(4)}},
	}
	expectViolations(t, Pairing{}, clean)
	planted := &record.Result{
		Sends: []record.Send{{CmdID: 1, Conn: 1, At: ms(1)}, {CmdID: 2, Conn: 1, At: ms(2)}, {CmdID: 3, Conn: 2, At: ms(9)}},
		Ops: []record.Op{{ID: 1, Outcome: record.OpOK, Return: ms(7)}, {ID: 2, Outcome: record.OpOK, Return: ms(6)},
			{ID: 3, Outcome: record.OpOK, Return: ms(8)}},
	}
	expectViolations(t, Pairing{}, planted, "op 2 completed before op 1", "op 3 completed before it was written")
}

func TestHandshakeFirstControl(t *testing.T) {
	expectViolations(t, HandshakeFirst{}, &record.Result{Applies: []record.Apply{{CmdID: 0}, {CmdID: 1, AfterHandshake: true}}})
	expectViolations(t, HandshakeFirst{}, &record.Result{Applies: []record.Apply{{CmdID: 7, Name: "SET"}}}, "before its handshake")
}

// machineRun records the steps of a real Mux over a scripted timeline, so the policy checker is
// exercised on genuine machine output before violations are planted into it.
type machineRun struct {
	m     *fsm.Mux
	steps []record.Step
	now   time.Duration
	conn  fsm.ConnID
	timer fsm.TimerID
}

func (mr *machineRun) step(ev fsm.Event) {
	ev.At = mr.now
	var out fsm.Outbox
	mr.m.Step(&ev, &out)
	mr.steps = append(mr.steps, record.Step{Event: ev, Effects: append([]fsm.Effect(nil), out.Effects...)})
	for _, f := range out.Effects {
		switch f.Kind {
		case fsm.Dial:
			mr.conn = f.Conn
		case fsm.ArmTimer:
			mr.timer = f.Timer
		}
	}
}

// exhaustRun connects one slot, loses it and fails every replacement until exhaustion, firing
// timers at exactly their delays.
func exhaustRun(p *fsm.Policy) *machineRun {
	mr := &machineRun{m: fsm.NewMux(fsm.MuxConfig{Slots: 1, Policy: p})}
	mr.step(fsm.Event{Kind: fsm.Demanded, Waiter: 1})
	mr.step(fsm.Event{Kind: fsm.HandshakeDone, Conn: mr.conn})
	mr.now = time.Second
	mr.step(fsm.Event{Kind: fsm.ConnLost, Conn: mr.conn, Err: errors.New("reset"), Draw: 0.25})
	for n := 1; n <= p.MaxAttempts; n++ {
		mr.now += p.Delay(n, map[bool]float64{true: 0.25, false: 0.75}[n == 1])
		mr.step(fsm.Event{Kind: fsm.TimerFired, Timer: mr.timer})
		mr.step(fsm.Event{Kind: fsm.DialFailed, Conn: mr.conn, Err: errors.New("refused")})
		if n < p.MaxAttempts {
			mr.now += time.Second
			mr.step(fsm.Event{Kind: fsm.Noticed, Slot: 0, Draw: 0.75})
		}
	}
	return mr
}

func TestPolicyControl(t *testing.T) {
	p := &fsm.Policy{InitialDelay: 100 * time.Millisecond, BackoffMultiplier: 2, MaxDelay: time.Second, JitterRatio: 0.2, MaxAttempts: 3}
	mr := exhaustRun(p)
	expectViolations(t, Policy{Policy: p}, &record.Result{Steps: mr.steps})

	// Late timer: the dial of attempt 2 happens at twice its delay.
	late := exhaustRun(p)
	shiftDial(late.steps, 2, 200*time.Millisecond)
	expectViolations(t, Policy{Policy: p}, &record.Result{Steps: late.steps}, "dialed after", "outside")

	// A dial after exhaustion.
	after := exhaustRun(p)
	after.steps = append(after.steps, record.Step{Event: fsm.Event{Kind: fsm.Noticed, At: 10 * time.Second},
		Effects: []fsm.Effect{{Kind: fsm.Dial, Slot: 0, Conn: 99, Attempt: 4}}})
	expectViolations(t, Policy{Policy: p}, &record.Result{Steps: after.steps}, "dialed after exhaustion", "beyond MaxAttempts", "without scheduling it")

	// A scheduled delay without a policy.
	none := exhaustRun(p)
	got := Policy{}.Check(&record.Result{Steps: none.steps})
	if len(got) == 0 || !strings.Contains(got[0].Message, "without a reconnect policy") {
		t.Fatalf("timers without policy not caught: %v", got)
	}

	// The checker's band is independent of fsm: it must agree with the machine's arithmetic.
	for n := 1; n < 12; n++ {
		for _, d := range []float64{0, 0.5, 0.999} {
			lo, hi := Band(p, n)
			if got := p.Delay(n, d); got < lo || got > hi {
				t.Fatalf("attempt %d draw %v: fsm delay %v outside checker band [%v, %v]", n, d, got, lo, hi)
			}
		}
	}
}

// shiftDial moves the step that dials attempt n (and every later step) later by d.
func shiftDial(steps []record.Step, n int, d time.Duration) {
	shift := false
	for i := range steps {
		for _, f := range steps[i].Effects {
			if f.Kind == fsm.Dial && f.Attempt == n {
				shift = true
			}
		}
		if shift {
			steps[i].Event.At += d
		}
	}
}

func TestLinearizableControl(t *testing.T) {
	s := func(id uint64, key, val string, call, ret int, outcome record.OpOutcome) record.Op {
		return record.Op{ID: id, Name: "SET", Keys: []string{key}, Values: []string{val}, Call: ms(call), Return: ms(ret), Outcome: outcome}
	}
	g := func(id uint64, key string, d record.Datum, call, ret int) record.Op {
		return record.Op{ID: id, Name: "GET", Keys: []string{key}, Reply: []record.Datum{d}, Call: ms(call), Return: ms(ret), Outcome: record.OpOK}
	}
	incr := func(id uint64, key string, n int64, call, ret int, outcome record.OpOutcome) record.Op {
		return record.Op{ID: id, Name: "INCR", Keys: []string{key}, Reply: []record.Datum{{Int: n, IsInt: true}}, Call: ms(call), Return: ms(ret), Outcome: outcome}
	}
	clean := &record.Result{End: ms(100), Ops: []record.Op{
		s(1, "k", "v1", 0, 10, record.OpOK),
		g(2, "k", record.Datum{Str: "v1"}, 20, 30),
		s(3, "k", "v2", 40, 45, record.OpUnknown), // may or may not have applied
		g(4, "k", record.Datum{Str: "v1"}, 50, 55),
		g(5, "k", record.Datum{Str: "v2"}, 60, 65), // the unknown write took effect late: allowed
		s(6, "k", "v3", 66, 67, record.OpFailed),   // never applied
		g(7, "k", record.Datum{Str: "v2"}, 70, 75),
		incr(8, "c", 1, 0, 5, record.OpOK),
		incr(9, "c", 0, 6, 7, record.OpUnknown),
		incr(10, "c", 3, 8, 9, record.OpOK), // the unknown INCR applied
		g(11, "absent", record.Datum{Null: true}, 0, 1),
	}}
	expectViolations(t, Linearizable{}, clean)
	stale := &record.Result{End: ms(100), Ops: []record.Op{
		s(1, "k", "v1", 0, 10, record.OpOK),
		s(2, "k", "v2", 20, 30, record.OpOK),
		g(3, "k", record.Datum{Str: "v1"}, 40, 50), // stale read after v2 completed
		g(4, "other", record.Datum{Null: true}, 0, 1),
	}}
	expectViolations(t, Linearizable{}, stale, `key k: op 3 get(k) -> "v1" (caller 0, called 40ms, returned 50ms) fits no order`)
	if v := (Linearizable{}).Check(stale); v[0].At != ms(50) || !strings.Contains(v[0].Message, `ending with the key at "v2"`) {
		t.Fatalf("the violation must be at the failing read's return, after the key became v2: %+v", v)
	}
	lostWrite := &record.Result{End: ms(100), Ops: []record.Op{
		s(1, "k", "v1", 0, 10, record.OpFailed),
		g(2, "k", record.Datum{Str: "v1"}, 20, 30), // a definite failure must not be observed
	}}
	expectViolations(t, Linearizable{}, lostWrite, "key k: op 2 get(k)")
	counter := &record.Result{End: ms(100), Ops: []record.Op{
		incr(1, "c", 1, 0, 5, record.OpOK),
		incr(2, "c", 3, 6, 7, record.OpOK), // skipped 2 with no unknown INCR in between
	}}
	expectViolations(t, Linearizable{}, counter, "key c: op 2 incr(c) -> 3")
}

func TestLivenessControl(t *testing.T) {
	ok := func(call, ret int) record.Op {
		return record.Op{Name: "GET", Call: ms(call), Return: ms(ret), Outcome: record.OpOK}
	}
	fail := func(call int) record.Op {
		return record.Op{Name: "GET", Call: ms(call), Return: ms(call), Outcome: record.OpFailed, Err: "refused"}
	}
	c := Liveness{After: ms(100), Within: ms(50)}
	expectViolations(t, c, &record.Result{Ops: []record.Op{fail(90), fail(110), ok(120, 121), ok(200, 201)}})
	expectViolations(t, c, &record.Result{Ops: []record.Op{fail(110), fail(160), fail(200)}}, "issued 60ms after heal", "issued 100ms after heal", "no operation succeeded")
	expectViolations(t, c, &record.Result{Ops: []record.Op{ok(10, 20)}}, "no operation was issued")
}

func TestReplayControl(t *testing.T) {
	p := &fsm.Policy{InitialDelay: 100 * time.Millisecond, MaxAttempts: 3, JitterRatio: 0.5}
	mr := exhaustRun(p)
	cfg := engine.Config{Slots: 1, Policy: p}
	expectViolations(t, Replay{Config: cfg}, &record.Result{Steps: mr.steps})
	// Tamper with one recorded effect: the replay no longer matches.
	tampered := false
	for i := range mr.steps[2].Effects {
		if f := &mr.steps[2].Effects[i]; f.Kind == fsm.ArmTimer {
			f.After += time.Millisecond
			tampered = true
		}
	}
	if !tampered {
		t.Fatal("no timer to tamper with")
	}
	expectViolations(t, Replay{Config: cfg}, &record.Result{Steps: mr.steps}, "replayed to")
}
