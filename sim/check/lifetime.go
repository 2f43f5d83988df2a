package check

import (
	"maps"
	"slices"
	"time"

	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/sim/record"
)

// CheckLifetime is the name of the lifetime-recycling checker.
const CheckLifetime = "lifetime"

// Lifetime checks the spec's maximum-connection-lifetime rules on the engine steps and the written
// frames, recomputing them independently of fsm (it runs when client.connection_max_lifetime is set):
//
//   - a connection's replacement is first dialed between Lifetime and Lifetime+Jitter after the
//     connection was published;
//   - a slot has at most one replacement in flight;
//   - after a failed replacement (setup failure, or closed before publication) the next one is
//     dialed after a delay in [cap/2, cap], where the cap starts at 1 s, doubles up to 30 s and
//     starts again at 1 s for each newly published connection;
//   - a connection is never closed while it still serves its slot (the old connection is closed
//     only after its replacement was published, or at shutdown), and a replaced connection is
//     drained, never aborted, so that the commands it accepted finish on it;
//   - no command is written to a connection after it started draining.
type Lifetime struct {
	// Lifetime is client.connection_max_lifetime.
	Lifetime time.Duration
	// Jitter is client.connection_max_lifetime_jitter.
	Jitter time.Duration
}

// Name implements Checker.
func (Lifetime) Name() string { return CheckLifetime }

// lifetimeSlot is the checker's view of one command slot.
type lifetimeSlot struct {
	// conn is the connection the slot routes to (0: none) and publishedAt when it was published.
	conn        fsm.ConnID
	publishedAt time.Duration
	// replacement is the replacement in flight; deadlineDialed says that this generation's first
	// replacement (the one its deadline triggers) was dialed.
	replacement    fsm.ConnID
	deadlineDialed bool
	// failedAt is when the last replacement failed; limit is the cap of the next retry.
	failedAt time.Duration
	limit    time.Duration
}

// Check implements Checker.
func (c Lifetime) Check(r *record.Result) []Violation {
	var out []Violation
	slots := map[int]*lifetimeSlot{}
	slot := func(i int) *lifetimeSlot {
		if slots[i] == nil {
			slots[i] = &lifetimeSlot{}
		}
		return slots[i]
	}
	replacementSlot := map[fsm.ConnID]int{}
	published := map[fsm.ConnID]bool{}
	drainedAt := map[fsm.ConnID]time.Duration{}
	for _, st := range r.Steps {
		ev := &st.Event
		at := ev.At
		if ev.Kind == fsm.DialFailed || ev.Kind == fsm.ConnLost {
			if i, ok := replacementSlot[ev.Conn]; ok && slot(i).replacement == ev.Conn {
				s := slot(i)
				s.replacement = 0
				s.failedAt = at
			}
		}
		shutdown := ev.Kind == fsm.Retired || ev.Kind == fsm.Disposed
		for k := range st.Effects {
			f := &st.Effects[k]
			if f.Machine != fsm.MachineMux {
				continue
			}
			switch f.Kind {
			case fsm.Route:
				s := slot(f.Slot)
				switch {
				case f.Conn == 0:
					s.conn = 0
				case f.Conn != s.conn:
					// A new connection serves the slot: its own lifetime starts.
					*s = lifetimeSlot{conn: f.Conn, publishedAt: at, limit: fsm.RecycleRetryCapInitial}
					published[f.Conn] = true
				}
			case fsm.Dial:
				s := slot(f.Slot)
				if s.conn == 0 {
					continue // an ordinary attempt: the policy checker's
				}
				switch {
				case s.replacement != 0:
					out = append(out, violation(CheckLifetime, at, "slot "+itoa(f.Slot)+" dialed replacement "+u(uint64(f.Conn))+
						" while replacement "+u(uint64(s.replacement))+" was in flight"))
				case !s.deadlineDialed:
					age := at - s.publishedAt
					if age < c.Lifetime || age > c.Lifetime+c.Jitter+loopLag(r) {
						out = append(out, violation(CheckLifetime, at, "slot "+itoa(f.Slot)+" replaced conn "+u(uint64(s.conn))+" at age "+
							age.String()+", outside ["+c.Lifetime.String()+", "+(c.Lifetime+c.Jitter).String()+"]"))
					}
				default:
					waited := at - s.failedAt
					if waited < s.limit/2 || waited > s.limit+loopLag(r) {
						out = append(out, violation(CheckLifetime, at, "slot "+itoa(f.Slot)+" retried its replacement after "+waited.String()+
							", outside ["+(s.limit/2).String()+", "+s.limit.String()+"]"))
					}
					s.limit = min(2*s.limit, 30*time.Second)
				}
				s.deadlineDialed = true
				s.replacement = f.Conn
				replacementSlot[f.Conn] = f.Slot
			case fsm.Close:
				if i, ok := replacementSlot[f.Conn]; ok && slot(i).replacement == f.Conn {
					slot(i).replacement = 0 // abandoned: its old connection failed, or shutdown
					continue
				}
				if !published[f.Conn] {
					continue
				}
				for _, i := range slices.Sorted(maps.Keys(slots)) {
					if slots[i].conn == f.Conn && !shutdown {
						out = append(out, violation(CheckLifetime, at, "conn "+u(uint64(f.Conn))+" closed while it still serves slot "+itoa(i)))
					}
				}
				if !f.Drain && ev.Kind != fsm.Disposed {
					out = append(out, violation(CheckLifetime, at, "replaced conn "+u(uint64(f.Conn))+" aborted instead of drained"))
				}
				if f.Drain {
					drainedAt[f.Conn] = at
				}
			}
		}
	}
	for _, s := range r.Sends {
		if t, ok := drainedAt[s.Conn]; ok && s.At > t {
			out = append(out, violation(CheckLifetime, s.At, "command "+u(s.CmdID)+" written to conn "+u(uint64(s.Conn))+
				" after it started draining at "+t.String()))
		}
	}
	return out
}
