package fsm

import (
	"strconv"
	"time"
)

// SlotState is the state of one command slot.
type SlotState uint8

// Command slot states.
const (
	// SlotFresh: never connected; the first demand dials.
	SlotFresh SlotState = iota
	// SlotScheduled: a policy delay runs before the next attempt.
	SlotScheduled
	// SlotConnecting: an attempt is dialing.
	SlotConnecting
	// SlotHandshaking: an attempt's transport is up and its handshake runs.
	SlotHandshaking
	// SlotReady: the slot has a ready connection.
	SlotReady
	// SlotFailed: the last attempt failed; the next use starts another one.
	SlotFailed
	// SlotExhausted: the slot reached the policy's attempt limit. Sticky.
	SlotExhausted
	// SlotRetired: the generation was retired or disposed. Terminal.
	SlotRetired
	// SlotResting: an attempt that no policy governs failed; the slot waits out the no-policy
	// spacing (NoPolicyWait) and then awaits use (SlotFailed). Nothing dials meanwhile.
	SlotResting
)

var slotStateNames = [...]string{"fresh", "scheduled", "connecting", "handshaking", "ready",
	"failed", "exhausted", "retired", "resting"}

// String returns the lower-case name of the state.
func (s SlotState) String() string {
	if int(s) < len(slotStateNames) {
		return slotStateNames[s]
	}
	return "slot-state(" + strconv.Itoa(int(s)) + ")"
}

// InProgress reports whether an attempt is scheduled or running.
func (s SlotState) InProgress() bool {
	return s == SlotScheduled || s == SlotConnecting || s == SlotHandshaking
}

// AwaitsUse reports whether the slot starts an attempt when it is next used.
func (s SlotState) AwaitsUse() bool { return s == SlotFresh || s == SlotFailed }

// DefaultMaxWaiters is the bound on pending demands of a Mux when MuxConfig.MaxWaiters is zero.
const DefaultMaxWaiters = 1 << 16

// MuxConfig configures a Mux. Validate checks it; NewMux refuses an invalid one.
type MuxConfig struct {
	// Slots is the number of multiplexed connections, 1 to MaxSlots.
	Slots int
	// Policy is the reconnect policy, or nil for none. It must be valid.
	Policy *Policy
	// MaxWaiters bounds pending demands; zero means DefaultMaxWaiters, and negative values are
	// invalid. A demand beyond the bound completes at once with OutcomeOverflow.
	MaxWaiters int
	// IDBase is added to every ConnID and TimerID the machine allocates, so that several machines
	// can share one runtime without clashing identifiers. It must be IDBase(m) for some machine m
	// (zero is MachineMux's).
	IDBase uint64
	// Lifetime, when positive, is the maximum connection lifetime: each connection is replaced
	// after Lifetime plus a jittered extra (see LifetimeDeadline and lifetime.go). Zero disables
	// recycling: no lifetime timer is ever armed.
	Lifetime time.Duration
	// LifetimeJitter is the largest extra lifetime drawn per connection, uniformly and additively.
	// It must not be negative, and requires Lifetime.
	LifetimeJitter time.Duration
}

// slot is the recovery state of one command slot.
type slot struct {
	// a is the slot's attempt sub-machine (attempt.go). Its phase is the slot's state (slotStates);
	// it holds the connection being attempted or the ready one, the timer of a policy delay or a
	// rest, the policy attempt number (0: an initial connection, or no policy), the consecutive
	// failures since the slot was last ready (the n-th failure that no policy governs rests the
	// slot for NoPolicyWait(n)), and the slot's last connection error.
	a attempt
	// replacing is true once the slot has been ready: its attempts are replacements, governed by
	// the policy. Before that, attempts are initial connections: immediate and uncounted.
	replacing bool
	// life is the slot's lifetime recycling work (lifetime.go).
	life recycle
	// move is the slot's MOVING handoff (maint_handoff.go).
	move handoff
}

// slotStates maps an attempt's phase to the state of the slot that owns it. A slot always has a
// next attempt, so it is never depleted.
var slotStates = [...]SlotState{
	attemptIdle:        SlotFresh,
	attemptScheduled:   SlotScheduled,
	attemptDialing:     SlotConnecting,
	attemptHandshaking: SlotHandshaking,
	attemptReady:       SlotReady,
	attemptFailed:      SlotFailed,
	attemptExhausted:   SlotExhausted,
	attemptStopped:     SlotRetired,
	attemptResting:     SlotResting,
	attemptDepleted:    SlotFailed,
}

// state returns the slot's state.
func (s *slot) state() SlotState { return slotStates[s.a.phase] }

// awaitsUse reports whether the slot starts an attempt when it is next used.
func (s *slot) awaitsUse() bool { return s.a.phase == attemptIdle || s.a.phase == attemptFailed }

type pending struct {
	waiter WaiterID
	need   Need
}

// Mux is the command-slot machine of one multiplexer generation: Slots connections to one
// endpoint, each replaced on demand after failure under the reconnect policy.
//
// Rules (spec "Connection recovery"):
//   - A ready connection that fails is replaced at once: without a policy the replacement dials
//     immediately, with one it waits InitialDelay first. A failed replacement is retried on the
//     next use of the slot, after the policy's next delay.
//   - One use starts at most one attempt. A use is a Noticed event (a command served by another
//     slot passed this one, which awaits use) or a NeedAny Demanded event (a command found no
//     ready slot). A notice retries the slot it names. A demand joins an attempt in progress on
//     any slot; only when none is in progress does it retry one failed slot, the next in
//     round-robin order from the last one a demand retried. Concurrent demands share that
//     attempt, and a slot has at most one attempt.
//   - Attempts that no policy governs (every attempt without a policy; initial connections with
//     one) are spaced per slot by the no-policy schedule: after the n-th consecutive failure the
//     slot rests (SlotResting) for NoPolicyWait(n), 250 ms doubling up to 5 s, and only then
//     awaits use. The rest's timer only reopens the slot to use; it never dials. So a slot dials
//     at most once per rest against a refusing endpoint, whatever the command rate. A ready
//     connection resets the spacing.
//   - A NeedAny demand that finds no ready slot, no attempt in progress and no slot it may retry
//     (every slot resting or exhausted) fails at once with OutcomeFailed and the last connection
//     error: it does not wait out a rest.
//   - The per-slot counter counts consecutive failed replacements; a ready connection resets it,
//     so a peer that accepts and then drops starts every episode at attempt 1.
//   - A slot whose failures reach MaxAttempts is exhausted for the life of the generation; other
//     slots keep serving. When every slot is exhausted, demands fail with OutcomeExhausted. A
//     NeedAll demand fails as soon as any slot is exhausted.
//   - Retired and Disposed cancel scheduled delays and attempts in progress.
//
// Initial connections (before a slot was ever ready) are not governed by the policy. The first
// demand dials every fresh slot at once (a slot's first attempt happens once in its life); a
// failed initial attempt is retried, immediately, by a later use once the slot's rest is over.
// NeedAll demands (eager connect) start every slot that awaits use, and fail at once when a slot
// is resting or exhausted.
//
// With MuxConfig.Lifetime set, ready connections are also replaced when they reach their maximum
// lifetime: the replacement is dialed and validated while the old connection keeps serving, then
// published, and the old connection drains. See lifetime.go for the rules.
type Mux struct {
	cfg MuxConfig
	// ids allocates every ConnID and TimerID of the machine, slots and lifetime work alike.
	ids ids
	// rules are what the slots' attempts share.
	rules   attemptRules
	slots   []slot
	waiters []pending
	rr      int
	// revive is where a demand's search for a failed slot to retry starts (round robin).
	revive  int
	closed  bool
	lastErr error
}

// NewMux returns a machine for cfg. It panics with cfg.Validate's *ConfigError when cfg is
// invalid: the caller validates options before building machines.
func NewMux(cfg MuxConfig) *Mux {
	if err := cfg.Validate(); err != nil {
		panic(err)
	}
	if cfg.MaxWaiters <= 0 {
		cfg.MaxWaiters = DefaultMaxWaiters
	}
	m := &Mux{cfg: cfg, ids: newIDs(cfg.IDBase, 0), slots: make([]slot, cfg.Slots)}
	m.rules = attemptRules{policy: cfg.Policy, backoff: noPolicyBackoff(), source: SourceCommand, ids: &m.ids}
	for i := range m.slots {
		m.slots[i].a = newAttempt(&m.rules, i, 0)
	}
	return m
}

// Slots returns the number of slots.
func (m *Mux) Slots() int { return len(m.slots) }

// SlotState returns the state of slot i.
func (m *Mux) SlotState(i int) SlotState { return m.slots[i].state() }

// SlotFailures returns the consecutive failed replacements of slot i in its current episode
// (failed initial connections are not replacements).
func (m *Mux) SlotFailures(i int) int {
	if s := &m.slots[i]; s.replacing {
		return s.a.failures
	}
	return 0
}

// Pending returns the number of pending demands.
func (m *Mux) Pending() int { return len(m.waiters) }

// Step applies ev and appends the resulting effects to out.
func (m *Mux) Step(ev *Event, out *Outbox) {
	if m.stepMoving(ev, out) {
		return
	}
	if m.cfg.Lifetime > 0 && m.stepLifetime(ev, out) {
		return
	}
	switch ev.Kind {
	case Demanded:
		m.demanded(ev, out)
	case Noticed:
		if !m.closed && ev.Slot >= 0 && ev.Slot < len(m.slots) && m.slots[ev.Slot].awaitsUse() {
			m.start(ev.Slot, ev, out)
		}
	case Withdrew:
		m.withdrew(ev.Waiter, out)
	case DialSucceeded:
		if i := m.slotOf(ev.Conn); i >= 0 && m.slots[i].a.phase == attemptDialing {
			m.slots[i].a.becomeHandshaking()
		} else if i < 0 {
			m.closeStray(ev.Conn, out)
		}
	case HandshakeDone:
		if i := m.slotOf(ev.Conn); i >= 0 {
			if m.slots[i].a.phase == attemptDialing || m.slots[i].a.phase == attemptHandshaking {
				m.ready(i, ev.Draw, out)
			}
		} else {
			m.closeStray(ev.Conn, out)
		}
	case DialFailed:
		if i := m.slotOf(ev.Conn); i >= 0 {
			if m.slots[i].a.phase == attemptDialing || m.slots[i].a.phase == attemptHandshaking {
				m.failed(i, ev.Err, out)
			}
		}
	case ConnLost:
		if i := m.slotOf(ev.Conn); i >= 0 {
			switch m.slots[i].a.phase {
			case attemptReady:
				m.lost(i, ev, out)
			case attemptDialing, attemptHandshaking:
				m.failed(i, ev.Err, out)
			}
		}
	case TimerFired:
		for i := range m.slots {
			s := &m.slots[i]
			if s.a.timer != ev.Timer || ev.Timer == 0 {
				continue
			}
			switch s.a.phase {
			case attemptScheduled:
				m.dial(i, out)
			case attemptResting:
				// The rest is over: the slot awaits its next use. Nothing dials now.
				s.a.endRest()
				m.route(i, out)
			}
			return
		}
	case Retired:
		m.retire(out)
	case Disposed:
		m.dispose(out)
	case Published:
		m.renewSlots(out)
	}
}

func (m *Mux) demanded(ev *Event, out *Outbox) {
	if m.closed {
		out.add(Effect{Kind: Complete, Waiter: ev.Waiter, Outcome: OutcomeClosed})
		return
	}
	switch ev.Need {
	case NeedAny:
		if i := m.pickReady(); i >= 0 {
			m.grant(ev.Waiter, i, out)
			return
		}
		if m.allExhausted() {
			out.add(Effect{Kind: Complete, Waiter: ev.Waiter, Outcome: OutcomeExhausted, Err: m.lastErr})
			return
		}
	case NeedAll:
		if i := m.firstExhausted(); i >= 0 {
			out.add(Effect{Kind: Complete, Waiter: ev.Waiter, Outcome: OutcomeExhausted, Err: m.slots[i].a.err})
			return
		}
		if m.allReady() {
			m.grant(ev.Waiter, m.pickReady(), out)
			return
		}
		if i := m.firstResting(); i >= 0 {
			// A slot that failed cannot be ready before its rest ends and a use retries it.
			out.add(Effect{Kind: Complete, Waiter: ev.Waiter, Outcome: OutcomeFailed, Err: m.slots[i].a.err})
			return
		}
	}
	if len(m.waiters) >= m.cfg.MaxWaiters {
		out.add(Effect{Kind: Complete, Waiter: ev.Waiter, Outcome: OutcomeOverflow})
		return
	}
	if ev.Need == NeedAll {
		m.waiters = append(m.waiters, pending{waiter: ev.Waiter, need: ev.Need})
		for i := range m.slots {
			if m.slots[i].awaitsUse() {
				m.start(i, ev, out)
			}
		}
		return
	}
	// NeedAny: the initial connections of fresh slots, else one retry unless an attempt is
	// already in progress for the waiters to share.
	fresh := false
	for i := range m.slots {
		if m.slots[i].a.phase == attemptIdle {
			fresh = true
			m.start(i, ev, out)
		}
	}
	if !fresh && !m.anyInProgress() {
		if i := m.nextFailed(); i >= 0 {
			m.start(i, ev, out)
		}
	}
	if !m.anyInProgress() {
		// Every slot rests or is exhausted: nothing will serve this demand until a later use.
		out.add(Effect{Kind: Complete, Waiter: ev.Waiter, Outcome: OutcomeFailed, Err: m.lastErr})
		return
	}
	m.waiters = append(m.waiters, pending{waiter: ev.Waiter, need: ev.Need})
}

// nextFailed returns the next slot in round-robin order that awaits a retry (SlotFailed), and
// moves the cursor past it, or returns -1.
func (m *Mux) nextFailed() int {
	n := len(m.slots)
	for k := 0; k < n; k++ {
		i := (m.revive + k) % n
		if m.slots[i].a.phase == attemptFailed {
			m.revive = i + 1
			return i
		}
	}
	return -1
}

// anyInProgress reports whether some slot has an attempt scheduled or running.
func (m *Mux) anyInProgress() bool {
	for i := range m.slots {
		if m.slots[i].a.inProgress() {
			return true
		}
	}
	return false
}

// firstResting returns the first resting slot, or -1.
func (m *Mux) firstResting() int {
	for i := range m.slots {
		if m.slots[i].a.phase == attemptResting {
			return i
		}
	}
	return -1
}

// spread derives a distinct uniform draw for slot i from one event's draw, so that slots kicked by
// the same demand do not share their jitter.
func spread(draw float64, i int) float64 {
	const golden = 0.6180339887498949
	v := clampDraw(draw) + float64(i)*golden
	return v - float64(int64(v))
}

func (m *Mux) withdrew(w WaiterID, out *Outbox) {
	for i, p := range m.waiters {
		if p.waiter == w {
			m.waiters = append(m.waiters[:i], m.waiters[i+1:]...)
			out.add(Effect{Kind: Complete, Waiter: w, Outcome: OutcomeCancelled})
			return
		}
	}
}

// start begins the next attempt of slot i, which awaits use.
func (m *Mux) start(i int, ev *Event, out *Outbox) {
	if !m.slots[i].replacing || m.rules.policy == nil {
		// Initial connections and policy-less replacements dial at once.
		m.dial(i, out)
		m.emit(i, Lifecycle{SourceState: SourceConnecting}, out)
		return
	}
	m.schedule(i, spread(ev.Draw, i), out)
}

// schedule arranges the next policy attempt of slot i after its delay.
func (m *Mux) schedule(i int, draw float64, out *Outbox) {
	s := &m.slots[i]
	delay := s.a.plan(draw, out)
	scheduled := Lifecycle{SourceState: SourceConnecting, Attempt: s.a.n, NextDelay: delay, Scheduled: true}
	if delay <= 0 {
		// The observation of the scheduled attempt precedes the dial it announces.
		m.emit(i, scheduled, out)
		m.dial(i, out)
		return
	}
	s.a.becomeScheduled(delay, out)
	m.route(i, out)
	m.emit(i, scheduled, out)
}

func (m *Mux) dial(i int, out *Outbox) {
	m.slots[i].a.becomeDialing(out)
	m.route(i, out)
}

// ready publishes slot i's connection, which finished its handshake; draw is the event's draw,
// which sets the connection's lifetime deadline when recycling is on.
func (m *Mux) ready(i int, draw float64, out *Outbox) {
	s := &m.slots[i]
	attempt := s.a.n
	s.a.becomeReady()
	s.replacing = true
	m.route(i, out)
	m.emit(i, Lifecycle{SourceState: SourceConnected, Attempt: attempt}, out)
	m.age(i, draw, out)
	// Answer waiters this slot can serve.
	all := m.allReady()
	kept := m.waiters[:0]
	for _, p := range m.waiters {
		if p.need == NeedAny || all {
			m.grant(p.waiter, i, out)
			continue
		}
		kept = append(kept, p)
	}
	m.waiters = kept
}

// lost handles the failure of slot i's ready connection: a new episode starts at once.
func (m *Mux) lost(i int, ev *Event, out *Outbox) {
	m.abandonRecycle(i, out)
	m.slots[i].a.lose(ev.Err)
	m.lastErr = ev.Err
	m.route(i, out)
	m.emit(i, Lifecycle{SourceState: SourceDisconnected, Err: ev.Err}, out)
	m.start(i, ev, out)
}

// failed handles a failed attempt of slot i.
func (m *Mux) failed(i int, err error, out *Outbox) {
	s := &m.slots[i]
	s.a.fail(err)
	m.lastErr = err
	// Initial connections are not governed by the policy, whatever it is.
	ruling := rulingUngoverned
	if s.replacing {
		ruling = s.a.decide(true)
	}
	switch ruling {
	case rulingUngoverned:
		// No policy governs the next attempt: the slot rests before a use may retry it.
		s.a.becomeResting(s.a.wait(), out)
	case rulingExhausted:
		s.a.becomeExhausted(out)
	case rulingRetry:
		// The policy spaces the next attempt: the next use schedules it after its delay.
	}
	m.route(i, out)
	m.emit(i, Lifecycle{SourceState: SourceDisconnected, Attempt: s.a.n, Exhausted: ruling == rulingExhausted, Err: err}, out)
	m.settleWaiters(i, out)
}

// settleWaiters fails the waiters that can no longer be served after slot i failed: NeedAll
// waiters at once, NeedAny waiters when no slot is ready or in progress.
func (m *Mux) settleWaiters(i int, out *Outbox) {
	if len(m.waiters) == 0 {
		return
	}
	s := &m.slots[i]
	outcome := OutcomeFailed
	if s.a.phase == attemptExhausted {
		outcome = OutcomeExhausted
	}
	anyHope := false
	for j := range m.slots {
		if a := &m.slots[j].a; a.phase == attemptReady || a.inProgress() {
			anyHope = true
			break
		}
	}
	anyOutcome := OutcomeFailed
	if m.allExhausted() {
		anyOutcome = OutcomeExhausted
	}
	kept := m.waiters[:0]
	for _, p := range m.waiters {
		switch {
		case p.need == NeedAll:
			out.add(Effect{Kind: Complete, Waiter: p.waiter, Outcome: outcome, Err: s.a.err})
		case !anyHope:
			out.add(Effect{Kind: Complete, Waiter: p.waiter, Outcome: anyOutcome, Err: s.a.err})
		default:
			kept = append(kept, p)
		}
	}
	m.waiters = kept
}

// retire stops the generation taking new work: scheduled delays and attempts in progress are
// cancelled, ready connections drain the commands they accepted, and waiters are answered.
func (m *Mux) retire(out *Outbox) { m.closeSlots(true, out) }

// dispose closes the generation now: like retire, but ready connections close at once.
func (m *Mux) dispose(out *Outbox) { m.closeSlots(false, out) }

// closeSlots stops every slot (draining ready connections when drain is set) and answers every
// waiter. Only the first retirement or disposal does anything.
func (m *Mux) closeSlots(drain bool, out *Outbox) {
	if m.closed {
		return
	}
	m.closed = true
	for i := range m.slots {
		if m.slots[i].a.phase == attemptReady {
			m.abandonRecycle(i, out)
		}
		m.slots[i].a.stop(drain, out)
		m.route(i, out)
	}
	for _, p := range m.waiters {
		out.add(Effect{Kind: Complete, Waiter: p.waiter, Outcome: OutcomeClosed})
	}
	m.waiters = m.waiters[:0]
}

func (m *Mux) grant(w WaiterID, i int, out *Outbox) {
	out.add(Effect{Kind: Complete, Waiter: w, Outcome: OutcomeGranted, Slot: i, Conn: m.slots[i].a.conn})
}

func (m *Mux) route(i int, out *Outbox) {
	s := &m.slots[i]
	conn := ConnID(0)
	if s.a.phase == attemptReady {
		conn = s.a.conn
	}
	f := out.push(Route)
	f.Slot, f.Conn, f.State = i, conn, s.state()
}

// emit appends slot i's observation l, with the endpoint's aggregate health after the step so
// far; the slot's attempt labels it.
func (m *Mux) emit(i int, l Lifecycle, out *Outbox) {
	l.State = EndpointDisconnected
	if m.allReady() {
		l.State = EndpointConnected
	}
	m.slots[i].a.emit(l, out)
}

func (m *Mux) closeStray(c ConnID, out *Outbox) {
	if c != 0 {
		out.add(Effect{Kind: Close, Conn: c})
	}
}

// pickReady returns a ready slot, rotating among ready slots, or -1.
func (m *Mux) pickReady() int {
	n := len(m.slots)
	for k := 0; k < n; k++ {
		i := (m.rr + k) % n
		if m.slots[i].a.phase == attemptReady {
			m.rr = i + 1
			return i
		}
	}
	return -1
}

func (m *Mux) allReady() bool {
	for i := range m.slots {
		if m.slots[i].a.phase != attemptReady {
			return false
		}
	}
	return true
}

func (m *Mux) allExhausted() bool {
	for i := range m.slots {
		if m.slots[i].a.phase != attemptExhausted {
			return false
		}
	}
	return true
}

func (m *Mux) firstExhausted() int {
	for i := range m.slots {
		if m.slots[i].a.phase == attemptExhausted {
			return i
		}
	}
	return -1
}

func (m *Mux) slotOf(c ConnID) int {
	if c == 0 {
		return -1
	}
	for i := range m.slots {
		if m.slots[i].a.conn == c {
			return i
		}
	}
	return -1
}
