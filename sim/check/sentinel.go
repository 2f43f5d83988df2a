package check

import (
	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/sim/record"
)

// renewedSlots reports whether step st renews the command slots of a Sentinel client: a new
// primary generation published to fsm.MachineMux (fsm.Mux.renewSlots). The slots that failed
// against the old primary (resting, failed or exhausted) then start over as fresh slots: their
// budget, attempt numbering and spacing belonged to the old endpoint.
func renewedSlots(st *record.Step) bool {
	return st.Event.Kind == fsm.Published && st.Event.Machine == fsm.MachineMux
}

// renew resets, for a renewal, every slot the policy checker tracks that rests, failed or is
// exhausted: it is a fresh slot, with nothing scheduled. A slot waiting for a scheduled attempt,
// connecting or ready is left alone, as the machine leaves it.
func renew(slots map[int]*slotTrack) {
	for _, s := range slots {
		switch s.state {
		case fsm.SlotResting, fsm.SlotFailed, fsm.SlotExhausted:
		default:
			continue
		}
		s.exhausted, s.scheduled = false, false
		s.lastAttempt, s.restFailures = 0, 0
	}
}
