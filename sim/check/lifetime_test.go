package check

import (
	"testing"
	"time"

	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/sim/record"
)

// TestLifetimeControl is the lifetime checker's synthetic positive control: a clean recycle
// passes; a deadline outside its band, a retry outside its band, a second replacement in flight,
// an old connection closed before publication, an aborted instead of drained connection and a
// command written to a draining connection are each caught.
func TestLifetimeControl(t *testing.T) {
	c := Lifetime{Lifetime: 10 * time.Second, Jitter: time.Second}
	route := func(conn fsm.ConnID) fsm.Effect {
		state := fsm.SlotReady
		if conn == 0 {
			state = fsm.SlotFailed
		}
		return fsm.Effect{Kind: fsm.Route, Slot: 0, Conn: conn, State: state}
	}
	dial := func(conn fsm.ConnID) fsm.Effect { return fsm.Effect{Kind: fsm.Dial, Slot: 0, Conn: conn} }
	closeConn := func(conn fsm.ConnID, drain bool) fsm.Effect {
		return fsm.Effect{Kind: fsm.Close, Conn: conn, Drain: drain}
	}
	step := func(at time.Duration, kind fsm.EventKind, conn fsm.ConnID, effects ...fsm.Effect) record.Step {
		return record.Step{Event: fsm.Event{Kind: kind, At: at, Conn: conn}, Effects: effects}
	}
	s := time.Second
	clean := &record.Result{Steps: []record.Step{
		step(0, fsm.HandshakeDone, 1, route(1)),
		step(10*s+s/2, fsm.TimerFired, 0, dial(2)),
		step(10*s+s/2, fsm.DialFailed, 2),
		step(11*s+s/4, fsm.TimerFired, 0, dial(3)), // 750 ms after the failure: in [0.5 s, 1 s]
		step(11*s+s/4, fsm.DialFailed, 3),
		step(12*s+s/2, fsm.TimerFired, 0, dial(4)), // 1.25 s: in [1 s, 2 s]
		step(12*s+s, fsm.HandshakeDone, 4, route(4), closeConn(1, true)),
		step(23*s, fsm.TimerFired, 0, dial(5)), // 10 s after publication
	}, Sends: []record.Send{{CmdID: 1, Conn: 1, At: 13 * s}}}
	expectViolations(t, c, clean)

	planted := &record.Result{Steps: []record.Step{
		step(0, fsm.HandshakeDone, 1, route(1)),
		step(9*s, fsm.TimerFired, 0, dial(2)), // too early
		step(9*s, fsm.TimerFired, 0, dial(3)), // a second replacement in flight
		step(9*s, fsm.DialFailed, 3),
		step(9*s+100*time.Millisecond, fsm.DialFailed, 2),
		step(12*s, fsm.TimerFired, 0, dial(4)),                         // retry 3 s after the failure of 3: cap was 1 s
		step(12*s, fsm.HandshakeDone, 4, closeConn(1, true), route(4)), // closed before publication
		step(20*s, fsm.ConnLost, 9, closeConn(4, false), route(0)),     // a served connection aborted
	}, Sends: []record.Send{{CmdID: 7, Conn: 1, At: 13 * s}}}
	expectViolations(t, c, planted, "at age 9s", "while replacement 2 was in flight", "retried its replacement after 3s",
		"closed while it still serves slot 0", "closed while it still serves slot 0", "aborted instead of drained",
		"written to conn 1 after it started draining")
}
