package fsm

import (
	"sort"
	"time"
)

// EpisodeConfig configures an Episode.
type EpisodeConfig struct {
	// Machine is MachinePubSub (channels and patterns) or MachineShardedPubSub.
	Machine Machine
	// Policy is the reconnect policy, or nil for the default schedule. It must be valid.
	Policy *Policy
	// MaxWaiters bounds pending subscription demands (zero: DefaultMaxWaiters).
	MaxWaiters int
	// IDBase offsets the machine's ConnIDs and TimerIDs (use IDBase(Machine)).
	IDBase uint64
}

type episodePhase uint8

const (
	epIdle       episodePhase = iota // no connection
	epConnecting                     // the initial attempt (single, bounded by its callers)
	epActive                         // connected; subscriptions may be awaiting acknowledgement
	epScheduled                      // recovery: waiting for the next attempt's delay
	epRecovering                     // recovery: dialing, handshaking or resubscribing
	epExhausted                      // sticky: recovery reached the policy's limit
	epClosed
)

var episodePhaseNames = [...]string{"idle", "connecting", "active", "scheduled", "recovering", "exhausted", "closed"}

type subscription struct {
	topic Topic
	acked bool
}

type subWaiter struct {
	waiter WaiterID
	topics []Topic
}

// Episode is the pub/sub recovery machine of one subscription connection: regular (channels and
// patterns) or sharded. Each kind has its own Episode, so exhausting one leaves the other usable.
//
// Rules (spec "Pub/sub reconnection and resubscription"):
//   - The initial subscription connection is a single attempt: its failure fails the demands
//     waiting on it.
//   - When an established connection fails, one recovery loop owns the replacement until every
//     registered topic is acknowledged again. Without a policy: an immediate attempt, then waits
//     of 250 ms doubling up to 5 s, unlimited. With a policy: the first replacement waits
//     InitialDelay, and every failed connection or failed resubscription consumes one attempt.
//     A failed resubscription closes its connection before the next attempt.
//   - A successful resubscription (every topic acknowledged) resets the count; a later
//     interruption starts a new episode. Each topic's gap marker is emitted at its
//     acknowledgement, so it precedes every message received after it.
//   - During recovery, new subscriptions fail with a connection error and open nothing;
//     unsubscribing is allowed and recovery restores only the remaining topics (a topic the
//     replacement already resubscribed is unsubscribed on it).
//   - Exhaustion ends every subscription of this episode with EndReconnectExhausted and rejects
//     new subscriptions with OutcomeExhausted until the client is recreated.
//   - Disposal cancels delays, attempts and resubscription waits.
type Episode struct {
	cfg      EpisodeConfig
	phase    episodePhase
	conn     ConnID
	timer    TimerID
	subs     []subscription // desired subscriptions, sorted
	waiters  []subWaiter
	failures int
	attempt  int
	// resubscribing is set once a recovering connection sent its subscriptions.
	resubscribing bool
	nextID        uint64
	lastErr       error
	// desired caches the desired topics, sorted, for resubscription. It is rebuilt (never
	// modified) when the set changes: effects keep referring to it, so a recovery cycle over an
	// unchanged set allocates nothing.
	desired []Topic
}

// NewEpisode returns a pub/sub episode machine for cfg. It panics on an invalid policy.
func NewEpisode(cfg EpisodeConfig) *Episode {
	if err := cfg.Policy.Validate(); err != nil {
		panic("fsm: " + err.Error())
	}
	if cfg.MaxWaiters <= 0 {
		cfg.MaxWaiters = DefaultMaxWaiters
	}
	return &Episode{cfg: cfg}
}

// Phase returns the machine's phase name, for tests and traces.
func (e *Episode) Phase() string { return episodePhaseNames[e.phase] }

// Topics returns the desired subscriptions, sorted.
func (e *Episode) Topics() []Topic {
	return append([]Topic(nil), e.desiredTopics()...)
}

// desiredTopics returns the cached desired topics; callers must not modify the slice.
func (e *Episode) desiredTopics() []Topic {
	if e.desired == nil && len(e.subs) > 0 {
		e.desired = make([]Topic, len(e.subs))
		for i, s := range e.subs {
			e.desired[i] = s.topic
		}
	}
	return e.desired
}

// clearSubs forgets every desired subscription.
func (e *Episode) clearSubs() {
	e.subs = e.subs[:0]
	e.desired = nil
}

// Step applies ev and appends the resulting effects to out.
func (e *Episode) Step(ev *Event, out *Outbox) {
	switch ev.Kind {
	case Demanded:
		e.demanded(ev, out)
	case Withdrew:
		e.withdrew(ev, out)
	case Unsubscribed:
		e.unsubscribed(ev.Topic, out)
	case HandshakeDone:
		if ev.Conn == e.conn && (e.phase == epConnecting || e.phase == epRecovering) {
			e.subscribeAll(out)
		} else if ev.Conn != e.conn {
			out.add(Effect{Kind: Close, Conn: ev.Conn})
		}
	case Acked:
		if ev.Conn == e.conn {
			e.acked(ev.Topic, out)
		}
	case Rejected:
		if ev.Conn == e.conn {
			e.rejected(ev, out)
		}
	case DialFailed, ConnLost:
		if ev.Conn == e.conn && e.conn != 0 {
			e.failed(ev, out)
		}
	case TimerFired:
		if e.phase == epScheduled && ev.Timer == e.timer {
			e.timer = 0
			e.phase = epRecovering
			e.dial(out)
		}
	case Retired, Disposed:
		e.shutdown(out)
	}
}

func (e *Episode) demanded(ev *Event, out *Outbox) {
	switch {
	case e.phase == epClosed:
		out.add(Effect{Kind: Complete, Waiter: ev.Waiter, Outcome: OutcomeClosed, Slot: -1})
		return
	case e.phase == epExhausted:
		out.add(Effect{Kind: Complete, Waiter: ev.Waiter, Outcome: OutcomeExhausted, Slot: -1, Err: e.lastErr})
		return
	case e.phase == epScheduled || e.phase == epRecovering:
		// Recovery owns the connection: no competing connection, no skipped delay.
		out.add(Effect{Kind: Complete, Waiter: ev.Waiter, Outcome: OutcomeFailed, Slot: -1, Err: e.lastErr})
		return
	case len(e.waiters) >= e.cfg.MaxWaiters:
		out.add(Effect{Kind: Complete, Waiter: ev.Waiter, Outcome: OutcomeOverflow, Slot: -1})
		return
	}
	var fresh []Topic
	for _, t := range ev.Topics {
		if e.add(t) {
			fresh = append(fresh, t)
		}
	}
	// The demand's topics are retained as they are: events are immutable once stepped (the
	// journal keeps them too), so the runtime must not reuse ev.Topics' storage.
	e.waiters = append(e.waiters, subWaiter{waiter: ev.Waiter, topics: ev.Topics})
	switch e.phase {
	case epIdle:
		e.phase = epConnecting
		e.attempt = 0
		e.dial(out)
		e.emit(SourceConnecting, 0, 0, false, false, nil, out)
	case epActive:
		if len(fresh) > 0 {
			out.add(Effect{Kind: Subscribe, Conn: e.conn, Topics: fresh})
		}
		e.completeAcked(out)
	}
}

// add registers t as desired; it reports whether t is new.
func (e *Episode) add(t Topic) bool {
	i := sort.Search(len(e.subs), func(i int) bool { return !e.subs[i].topic.Less(t) })
	if i < len(e.subs) && e.subs[i].topic == t {
		return false
	}
	e.desired = nil
	e.subs = append(e.subs, subscription{})
	copy(e.subs[i+1:], e.subs[i:])
	e.subs[i] = subscription{topic: t}
	return true
}

func (e *Episode) find(t Topic) int {
	i := sort.Search(len(e.subs), func(i int) bool { return !e.subs[i].topic.Less(t) })
	if i < len(e.subs) && e.subs[i].topic == t {
		return i
	}
	return -1
}

func (e *Episode) remove(t Topic) bool {
	if i := e.find(t); i >= 0 {
		e.subs = append(e.subs[:i], e.subs[i+1:]...)
		e.desired = nil
		return true
	}
	return false
}

func (e *Episode) withdrew(ev *Event, out *Outbox) {
	for i, w := range e.waiters {
		if w.waiter != ev.Waiter {
			continue
		}
		e.waiters = append(e.waiters[:i], e.waiters[i+1:]...)
		out.add(Effect{Kind: Complete, Waiter: w.waiter, Outcome: OutcomeCancelled, Slot: -1})
		if e.phase == epConnecting && len(e.waiters) == 0 {
			// The initial attempt is bounded by its callers: the last one gave up.
			out.add(Effect{Kind: Close, Conn: e.conn})
			e.conn = 0
			e.clearSubs()
			e.phase = epIdle
		}
		return
	}
}

func (e *Episode) unsubscribed(t Topic, out *Outbox) {
	if !e.remove(t) {
		return
	}
	if e.phase == epActive || (e.phase == epRecovering && e.resubscribing) {
		// The topic was sent on this connection (a recovering connection sent it with every
		// other remaining topic): take it back, or the server keeps a subscription nobody wants.
		out.add(Effect{Kind: Unsubscribe, Conn: e.conn, Topics: []Topic{t}})
	}
	out.add(Effect{Kind: End, Topic: t, Reason: EndUnsubscribed})
	if e.phase == epRecovering && e.resubscribing {
		e.maybeRecovered(out)
	}
}

// subscribeAll sends every desired subscription on the new connection.
func (e *Episode) subscribeAll(out *Outbox) {
	if e.phase == epConnecting {
		e.phase = epActive
	}
	for i := range e.subs {
		e.subs[i].acked = false
	}
	if len(e.subs) > 0 {
		out.add(Effect{Kind: Subscribe, Conn: e.conn, Topics: e.desiredTopics()})
	}
	if e.phase == epRecovering {
		e.resubscribing = true
		e.maybeRecovered(out)
	} else {
		e.emit(SourceConnected, 0, 0, false, false, nil, out)
	}
}

func (e *Episode) acked(t Topic, out *Outbox) {
	i := e.find(t)
	if i < 0 || e.subs[i].acked {
		return
	}
	e.subs[i].acked = true
	if e.phase == epRecovering {
		// Messages published while unsubscribed are lost: the marker precedes everything
		// received after this acknowledgement.
		out.add(Effect{Kind: Gap, Topic: t})
		e.maybeRecovered(out)
	}
	e.completeAcked(out)
}

// maybeRecovered ends the recovery once every remaining topic is acknowledged.
func (e *Episode) maybeRecovered(out *Outbox) {
	for i := range e.subs {
		if !e.subs[i].acked {
			return
		}
	}
	attempt := e.attempt
	e.phase = epActive
	e.resubscribing = false
	e.failures = 0
	e.attempt = 0
	e.emit(SourceConnected, attempt, 0, false, false, nil, out)
}

// completeAcked grants the demands whose topics are all acknowledged.
func (e *Episode) completeAcked(out *Outbox) {
	kept := e.waiters[:0]
	for _, w := range e.waiters {
		done := true
		for _, t := range w.topics {
			if i := e.find(t); i < 0 || !e.subs[i].acked {
				done = false
				break
			}
		}
		if done {
			out.add(Effect{Kind: Complete, Waiter: w.waiter, Outcome: OutcomeGranted, Slot: -1, Conn: e.conn})
		} else {
			kept = append(kept, w)
		}
	}
	e.waiters = kept
}

func (e *Episode) rejected(ev *Event, out *Outbox) {
	if e.phase == epRecovering {
		// A failed resubscription: close the replacement and count the failure.
		out.add(Effect{Kind: Close, Conn: e.conn})
		e.failed(ev, out)
		return
	}
	if !e.remove(ev.Topic) {
		return
	}
	out.add(Effect{Kind: End, Topic: ev.Topic, Reason: EndRejected, Err: ev.Err})
	kept := e.waiters[:0]
	for _, w := range e.waiters {
		hit := false
		for _, t := range w.topics {
			if t == ev.Topic {
				hit = true
			}
		}
		if hit {
			out.add(Effect{Kind: Complete, Waiter: w.waiter, Outcome: OutcomeFailed, Slot: -1, Err: ev.Err})
		} else {
			kept = append(kept, w)
		}
	}
	e.waiters = kept
}

// failed handles the failure of the episode's connection or attempt.
func (e *Episode) failed(ev *Event, out *Outbox) {
	e.lastErr = ev.Err
	e.conn = 0
	e.resubscribing = false
	for i := range e.subs {
		e.subs[i].acked = false
	}
	// Demands waiting for acknowledgements fail: their subscription may or may not be restored
	// by recovery, and they learn through the lifecycle.
	for _, w := range e.waiters {
		out.add(Effect{Kind: Complete, Waiter: w.waiter, Outcome: OutcomeFailed, Slot: -1, Err: ev.Err})
	}
	e.waiters = e.waiters[:0]
	switch e.phase {
	case epConnecting:
		// The initial attempt is single: its subscriptions never existed.
		e.clearSubs()
		e.phase = epIdle
		e.emit(SourceDisconnected, 0, 0, false, false, ev.Err, out)
	case epActive:
		// A new episode: an immediate attempt without a policy, InitialDelay with one.
		e.failures = 0
		e.emit(SourceDisconnected, 0, 0, false, false, ev.Err, out)
		e.next(ev, out)
	case epRecovering:
		e.failures++
		if p := e.cfg.Policy; p != nil && p.Exhausts(e.failures) {
			e.exhaust(ev.Err, out)
			return
		}
		e.emit(SourceDisconnected, e.attempt, 0, false, false, ev.Err, out)
		e.next(ev, out)
	}
}

// next schedules the recovery's next attempt.
func (e *Episode) next(ev *Event, out *Outbox) {
	p := e.cfg.Policy
	var delay time.Duration
	if p == nil {
		e.attempt = 0
		delay = NoPolicyWait(e.failures)
	} else {
		n := e.failures + 1
		e.attempt = n
		delay = p.Delay(n, ev.Draw)
		source := SourcePubSub
		out.add(Effect{Kind: Record, Metric: Metric{Instrument: InstrumentAttempt, Source: source, Value: float64(n)}})
		out.add(Effect{Kind: Record, Metric: Metric{Instrument: InstrumentDelay, Source: source, Value: delay.Seconds()}})
	}
	if delay <= 0 {
		e.phase = epRecovering
		e.emit(SourceConnecting, e.attempt, 0, p != nil, false, nil, out)
		e.dial(out)
		return
	}
	e.phase = epScheduled
	e.nextID++
	e.timer = TimerID(e.cfg.IDBase + e.nextID)
	out.add(Effect{Kind: ArmTimer, Timer: e.timer, After: delay})
	e.emit(SourceConnecting, e.attempt, delay, true, false, nil, out)
}

func (e *Episode) exhaust(err error, out *Outbox) {
	e.phase = epExhausted
	out.add(Effect{Kind: Record, Metric: Metric{Instrument: InstrumentExhausted, Source: SourcePubSub, Value: 1}})
	e.emit(SourceDisconnected, e.attempt, 0, false, true, err, out)
	out.add(Effect{Kind: End, Reason: EndReconnectExhausted, Err: err})
	e.clearSubs()
}

func (e *Episode) dial(out *Outbox) {
	e.nextID++
	e.conn = ConnID(e.cfg.IDBase + e.nextID)
	out.add(Effect{Kind: Dial, Slot: -1, Conn: e.conn, Attempt: e.attempt})
}

func (e *Episode) shutdown(out *Outbox) {
	if e.phase == epClosed {
		return
	}
	if e.timer != 0 {
		out.add(Effect{Kind: CancelTimer, Timer: e.timer})
		e.timer = 0
	}
	if e.conn != 0 {
		out.add(Effect{Kind: Close, Conn: e.conn})
		e.conn = 0
	}
	for _, w := range e.waiters {
		out.add(Effect{Kind: Complete, Waiter: w.waiter, Outcome: OutcomeClosed, Slot: -1})
	}
	e.waiters = e.waiters[:0]
	if e.phase != epExhausted && e.phase != epIdle {
		out.add(Effect{Kind: End, Reason: EndClosed})
	}
	e.clearSubs()
	e.phase = epClosed
}

func (e *Episode) emit(state SourceState, attempt int, delay time.Duration, scheduled, exhausted bool, err error, out *Outbox) {
	out.add(Effect{Kind: Emit, Lifecycle: Lifecycle{
		Source: SourcePubSub, SourceState: state, Slot: -1, Attempt: attempt,
		NextDelay: delay, Scheduled: scheduled, Exhausted: exhausted, Err: err,
	}})
}
