package fsm

import "time"

// MOVING handoff (spec "Maintenance notifications", MOVING handoff), for the command slots.
//
// A MovingNoticed event says that the ready connection Conn received a MOVING notice: its
// endpoint is moving to Event.Endpoint (the zero Endpoint: dial the configured endpoint again,
// resolving its name anew) and Event.Grace is the time the old socket may still serve. The slot
// that owns Conn then:
//
//   - dials a replacement to that endpoint (a Dial effect with Endpoint set) while Conn keeps
//     serving, and arms a grace timer; a lifetime recycle in progress gives way to it;
//   - publishes the replacement as soon as its handshake is done (Route), and drains Conn (Close
//     with Drain and Move): the commands Conn accepted but provably never wrote move to the
//     replacement, what it may have written finishes there and is never resent; new commands go
//     to the replacement;
//   - when the grace ends, closes Conn at once if it is still draining (Close without Drain): its
//     remaining commands fail with an unknown outcome;
//   - a replacement that fails is retried after the lifetime retry delay if that ends before
//     the grace does; otherwise, and once the grace is over, a failed replacement is not
//     retried: the slot keeps Conn, and the ordinary reconnect path takes over when the server
//     closes it. A replacement whose handshake finishes after the grace still switches: Conn's
//     unwritten commands move (Close with Drain and Move), then Conn is closed at once (Close).
//
// A MOVING notice for a connection that is not a slot's ready connection, or for a slot already
// handing off, changes nothing. If Conn fails during the handoff, the replacement is closed and
// the slot recovers through the ordinary path.

// handoff is the MOVING handoff state of one command slot.
type handoff struct {
	on     bool
	target Endpoint
	end    time.Duration // the grace's end, on the event clock
	timer  TimerID       // the grace timer
	old    ConnID        // the connection draining since the publication, until the grace ends
}

// stepMoving handles the events of a MOVING handoff. It reports whether ev was consumed.
func (m *Mux) stepMoving(ev *Event, out *Outbox) bool {
	switch ev.Kind {
	case MovingNoticed:
		m.moving(ev, out)
		return true
	case TimerFired:
		if ev.Timer == 0 {
			return false
		}
		for i := range m.slots {
			s := &m.slots[i]
			switch {
			case !s.move.on:
			case s.move.timer == ev.Timer:
				m.graceEnded(i, out)
				return true
			case s.life.phase == recycleBackoff && s.life.timer == ev.Timer:
				m.dialMove(i, out)
				return true
			}
		}
	case DialSucceeded:
		if i := m.replacementOf(ev.Conn); i >= 0 && m.slots[i].move.on {
			return true // its handshake runs
		}
	case HandshakeDone:
		if i := m.replacementOf(ev.Conn); i >= 0 && m.slots[i].move.on {
			m.publishMove(i, ev, out)
			return true
		}
	case DialFailed, ConnLost:
		if i := m.replacementOf(ev.Conn); i >= 0 && m.slots[i].move.on {
			m.retryMove(i, ev, out)
			return true
		}
	}
	return false
}

// moving starts the handoff of the slot whose ready connection received the notice.
func (m *Mux) moving(ev *Event, out *Outbox) {
	if m.closed || ev.Conn == 0 {
		return
	}
	i := m.slotOf(ev.Conn)
	if i < 0 || m.slots[i].a.phase != attemptReady || m.slots[i].move.on {
		return
	}
	s := &m.slots[i]
	m.abandonRecycle(i, out)
	grace := max(ev.Grace, 0)
	s.move = handoff{on: true, target: ev.Endpoint, end: ev.At + grace, timer: m.ids.timer()}
	out.add(Effect{Kind: ArmTimer, Timer: s.move.timer, After: grace})
	m.dialMove(i, out)
}

// dialMove dials slot i's replacement to the announced endpoint.
func (m *Mux) dialMove(i int, out *Outbox) {
	s := &m.slots[i]
	s.life = recycle{phase: recycleDialing, conn: m.ids.conn(), limit: s.life.limit}
	out.add(Effect{Kind: Dial, Slot: i, Conn: s.life.conn, Endpoint: s.move.target})
}

// publishMove routes slot i to its ready replacement and drains the old connection, or closes
// it at once when the grace is already over.
func (m *Mux) publishMove(i int, ev *Event, out *Outbox) {
	s := &m.slots[i]
	old := s.a.adopt(s.life.conn)
	s.life = recycle{}
	m.route(i, out)
	if s.move.timer == 0 {
		// The grace ended while the handshake ran: the switch still happens, the commands the
		// old socket never wrote move, and it closes now, failing what it may have written.
		out.add(Effect{Kind: Close, Conn: old, Slot: i, Drain: true, Move: true})
		out.add(Effect{Kind: Close, Conn: old})
		s.move = handoff{}
	} else {
		out.add(Effect{Kind: Close, Conn: old, Slot: i, Drain: true, Move: true})
		s.move.old = old
	}
	m.age(i, ev.Draw, out)
}

// retryMove handles the failure of slot i's replacement: retried within the grace, given up
// after it.
func (m *Mux) retryMove(i int, ev *Event, out *Outbox) {
	s := &m.slots[i]
	left := s.move.end - ev.At
	if s.move.timer == 0 || left <= 0 {
		m.endMove(i, out)
		return
	}
	delay, next := RecycleRetryDelay(s.life.limit, ev.Draw)
	if delay >= left {
		// The next try would start when the grace is over.
		m.endMove(i, out)
		return
	}
	s.life = recycle{phase: recycleBackoff, timer: m.ids.timer(), limit: next}
	out.add(Effect{Kind: ArmTimer, Timer: s.life.timer, After: delay})
	m.emitRecycle(i, RecycleRetrying, delay, ev.Err, out)
}

// graceEnded closes the old connection if it still drains; a replacement still connecting may
// switch later, one waiting for its retry is given up.
func (m *Mux) graceEnded(i int, out *Outbox) {
	s := &m.slots[i]
	s.move.timer = 0
	switch {
	case s.move.old != 0:
		out.add(Effect{Kind: Close, Conn: s.move.old})
		s.move = handoff{}
	case s.life.phase == recycleDialing:
		// Its handshake may still finish: publishMove closes the old socket at once then.
	default:
		m.endMove(i, out)
	}
}

// endMove gives up slot i's handoff: the slot keeps its connection.
func (m *Mux) endMove(i int, out *Outbox) {
	s := &m.slots[i]
	if s.life.phase == recycleBackoff {
		out.add(Effect{Kind: CancelTimer, Timer: s.life.timer})
	}
	if s.move.timer != 0 {
		out.add(Effect{Kind: CancelTimer, Timer: s.move.timer})
	}
	s.life = recycle{}
	s.move = handoff{}
	if s.a.phase == attemptReady {
		m.age(i, 0, out)
	}
}

// stopMove forgets slot i's handoff because its connection is going away; the replacement in
// flight is closed by abandonRecycle.
func (m *Mux) stopMove(i int, out *Outbox) {
	s := &m.slots[i]
	if s.move.timer != 0 {
		out.add(Effect{Kind: CancelTimer, Timer: s.move.timer})
	}
	s.move = handoff{}
}
