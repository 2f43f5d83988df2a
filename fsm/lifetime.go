package fsm

import (
	"strconv"
	"time"
)

// Maximum connection lifetime (spec "Maximum connection lifetime").
//
// With MuxConfig.Lifetime set, every command-slot connection gets its own deadline once its
// handshake succeeded: Lifetime plus LifetimeJitter scaled by the draw of the HandshakeDone event
// that made it ready (additive, uniform in [0, LifetimeJitter)). At the deadline the slot dials a
// replacement while the old connection keeps serving. When the replacement is ready it is
// published (Route) and the old connection is closed with Drain: the commands it accepted finish
// on it and are never resent. When the replacement's setup fails, or it closes before it was
// published, the old connection stays in use and the replacement is retried after a delay drawn
// uniformly from [cap/2, cap), where the retry cap starts at RecycleRetryCapInitial and doubles up
// to RecycleRetryCapMax; a publication resets the cap.
//
// A recycle is not a failure: it never counts against the reconnect policy, never changes the
// slot's state (it stays ready throughout) and never emits a disconnection. It emits two
// informational observations: Lifecycle.Recycle is RecyclePublished when a replacement was
// published (with a Record of InstrumentRecycled), and RecycleRetrying when a replacement failed
// and will be retried after Lifecycle.NextDelay.
//
// When the old connection fails while its replacement is in flight, the replacement is abandoned
// (closed, or its retry timer cancelled) and the slot recovers through the ordinary path: the
// failure is an ordinary failure. With Lifetime zero no lifetime timer is ever armed and none of
// this runs.

const (
	// RecycleRetryCapInitial is the retry cap of a lifetime replacement's first retry: its delay
	// lies in [0.5 s, 1 s).
	RecycleRetryCapInitial = time.Second
	// RecycleRetryCapMax bounds the retry cap: later retries wait between 15 s and 30 s.
	RecycleRetryCapMax = 30 * time.Second
)

// LifetimeDeadline returns the age at which a connection is replaced: lifetime plus jitter scaled
// by draw, a number in [0, 1). The jitter is additive, so the deadline lies in
// [lifetime, lifetime+jitter).
func LifetimeDeadline(lifetime, jitter time.Duration, draw float64) time.Duration {
	if jitter <= 0 {
		return lifetime
	}
	return lifetime + time.Duration(float64(jitter)*clampDraw(draw))
}

// RecycleRetryDelay returns the delay before the next attempt of a failed lifetime replacement
// under retry cap limit (zero means RecycleRetryCapInitial), drawn uniformly from
// [limit/2, limit) with draw in [0, 1), and the cap of the retry after it: twice limit, at most
// RecycleRetryCapMax.
func RecycleRetryDelay(limit time.Duration, draw float64) (delay, next time.Duration) {
	if limit <= 0 {
		limit = RecycleRetryCapInitial
	}
	low := limit / 2
	delay = low + time.Duration(float64(limit-low)*clampDraw(draw))
	next = min(2*limit, RecycleRetryCapMax)
	return delay, next
}

// RecycleState says what a lifetime observation reports.
type RecycleState uint8

// Lifetime observation kinds (Lifecycle.Recycle).
const (
	// RecycleNone: the observation is not about lifetime recycling.
	RecycleNone RecycleState = iota
	// RecyclePublished: the aged connection's replacement was published for new commands; the
	// aged connection drains.
	RecyclePublished
	// RecycleRetrying: the replacement failed (Lifecycle.Err); the aged connection stays in use
	// and the replacement is retried after Lifecycle.NextDelay.
	RecycleRetrying
)

var recycleStateNames = [...]string{"none", "published", "retrying"}

// String returns "none", "published" or "retrying".
func (r RecycleState) String() string {
	if int(r) < len(recycleStateNames) {
		return recycleStateNames[r]
	}
	return "recycle(" + strconv.Itoa(int(r)) + ")"
}

// recyclePhase is where a slot's lifetime work stands.
type recyclePhase uint8

const (
	// recycleIdle: no lifetime work (lifetime disabled, or no ready connection).
	recycleIdle recyclePhase = iota
	// recycleAging: the ready connection's deadline timer is armed.
	recycleAging
	// recycleDialing: a replacement is connecting or handshaking; the old connection serves.
	recycleDialing
	// recycleBackoff: a replacement failed; the retry timer is armed; the old connection serves.
	recycleBackoff
)

// recycle is the lifetime state of one command slot.
type recycle struct {
	phase recyclePhase
	// timer is the deadline timer (aging) or the retry timer (backoff).
	timer TimerID
	// conn is the replacement in flight (dialing).
	conn ConnID
	// limit is the retry cap of the next failed replacement (zero: RecycleRetryCapInitial).
	limit time.Duration
}

// age arms the lifetime deadline of slot i's connection, which just became ready; draw is the
// uniform draw of the event that made it ready.
func (m *Mux) age(i int, draw float64, out *Outbox) {
	if m.cfg.Lifetime <= 0 {
		return
	}
	s := &m.slots[i]
	s.life = recycle{phase: recycleAging, timer: m.ids.timer()}
	out.add(Effect{Kind: ArmTimer, Timer: s.life.timer, After: LifetimeDeadline(m.cfg.Lifetime, m.cfg.LifetimeJitter, draw)})
}

// abandonRecycle stops slot i's lifetime work: its connection is going away. A replacement in
// flight is closed; an armed timer is cancelled.
func (m *Mux) abandonRecycle(i int, out *Outbox) {
	s := &m.slots[i]
	if s.move.on {
		m.stopMove(i, out)
	}
	switch s.life.phase {
	case recycleIdle:
		return
	case recycleAging, recycleBackoff:
		out.add(Effect{Kind: CancelTimer, Timer: s.life.timer})
	case recycleDialing:
		out.add(Effect{Kind: Close, Conn: s.life.conn})
	}
	s.life = recycle{}
}

// stepLifetime handles the events that concern lifetime work: the timers it armed and the
// replacements it dialed. It reports whether ev was consumed.
func (m *Mux) stepLifetime(ev *Event, out *Outbox) bool {
	switch ev.Kind {
	case TimerFired:
		for i := range m.slots {
			s := &m.slots[i]
			if (s.life.phase == recycleAging || s.life.phase == recycleBackoff) && s.life.timer == ev.Timer {
				m.replace(i, out)
				return true
			}
		}
	case DialSucceeded:
		return m.replacementOf(ev.Conn) >= 0
	case HandshakeDone:
		if i := m.replacementOf(ev.Conn); i >= 0 {
			m.publish(i, ev, out)
			return true
		}
	case DialFailed, ConnLost:
		if i := m.replacementOf(ev.Conn); i >= 0 {
			m.retryReplacement(i, ev, out)
			return true
		}
	}
	return false
}

// replacementOf returns the slot whose replacement in flight is c, or -1.
func (m *Mux) replacementOf(c ConnID) int {
	if c == 0 {
		return -1
	}
	for i := range m.slots {
		if s := &m.slots[i]; s.life.phase == recycleDialing && s.life.conn == c {
			return i
		}
	}
	return -1
}

// replace dials a replacement for slot i's aged connection, which keeps serving meanwhile.
func (m *Mux) replace(i int, out *Outbox) {
	s := &m.slots[i]
	s.life.phase = recycleDialing
	s.life.timer = 0
	s.life.conn = m.ids.conn()
	out.add(Effect{Kind: Dial, Slot: i, Conn: s.life.conn})
}

// publish routes slot i to its ready replacement and drains the aged connection.
func (m *Mux) publish(i int, ev *Event, out *Outbox) {
	s := &m.slots[i]
	old := s.a.adopt(s.life.conn)
	s.life = recycle{}
	m.route(i, out)
	out.add(Effect{Kind: Close, Conn: old, Drain: true})
	out.add(Effect{Kind: Record, Metric: Metric{Instrument: InstrumentRecycled, Source: SourceCommand, Value: 1}})
	m.emitRecycle(i, RecyclePublished, 0, nil, out)
	m.age(i, ev.Draw, out)
}

// retryReplacement schedules the next replacement of slot i after its replacement failed.
func (m *Mux) retryReplacement(i int, ev *Event, out *Outbox) {
	s := &m.slots[i]
	delay, next := RecycleRetryDelay(s.life.limit, ev.Draw)
	s.life = recycle{phase: recycleBackoff, timer: m.ids.timer(), limit: next}
	out.add(Effect{Kind: ArmTimer, Timer: s.life.timer, After: delay})
	m.emitRecycle(i, RecycleRetrying, delay, ev.Err, out)
}

func (m *Mux) emitRecycle(i int, r RecycleState, delay time.Duration, err error, out *Outbox) {
	m.emit(i, Lifecycle{SourceState: SourceConnected, Recycle: r, NextDelay: delay, Err: err}, out)
}
