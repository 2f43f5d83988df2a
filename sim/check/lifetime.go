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
	f := c.fold(r)
	for i := range r.Steps {
		f.step(i, &r.Steps[i], r.Clients)
	}
	return append(f.out, f.sends(r.Sends)...)
}

// lifetimeFold is the lifetime checker's state over the steps, taken one at a time (Check, or
// a stream's batches), and the drains it found, against which the writes are judged.
type lifetimeFold struct {
	c               Lifetime
	lag             time.Duration
	slots           map[int]*lifetimeSlot
	replacementSlot map[fsm.ConnID]int
	published       map[fsm.ConnID]bool
	drainedAt       map[fsm.ConnID]time.Duration
	out             []Violation
}

func (c Lifetime) fold(r *record.Result) *lifetimeFold {
	return &lifetimeFold{c: c, lag: loopLag(r), slots: map[int]*lifetimeSlot{}, replacementSlot: map[fsm.ConnID]int{},
		published: map[fsm.ConnID]bool{}, drainedAt: map[fsm.ConnID]time.Duration{}}
}

func (lf *lifetimeFold) slot(i int) *lifetimeSlot {
	if lf.slots[i] == nil {
		lf.slots[i] = &lifetimeSlot{}
	}
	return lf.slots[i]
}

// step takes one step of the run's journal.
func (lf *lifetimeFold) step(_ int, st *record.Step, _ []record.ClientGen) {
	ev := &st.Event
	at := ev.At
	if ev.Kind == fsm.DialFailed || ev.Kind == fsm.ConnLost {
		if i, ok := lf.replacementSlot[ev.Conn]; ok && lf.slot(i).replacement == ev.Conn {
			s := lf.slot(i)
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
			s := lf.slot(f.Slot)
			switch {
			case f.Conn == 0:
				s.conn = 0
			case f.Conn != s.conn:
				// A new connection serves the slot: its own lifetime starts.
				*s = lifetimeSlot{conn: f.Conn, publishedAt: at, limit: fsm.RecycleRetryCapInitial}
				lf.published[f.Conn] = true
			}
		case fsm.Dial:
			s := lf.slot(f.Slot)
			if s.conn == 0 {
				continue // an ordinary attempt: the policy checker's
			}
			switch {
			case s.replacement != 0:
				lf.out = append(lf.out, violation(CheckLifetime, at, "slot "+itoa(f.Slot)+" dialed replacement "+u(uint64(f.Conn))+
					" while replacement "+u(uint64(s.replacement))+" was in flight"))
			case !s.deadlineDialed:
				age := at - s.publishedAt
				if age < lf.c.Lifetime || age > lf.c.Lifetime+lf.c.Jitter+lf.lag {
					lf.out = append(lf.out, violation(CheckLifetime, at, "slot "+itoa(f.Slot)+" replaced conn "+u(uint64(s.conn))+" at age "+
						age.String()+", outside ["+lf.c.Lifetime.String()+", "+(lf.c.Lifetime+lf.c.Jitter).String()+"]"))
				}
			default:
				waited := at - s.failedAt
				if waited < s.limit/2 || waited > s.limit+lf.lag {
					lf.out = append(lf.out, violation(CheckLifetime, at, "slot "+itoa(f.Slot)+" retried its replacement after "+waited.String()+
						", outside ["+(s.limit/2).String()+", "+s.limit.String()+"]"))
				}
				s.limit = min(2*s.limit, 30*time.Second)
			}
			s.deadlineDialed = true
			s.replacement = f.Conn
			lf.replacementSlot[f.Conn] = f.Slot
		case fsm.Close:
			if i, ok := lf.replacementSlot[f.Conn]; ok && lf.slot(i).replacement == f.Conn {
				lf.slot(i).replacement = 0 // abandoned: its old connection failed, or shutdown
				continue
			}
			if !lf.published[f.Conn] {
				continue
			}
			for _, i := range slices.Sorted(maps.Keys(lf.slots)) {
				if lf.slots[i].conn == f.Conn && !shutdown {
					lf.out = append(lf.out, violation(CheckLifetime, at, "conn "+u(uint64(f.Conn))+" closed while it still serves slot "+itoa(i)))
				}
			}
			if !f.Drain && ev.Kind != fsm.Disposed {
				lf.out = append(lf.out, violation(CheckLifetime, at, "replaced conn "+u(uint64(f.Conn))+" aborted instead of drained"))
			}
			if f.Drain {
				lf.drainedAt[f.Conn] = at
			}
		}
	}
}

// sends judges writes against the drains found so far: a write after its connection started
// draining. Every drain before a write's time must have been stepped.
func (lf *lifetimeFold) sends(sends []record.Send) []Violation {
	var out []Violation
	for _, s := range sends {
		if t, ok := lf.drainedAt[s.Conn]; ok && s.At > t {
			out = append(out, violation(CheckLifetime, s.At, "command "+u(s.CmdID)+" written to conn "+u(uint64(s.Conn))+
				" after it started draining at "+t.String()))
		}
	}
	return out
}

// lifetimeStream is the lifetime checker over segments and the journal: it takes the steps as
// the run hands them over, and judges each segment's writes against the drains stepped so far.
// The runner hands the journal over before each segment (sim's segmenter), so every drain
// before a write of the segment is known then.
type lifetimeStream struct{ f *lifetimeFold }

func (l lifetimeStream) step(si int, st *record.Step, clients []record.ClientGen) {
	l.f.step(si, st, clients)
}

func (l lifetimeStream) result(r *record.Result) []Violation { return l.finish(r) }

func (l lifetimeStream) segment(seg *record.Result) []Violation { return l.f.sends(seg.Sends) }

// finish takes the steps the run kept, then judges the last writes.
func (l lifetimeStream) finish(r *record.Result) []Violation {
	for i := range r.Steps {
		l.f.step(r.StepBase+i, &r.Steps[i], r.Clients)
	}
	return append(l.f.out, l.f.sends(r.Sends)...)
}
