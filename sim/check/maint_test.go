package check

import (
	"testing"
	"time"

	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/sim/record"
)

const timedOut = "sim: command timed out after 1s"

// maintResult is a run where conn 7 received notices and op 1 was written on it at call.
func maintResult(call, ret time.Duration, errText string, notices ...record.MaintEvent) *record.Result {
	r := &record.Result{End: time.Minute}
	for _, n := range notices {
		n.Kind, n.Conn = record.MaintNotice, 7
		r.Maint = append(r.Maint, n)
	}
	outcome := record.OpOK
	if errText != "" {
		outcome = record.OpUnknown
	}
	r.Ops = []record.Op{{ID: 1, Name: "GET", Call: call, Return: ret, Outcome: outcome, Err: errText}}
	r.Sends = []record.Send{{CmdID: 1, Conn: 7, At: call}}
	return r
}

// TestMaintRelaxedBounds: the checker's model of the relaxed deadline, on both edges: a timeout
// before it and a command kept past it are violations; the exact instants are not.
func TestMaintRelaxedBounds(t *testing.T) {
	c := MaintRelaxed{CommandTimeout: time.Second, Relaxed: 5 * time.Second, Window: 10 * time.Second}
	migrating := record.MaintEvent{At: time.Second, Notice: fsm.MaintMigrating, Time: 20 * time.Second}
	migrated := record.MaintEvent{At: 4 * time.Second, Notice: fsm.MaintMigrated}
	moving := record.MaintEvent{At: time.Second, Notice: fsm.MaintMoving, Time: 3 * time.Second}
	s := time.Second
	for _, tc := range []struct {
		name    string
		r       *record.Result
		violate bool
	}{
		{"relaxed timeout at call+relaxed", maintResult(2*s, 7*s, timedOut, migrating), false},
		{"timeout at its own deadline in a window", maintResult(2*s, 3*s, timedOut, migrating), true},
		{"kept past call+relaxed", maintResult(2*s, 8*s, timedOut, migrating), true},
		{"window closed by MIGRATED", maintResult(2*s, 4*s, timedOut, migrating, migrated), false},
		{"relaxed past MIGRATED", maintResult(2*s, 6*s, timedOut, migrating, migrated), true},
		{"completed after the window closed", maintResult(2*s, 5*s, "", migrating, migrated), true},
		{"MOVING's grace is its window", maintResult(2*s, 4*s, timedOut, moving), false},
		{"own deadline passed before the window", maintResult(0, time.Second, timedOut, migrating), false},
		{"not revived by the window", maintResult(0, 5*s, timedOut, migrating), true},
		{"no notice: own deadline", maintResult(2*s, 3*s, timedOut), false},
		{"no notice: late", maintResult(2*s, 4*s, timedOut), true},
	} {
		got := len(c.Check(tc.r)) > 0
		if got != tc.violate {
			t.Errorf("%s: violation %v, want %v (%v)", tc.name, got, tc.violate, c.Check(tc.r))
		}
	}
}

// TestMaintDrainAndReplay: the drain budget counts from the later of the grace's end and the
// replacement's readiness, and a command of a MOVING connection written elsewhere is a replay.
func TestMaintDrainAndReplay(t *testing.T) {
	s := time.Second
	base := []record.MaintEvent{
		{Kind: record.MaintNotice, Conn: 1, Slot: 0, At: s, Notice: fsm.MaintMoving, Time: 2 * s},
		{Kind: record.MaintReady, Conn: 2, Slot: 0, At: s + time.Millisecond},
	}
	for _, tc := range []struct {
		closed  time.Duration
		violate bool
	}{{3 * s, false}, {3*s + 1, true}, {2 * s, false}} {
		r := &record.Result{End: time.Minute, Maint: append(append([]record.MaintEvent{}, base...),
			record.MaintEvent{Kind: record.MaintClosed, Conn: 1, Slot: 0, At: tc.closed})}
		if got := len(MaintDrain{}.Check(r)) > 0; got != tc.violate {
			t.Errorf("closed at %v: violation %v, want %v", tc.closed, got, tc.violate)
		}
	}
	if v := (MaintDrain{}).Check(&record.Result{End: time.Minute, Maint: base}); len(v) != 1 {
		t.Errorf("never closed: %v", v)
	}
	late := append(base[:1:1], record.MaintEvent{Kind: record.MaintReady, Conn: 2, Slot: 0, At: 5 * s},
		record.MaintEvent{Kind: record.MaintClosed, Conn: 1, Slot: 0, At: 5 * s})
	if v := (MaintDrain{}).Check(&record.Result{End: time.Minute, Maint: late}); len(v) != 0 {
		t.Errorf("a replacement ready after the grace closes the old one then: %v", v)
	}
	r := &record.Result{Maint: base[:1], Sends: []record.Send{{CmdID: 9, Conn: 1, At: s}, {CmdID: 9, Conn: 2, At: 3 * s}}}
	if v := (MaintNoReplay{}).Check(r); len(v) != 1 {
		t.Errorf("resent across the handoff: %v", v)
	}
	r.Sends[0].Conn = 3 // written first on a connection that never received MOVING
	if v := (MaintNoReplay{}).Check(r); len(v) != 0 {
		t.Errorf("not a MOVING connection: %v", v)
	}
}
