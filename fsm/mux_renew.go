package fsm

// renewSlots handles Published on the command slots: the endpoint they connect to changed (a
// Sentinel client validated the primary of a new generation). The failures, rests and
// exhaustion of the slots that failed belonged to the old endpoint, so each such slot starts
// over as a fresh slot: a resting slot's timer is cancelled, its budget and its spacing are
// reset, and its next use dials at once, as an initial connection. Ready slots and attempts in
// progress are left alone (the runtime retires the old generation's connections itself).
func (m *Mux) renewSlots(out *Outbox) {
	if m.closed {
		return
	}
	for i := range m.slots {
		s := &m.slots[i]
		switch s.a.phase {
		case attemptResting:
			out.add(Effect{Kind: CancelTimer, Timer: s.a.timer})
			s.a.endRest()
		case attemptFailed, attemptExhausted:
		default:
			continue
		}
		s.a.becomeIdle()
		s.replacing = false
		m.route(i, out)
	}
}
