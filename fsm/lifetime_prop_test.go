package fsm

import (
	"errors"
	"sort"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// lifetimeModel is an independent model of what a runtime sees while a Mux with a maximum
// connection lifetime runs. It recomputes the lifetime rules from the effects alone:
//
//   - the old connection is never closed before its replacement is published (a connection that
//     serves a slot is closed only after the slot routes elsewhere, or at shutdown);
//   - a published connection that is replaced drains (Close with Drain), and a drained
//     connection is never routed or granted again (accepted commands are never resent);
//   - at most one replacement is in flight per slot;
//   - every lifetime deadline lies in [lifetime, lifetime+jitter];
//   - every retry delay lies in [cap/2, cap], where the cap starts at 1 s, doubles up to 30 s and
//     resets when the slot publishes a new connection;
//   - a recycle never routes the slot away from its connection, never emits a disconnection and
//     never records reconnect attempts.
type lifetimeModel struct {
	t   *rapid.T
	cfg MuxConfig

	// serving is the connection each slot routes to (0: none).
	serving []ConnID
	// dials are the connections dialed and not yet resolved, by slot; recycleDial marks the
	// replacements (dialed while the slot was serving).
	dials       map[ConnID]int
	recycleDial map[ConnID]bool
	// established are the connections that finished their handshake and were not closed.
	established map[ConnID]int
	// closed are the connections the machine closed (drained or aborted).
	closed map[ConnID]bool
	// timers are the armed timers; lifetimeTimers marks those armed by lifetime steps.
	timers         map[TimerID]bool
	lifetimeTimers map[TimerID]bool
	// limit is the model's retry cap per slot.
	limit    []time.Duration
	shutdown bool
	waiters  map[WaiterID]bool
	nextWait WaiterID
}

func newLifetimeModel(t *rapid.T, cfg MuxConfig) *lifetimeModel {
	l := &lifetimeModel{
		t: t, cfg: cfg, serving: make([]ConnID, cfg.Slots), dials: map[ConnID]int{},
		recycleDial: map[ConnID]bool{}, established: map[ConnID]int{}, closed: map[ConnID]bool{},
		timers: map[TimerID]bool{}, lifetimeTimers: map[TimerID]bool{}, limit: make([]time.Duration, cfg.Slots),
		waiters: map[WaiterID]bool{},
	}
	for i := range l.limit {
		l.limit[i] = time.Second
	}
	return l
}

// apply checks the effects of one step and updates the model.
func (l *lifetimeModel) apply(m *Mux, ev *Event, effects []Effect, failuresBefore []int) {
	t := l.t
	recycleEvent := false
	switch ev.Kind {
	case Demanded:
		l.waiters[ev.Waiter] = true
	case TimerFired:
		recycleEvent = l.lifetimeTimers[ev.Timer] && l.timers[ev.Timer]
		delete(l.timers, ev.Timer)
	case DialFailed, ConnLost, HandshakeDone, DialSucceeded:
		recycleEvent = l.recycleDial[ev.Conn] && l.dials[ev.Conn] >= 0
		if _, ok := l.dials[ev.Conn]; !ok {
			recycleEvent = false
		}
	case Retired, Disposed:
		l.shutdown = true
	}
	var retrySlot = -1
	if recycleEvent && (ev.Kind == DialFailed || ev.Kind == ConnLost) {
		retrySlot = l.dials[ev.Conn]
	}
	if ev.Kind == HandshakeDone {
		if s, ok := l.dials[ev.Conn]; ok {
			delete(l.dials, ev.Conn)
			l.established[ev.Conn] = s
		}
	}
	if ev.Kind == DialFailed {
		delete(l.dials, ev.Conn)
	}
	if ev.Kind == ConnLost {
		delete(l.dials, ev.Conn)
		delete(l.established, ev.Conn)
	}
	routedThisStep := map[int]bool{}
	for i := range effects {
		f := &effects[i]
		switch f.Kind {
		case Dial:
			if l.shutdown {
				t.Fatalf("dial after shutdown: %v", f)
			}
			for c, s := range l.dials {
				if s == f.Slot && l.recycleDial[c] && l.serving[f.Slot] != 0 {
					t.Fatalf("slot %d: second replacement %v while %d is in flight", f.Slot, f, c)
				}
			}
			l.dials[f.Conn] = f.Slot
			if l.serving[f.Slot] != 0 {
				l.recycleDial[f.Conn] = true
				if f.Attempt != 0 {
					t.Fatalf("replacement dial with a policy attempt number: %v", f)
				}
				if !recycleEvent {
					t.Fatalf("replacement dialed outside a lifetime timer: %v after %v", f, ev)
				}
			}
		case Route:
			routedThisStep[f.Slot] = true
			if l.closed[f.Conn] {
				t.Fatalf("slot %d routed to closed connection %d", f.Slot, f.Conn)
			}
			if recycleEvent && f.Conn == 0 {
				t.Fatalf("a recycle routed slot %d away from its connection: %v", f.Slot, f)
			}
			if f.Conn != 0 && f.Conn != l.serving[f.Slot] {
				// A new connection is published: the retry cap resets.
				l.limit[f.Slot] = time.Second
			}
			l.serving[f.Slot] = f.Conn
		case Close:
			if s, ok := l.established[f.Conn]; ok && l.serving[s] == f.Conn && !l.shutdown {
				t.Fatalf("connection %d closed while it still serves slot %d", f.Conn, s)
			}
			if _, ok := l.established[f.Conn]; ok && !f.Drain && ev.Kind != Disposed {
				t.Fatalf("established connection %d closed without draining: %v", f.Conn, ev)
			}
			l.closed[f.Conn] = true
			delete(l.dials, f.Conn)
			delete(l.established, f.Conn)
		case ArmTimer:
			l.timers[f.Timer] = true
			switch {
			case ev.Kind == HandshakeDone && l.cfg.Lifetime > 0:
				l.lifetimeTimers[f.Timer] = true
				hi := l.cfg.Lifetime + l.cfg.LifetimeJitter
				if f.After < l.cfg.Lifetime || f.After > hi {
					t.Fatalf("deadline %v outside [%v, %v]", f.After, l.cfg.Lifetime, hi)
				}
			case retrySlot >= 0:
				l.lifetimeTimers[f.Timer] = true
				limit := l.limit[retrySlot]
				if f.After < limit/2 || f.After > limit {
					t.Fatalf("slot %d retry delay %v outside [%v, %v]", retrySlot, f.After, limit/2, limit)
				}
				l.limit[retrySlot] = min(2*limit, 30*time.Second)
			case recycleEvent:
				t.Fatalf("unexpected timer in a recycle step: %v", f)
			}
		case CancelTimer:
			delete(l.timers, f.Timer)
		case Emit:
			if recycleEvent && f.Lifecycle.SourceState != SourceConnected {
				t.Fatalf("a recycle emitted %v", &f.Lifecycle)
			}
		case Record:
			if recycleEvent && f.Metric.Instrument != InstrumentRecycled {
				t.Fatalf("a recycle recorded %v", f.Metric.Instrument.Name())
			}
		case Complete:
			if !l.waiters[f.Waiter] {
				t.Fatalf("complete for an unknown waiter: %v", f)
			}
			delete(l.waiters, f.Waiter)
			if f.Outcome == OutcomeGranted && (l.closed[f.Conn] || l.serving[f.Slot] != f.Conn) {
				t.Fatalf("granted connection %d, which does not serve slot %d", f.Conn, f.Slot)
			}
		}
	}
	if recycleEvent {
		for i := range failuresBefore {
			if m.SlotFailures(i) != failuresBefore[i] {
				t.Fatalf("a recycle changed slot %d's failure counter", i)
			}
		}
	}
	// At most one replacement in flight per slot.
	perSlot := map[int]int{}
	for c, s := range l.dials {
		if l.recycleDial[c] {
			perSlot[s]++
			if perSlot[s] > 1 {
				t.Fatalf("slot %d has %d replacements in flight", s, perSlot[s])
			}
		}
	}
}

func sortedTimerSet(m map[TimerID]bool) []TimerID {
	ids := make([]TimerID, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids
}

func sortedConnSet(m map[ConnID]int) []ConnID {
	ids := make([]ConnID, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids
}

// TestLifetimeProperties steps random timelines into a Mux with a maximum lifetime and checks the
// lifetime rules after every step, then replays the journal and compares the effects.
func TestLifetimeProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		cfg := drawConfig(t)
		cfg.Lifetime = time.Duration(rapid.Int64Range(int64(time.Millisecond), int64(time.Hour)).Draw(t, "lifetime"))
		if rapid.Bool().Draw(t, "jitter") {
			cfg.LifetimeJitter = time.Duration(rapid.Int64Range(1, int64(10*time.Minute)).Draw(t, "lifetime-jitter"))
		}
		m := NewMux(cfg)
		model := newLifetimeModel(t, cfg)
		var (
			out     Outbox
			journal []Event
			trace   []string
			now     time.Duration
			stale   []TimerID
		)
		step := func(ev Event) {
			now += time.Duration(rapid.Int64Range(0, int64(time.Second)).Draw(t, "advance"))
			ev.At = now
			ev.Draw = rapid.Float64Range(0, 0.999999).Draw(t, "draw")
			before := make([]int, cfg.Slots)
			for i := range before {
				before[i] = m.SlotFailures(i)
			}
			out.Reset()
			m.Step(&ev, &out)
			model.apply(m, &ev, out.Effects, before)
			journal = append(journal, ev)
			for i := range out.Effects {
				trace = append(trace, out.Effects[i].String())
			}
		}
		steps := rapid.IntRange(1, 150).Draw(t, "steps")
		for n := 0; n < steps; n++ {
			switch rapid.IntRange(0, 11).Draw(t, "action") {
			case 0:
				model.nextWait++
				step(Event{Kind: Demanded, Waiter: model.nextWait})
			case 1:
				step(Event{Kind: Noticed, Slot: rapid.IntRange(0, cfg.Slots-1).Draw(t, "slot")})
			case 2, 3:
				if cs := sortedConnSet(model.dials); len(cs) > 0 {
					c := rapid.SampledFrom(cs).Draw(t, "ready")
					if rapid.Bool().Draw(t, "dialed-first") {
						step(Event{Kind: DialSucceeded, Conn: c})
					}
					step(Event{Kind: HandshakeDone, Conn: c})
				}
			case 4, 5:
				if cs := sortedConnSet(model.dials); len(cs) > 0 {
					kind := DialFailed
					if rapid.Bool().Draw(t, "lost-during-handshake") {
						kind = ConnLost
					}
					step(Event{Kind: kind, Conn: rapid.SampledFrom(cs).Draw(t, "fail"), Err: errors.New("refused")})
				}
			case 6:
				if cs := sortedConnSet(model.established); len(cs) > 0 {
					step(Event{Kind: ConnLost, Conn: rapid.SampledFrom(cs).Draw(t, "lose"), Err: errors.New("reset")})
				}
			case 7, 8, 9:
				if ts := sortedTimerSet(model.timers); len(ts) > 0 {
					id := rapid.SampledFrom(ts).Draw(t, "timer")
					stale = append(stale, id)
					step(Event{Kind: TimerFired, Timer: id})
				} else if len(stale) > 0 {
					step(Event{Kind: TimerFired, Timer: rapid.SampledFrom(stale).Draw(t, "stale-timer")})
				}
			case 10:
				// A late loss of a closed (drained) connection.
				var closed []ConnID
				for c := range model.closed {
					closed = append(closed, c)
				}
				sort.Slice(closed, func(i, j int) bool { return closed[i] < closed[j] })
				if len(closed) > 0 {
					step(Event{Kind: ConnLost, Conn: rapid.SampledFrom(closed).Draw(t, "late-loss"), Err: errors.New("late")})
				}
			case 11:
				if rapid.IntRange(0, 14).Draw(t, "shutdown") == 0 {
					kind := Retired
					if rapid.Bool().Draw(t, "dispose") {
						kind = Disposed
					}
					step(Event{Kind: kind})
				}
			}
		}
		checkReplay(t, NewMux(cfg), journal, trace)
	})
}

// TestLifetimeArithmetic checks the deadline and retry arithmetic against a naive oracle.
func TestLifetimeArithmetic(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		lifetime := time.Duration(rapid.Int64Range(int64(time.Millisecond), int64(24*time.Hour)).Draw(t, "lifetime"))
		jitter := time.Duration(rapid.Int64Range(0, int64(time.Hour)).Draw(t, "jitter"))
		draw := rapid.Float64Range(0, 0.9999999).Draw(t, "draw")
		d := LifetimeDeadline(lifetime, jitter, draw)
		if d < lifetime || d > lifetime+jitter {
			t.Fatalf("deadline %v outside [%v, %v]", d, lifetime, lifetime+jitter)
		}
		// The n-th consecutive retry: the cap is 1s doubled n-1 times, at most 30s.
		n := rapid.IntRange(1, 12).Draw(t, "retry")
		limit := time.Duration(0)
		var delay time.Duration
		for i := 0; i < n; i++ {
			delay, limit = RecycleRetryDelay(limit, draw)
		}
		want := time.Second
		for i := 1; i < n; i++ {
			want *= 2
		}
		want = min(want, 30*time.Second)
		if delay < want/2 || delay > want {
			t.Fatalf("retry %d delay %v outside [%v, %v]", n, delay, want/2, want)
		}
		if next := min(2*want, 30*time.Second); limit != next {
			t.Fatalf("retry %d next cap %v, want %v", n, limit, next)
		}
	})
	if d, _ := RecycleRetryDelay(0, 0); d != 500*time.Millisecond {
		t.Fatalf("first retry lower edge %v", d)
	}
	if d := LifetimeDeadline(time.Minute, time.Minute, 2); d >= 2*time.Minute {
		t.Fatalf("out-of-range draw not clamped: %v", d)
	}
}

// TestLifetimeDisabledArmsNothing: without a lifetime, a connection's whole life arms no timer.
func TestLifetimeDisabledArmsNothing(t *testing.T) {
	m := NewMux(MuxConfig{Slots: 2})
	var out Outbox
	ev := Event{Kind: Demanded, Waiter: 1, Need: NeedAll}
	m.Step(&ev, &out)
	for _, f := range append([]Effect(nil), out.Effects...) {
		if f.Kind == Dial {
			e := Event{Kind: HandshakeDone, Conn: f.Conn, Draw: 0.5}
			m.Step(&e, &out)
		}
	}
	for _, f := range out.Effects {
		if f.Kind == ArmTimer {
			t.Fatalf("timer armed without lifetime or policy: %v", f)
		}
	}
}
