package fsm

import (
	"errors"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// fenceRun drives a Fence with random events and checks its rules after every step against a
// model that knows only what the events said. It records the events for replay.
type fenceRun struct {
	t       *rapid.T
	f       *Fence
	out     Outbox
	at      time.Duration
	journal []Event
	effects []string

	kills    int
	owed     map[ConnID]bool   // obligations that arose and were not discharged
	unknown  map[ConnID]bool   // connections that ended unidentified
	dialing  map[ConnID]ConnID // open control connection -> owed connection
	killing  map[ConnID]ConnID // control connection whose kill was sent -> owed connection
	timers   []TimerID
	waiting  map[WaiterID]ConnID
	answered map[WaiterID]bool
	nextConn ConnID
	nextW    WaiterID
	disposed bool
}

func (r *fenceRun) step(ev Event) {
	r.at += time.Duration(rapid.IntRange(0, 3000).Draw(r.t, "advance")) * time.Millisecond
	ev.At = r.at
	r.journal = append(r.journal, ev)
	answeredOwed, answering := r.killing[ev.Conn]
	answering = answering && ev.Kind == Killed && ev.Err == nil && !r.disposed
	r.out.Reset()
	r.f.Step(&ev, &r.out)
	for i := range r.out.Effects {
		r.effects = append(r.effects, r.out.Effects[i].String())
		r.observe(&ev, &r.out.Effects[i])
	}
	if answering {
		delete(r.owed, answeredOwed)
	}
	for c := range r.owed {
		if !r.f.Owes(c) {
			r.t.Fatalf("obligation of %v dropped without a kill's answer (after %v)", c, ev)
		}
	}
	if got := len(r.f.Undischarged()); got != len(r.owed) {
		r.t.Fatalf("%d undischarged, the model has %d", got, len(r.owed))
	}
	if r.kills > r.f.cfg.MaxKills {
		r.t.Fatalf("%d control connections open, bound %d", r.kills, r.f.cfg.MaxKills)
	}
}

func (r *fenceRun) observe(ev *Event, e *Effect) {
	switch e.Kind {
	case Dial:
		if r.disposed {
			r.t.Fatalf("dial after disposal: %v", e)
		}
		owed := ConnID(0)
		for _, d := range r.f.Undischarged() {
			if d.Peer == e.Endpoint {
				owed = d.Owed
			}
		}
		if owed == 0 {
			r.t.Fatalf("dial to %v that no obligation names", e.Endpoint)
		}
		r.dialing[e.Conn] = owed
		r.kills++
	case Kill:
		if r.disposed {
			r.t.Fatalf("kill after disposal: %v", e)
		}
		if _, ok := r.dialing[e.Conn]; !ok {
			r.t.Fatalf("kill on %v, not an open control connection", e.Conn)
		}
		r.killing[e.Conn] = e.Fence.Owed
		delete(r.dialing, e.Conn)
	case Close:
		if _, ok := r.dialing[e.Conn]; ok {
			delete(r.dialing, e.Conn)
			r.kills--
		}
		if _, ok := r.killing[e.Conn]; ok {
			delete(r.killing, e.Conn)
			r.kills--
		}
	case ArmTimer:
		r.timers = append(r.timers, e.Timer)
	case Complete:
		if r.answered[e.Waiter] {
			r.t.Fatalf("waiter %d answered twice", e.Waiter)
		}
		r.answered[e.Waiter] = true
		owed := r.waiting[e.Waiter]
		delete(r.waiting, e.Waiter)
		switch e.Outcome {
		case OutcomeGranted:
			if r.owed[owed] && !(ev.Kind == Killed && ev.Err == nil) {
				r.t.Fatalf("waiter %d granted while %v still owes", e.Waiter, owed)
			}
			if r.unknown[owed] {
				r.t.Fatalf("waiter %d granted for unidentified %v", e.Waiter, owed)
			}
		case OutcomeFailed:
			// ErrNoIdentity is conservative: an old connection below the watermark of forgotten
			// unidentified ones may get it, but never one that still owes.
			if r.unknown[owed] && !errors.Is(e.Err, ErrNoIdentity) || errors.Is(e.Err, ErrNoIdentity) && r.owed[owed] {
				r.t.Fatalf("waiter %d failed with %v for %v", e.Waiter, e.Err, owed)
			}
		}
	}
	if ev.Kind == DialFailed || ev.Kind == ConnLost || ev.Kind == Killed {
		// The machine forgets a failed control connection without a Close when it never
		// became ready.
		if _, ok := r.dialing[ev.Conn]; ok && e.Kind == ArmTimer {
			delete(r.dialing, ev.Conn)
			r.kills--
		}
	}
}

func (r *fenceRun) pickControl(open map[ConnID]ConnID) (ConnID, bool) {
	if len(open) == 0 {
		return 0, false
	}
	ids := make([]ConnID, 0, len(open))
	for c := range open {
		ids = append(ids, c)
	}
	slices.Sort(ids)
	return rapid.SampledFrom(ids).Draw(r.t, "control"), true
}

func (r *fenceRun) action() {
	switch rapid.IntRange(0, 9).Draw(r.t, "action") {
	case 0, 1:
		r.nextConn++
		id := int64(0)
		if rapid.IntRange(0, 4).Draw(r.t, "identified") > 0 {
			id = int64(r.nextConn) + 100
			if !r.unknown[r.nextConn] {
				r.owed[r.nextConn] = true
			}
		} else {
			r.unknown[r.nextConn] = true
		}
		peer := Endpoint{Host: "10.0.0.1", Port: 6000 + int(r.nextConn)}
		r.step(Event{Kind: Owed, Conn: r.nextConn, Fence: &FenceData{Owed: r.nextConn, ClientID: id, Peer: peer}})
	case 2:
		r.nextW++
		c := ConnID(rapid.IntRange(1, int(r.nextConn)+1).Draw(r.t, "settle"))
		r.waiting[r.nextW] = c
		r.step(Event{Kind: Demanded, Machine: MachineFence, Waiter: r.nextW, Conn: c})
	case 3:
		if r.nextW > 0 {
			r.step(Event{Kind: Withdrew, Machine: MachineFence, Waiter: WaiterID(rapid.IntRange(1, int(r.nextW)).Draw(r.t, "withdraw"))})
		}
	case 4:
		if c, ok := r.pickControl(r.dialing); ok {
			if rapid.Bool().Draw(r.t, "connects") {
				r.step(Event{Kind: HandshakeDone, Conn: c})
			} else {
				r.step(Event{Kind: DialFailed, Conn: c, Err: errors.New("refused")})
			}
		}
	case 5, 6:
		if c, ok := r.pickControl(r.killing); ok {
			switch rapid.IntRange(0, 3).Draw(r.t, "answer") {
			case 0:
				r.step(Event{Kind: ConnLost, Conn: c, Err: errors.New("reset")})
			case 1:
				r.step(Event{Kind: Killed, Conn: c, Err: errors.New("NOPERM"), Class: Permanent})
			default:
				r.step(Event{Kind: Killed, Conn: c})
			}
		}
	case 7, 8:
		if len(r.timers) > 0 {
			i := rapid.IntRange(0, len(r.timers)-1).Draw(r.t, "timer")
			tm := r.timers[i]
			r.timers = append(r.timers[:i], r.timers[i+1:]...)
			r.step(Event{Kind: TimerFired, Timer: tm})
		}
	case 9:
		if rapid.IntRange(0, 9).Draw(r.t, "dispose") == 0 {
			r.disposed = true
			r.step(Event{Kind: Disposed})
		} else {
			r.step(Event{Kind: Retired})
		}
	}
}

// TestFenceProperties: obligations are dropped only by their kill's answer (never by failures,
// timers, retirement or disposal), control connections stay within their bound, no attempt
// starts after disposal, each waiter is answered at most once and never granted while its
// connection still owes, and replaying the journal into a fresh machine reproduces every effect.
func TestFenceProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		cfg := FenceConfig{IDBase: IDBase(MachineFence), MaxKills: rapid.IntRange(1, 3).Draw(t, "kills"),
			MaxForgotten: rapid.IntRange(1, 4).Draw(t, "forgotten")}
		r := &fenceRun{t: t, f: NewFence(cfg), owed: map[ConnID]bool{}, unknown: map[ConnID]bool{},
			dialing: map[ConnID]ConnID{}, killing: map[ConnID]ConnID{}, waiting: map[WaiterID]ConnID{},
			answered: map[WaiterID]bool{}}
		for n := rapid.IntRange(1, 120).Draw(t, "steps"); n > 0; n-- {
			r.action()
		}
		// Every undischarged obligation outlives whatever happened.
		if len(r.f.Undischarged()) != len(r.owed) {
			t.Fatalf("undischarged %v, model %v", r.f.Undischarged(), r.owed)
		}
		// Replay.
		replay := NewFence(cfg)
		var out Outbox
		var got []string
		for i := range r.journal {
			out.Reset()
			replay.Step(&r.journal[i], &out)
			for j := range out.Effects {
				got = append(got, out.Effects[j].String())
			}
		}
		if !slices.Equal(got, r.effects) {
			t.Fatalf("replay diverged:\n%v\n%v", got, r.effects)
		}
		if replay.Describe() != r.f.Describe() {
			t.Fatalf("replayed state %q, original %q", replay.Describe(), r.f.Describe())
		}
	})
}
