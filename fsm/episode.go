package fsm

import (
	"sort"
	"time"
)

// EpisodeConfig configures an Episode. Validate checks it; NewEpisode refuses an invalid one.
type EpisodeConfig struct {
	// Machine is MachinePubSub (channels and patterns) or MachineShardedPubSub.
	Machine Machine
	// Policy is the reconnect policy, or nil for the default schedule. It must be valid.
	Policy *Policy
	// MaxWaiters bounds pending subscription demands (zero: DefaultMaxWaiters; not negative).
	MaxWaiters int
	// IDBase offsets the machine's ConnIDs and TimerIDs (use IDBase(Machine); it must be some
	// machine's IDBase).
	IDBase uint64
}

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
	cfg EpisodeConfig
	// ids allocates the machine's ConnIDs and TimerIDs.
	ids   ids
	rules attemptRules
	// a is the connection's attempt sub-machine (attempt.go): idle without a connection; dialing
	// for the initial attempt or a recovery attempt; handshaking while a recovering connection
	// resubscribes; ready while the connection is active; scheduled during a recovery delay;
	// exhausted (sticky); stopped once closed. It holds the connection, the delay's timer, the
	// attempt number, the failures of the recovery and its last error.
	a attempt
	// recovering is set from the loss of the active connection until a replacement has every
	// remaining topic acknowledged, or recovery is exhausted or closed.
	recovering bool
	subs       []subscription // desired subscriptions, sorted
	waiters    []subWaiter
	// desired caches the desired topics, sorted, for resubscription. It is rebuilt (never
	// modified) when the set changes: effects keep referring to it, so a recovery cycle over an
	// unchanged set allocates nothing.
	desired []Topic
}

// NewEpisode returns a pub/sub episode machine for cfg. It panics with cfg.Validate's
// *ConfigError when cfg is invalid.
func NewEpisode(cfg EpisodeConfig) *Episode {
	if err := cfg.Validate(); err != nil {
		panic(err)
	}
	if cfg.MaxWaiters <= 0 {
		cfg.MaxWaiters = DefaultMaxWaiters
	}
	e := &Episode{cfg: cfg, ids: newIDs(cfg.IDBase, 0)}
	e.rules = attemptRules{policy: cfg.Policy, backoff: noPolicyBackoff(), source: SourcePubSub, ids: &e.ids}
	e.a = newAttempt(&e.rules, -1, 0)
	return e
}

// Phase returns the machine's phase name, for tests and traces: "idle", "connecting" (the
// initial attempt), "active", "scheduled" (a recovery delay), "recovering" (a recovery attempt,
// dialing, handshaking or resubscribing), "exhausted" or "closed".
func (e *Episode) Phase() string {
	switch e.a.phase {
	case attemptIdle:
		return "idle"
	case attemptDialing, attemptHandshaking:
		if e.recovering {
			return "recovering"
		}
		return "connecting"
	case attemptReady:
		return "active"
	case attemptScheduled:
		return "scheduled"
	case attemptExhausted:
		return "exhausted"
	case attemptStopped:
		return "closed"
	}
	// Failed, resting and depleted never outlast a step.
	return e.a.phase.String()
}

// connecting reports whether the initial attempt is in progress.
func (e *Episode) connecting() bool { return !e.recovering && e.a.phase == attemptDialing }

// inRecovery reports whether a recovery attempt is dialing, handshaking or resubscribing.
func (e *Episode) inRecovery() bool {
	return e.recovering && (e.a.phase == attemptDialing || e.a.phase == attemptHandshaking)
}

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
		if ev.Conn == e.a.conn && (e.connecting() || e.inRecovery()) {
			e.subscribeAll(out)
		} else if ev.Conn != e.a.conn {
			out.add(Effect{Kind: Close, Conn: ev.Conn})
		}
	case Acked:
		if ev.Conn == e.a.conn {
			e.acked(ev.Topic, out)
		}
	case Rejected:
		if ev.Conn == e.a.conn {
			e.rejected(ev, out)
		}
	case DialFailed, ConnLost:
		if ev.Conn == e.a.conn && e.a.conn != 0 {
			e.failed(ev, out)
		}
	case TimerFired:
		if e.a.phase == attemptScheduled && ev.Timer == e.a.timer {
			e.a.becomeDialing(out)
		}
	case Retired, Disposed:
		e.stop(out)
	}
}

func (e *Episode) demanded(ev *Event, out *Outbox) {
	switch {
	case e.a.phase == attemptStopped:
		out.add(Effect{Kind: Complete, Waiter: ev.Waiter, Outcome: OutcomeClosed, Slot: -1})
		return
	case e.a.phase == attemptExhausted:
		out.add(Effect{Kind: Complete, Waiter: ev.Waiter, Outcome: OutcomeExhausted, Slot: -1, Err: e.a.err})
		return
	case e.recovering:
		// Recovery owns the connection: no competing connection, no skipped delay.
		out.add(Effect{Kind: Complete, Waiter: ev.Waiter, Outcome: OutcomeFailed, Slot: -1, Err: e.a.err})
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
	switch e.a.phase {
	case attemptIdle:
		e.a.becomeDialing(out)
		e.a.emit(Lifecycle{SourceState: SourceConnecting}, out)
	case attemptReady:
		if len(fresh) > 0 {
			out.add(Effect{Kind: Subscribe, Conn: e.a.conn, Topics: fresh})
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
		if e.connecting() && len(e.waiters) == 0 {
			// The initial attempt is bounded by its callers: the last one gave up.
			out.add(Effect{Kind: Close, Conn: e.a.conn})
			e.a.becomeIdle()
			e.clearSubs()
		}
		return
	}
}

func (e *Episode) unsubscribed(t Topic, out *Outbox) {
	if !e.remove(t) {
		return
	}
	resubscribing := e.recovering && e.a.phase == attemptHandshaking
	if e.a.phase == attemptReady || resubscribing {
		// The topic was sent on this connection (a recovering connection sent it with every
		// other remaining topic): take it back, or the server keeps a subscription nobody wants.
		out.add(Effect{Kind: Unsubscribe, Conn: e.a.conn, Topics: []Topic{t}})
	}
	out.add(Effect{Kind: End, Topic: t, Reason: EndUnsubscribed})
	if resubscribing {
		e.maybeRecovered(out)
	}
}

// subscribeAll sends every desired subscription on the new connection. The initial connection is
// active at once; a recovering one resubscribes until every topic is acknowledged.
func (e *Episode) subscribeAll(out *Outbox) {
	if !e.recovering {
		e.a.becomeReady()
	}
	for i := range e.subs {
		e.subs[i].acked = false
	}
	if len(e.subs) > 0 {
		out.add(Effect{Kind: Subscribe, Conn: e.a.conn, Topics: e.desiredTopics()})
	}
	if e.recovering {
		if e.a.phase == attemptDialing {
			e.a.becomeHandshaking()
		}
		e.maybeRecovered(out)
	} else {
		e.a.emit(Lifecycle{SourceState: SourceConnected}, out)
	}
}

func (e *Episode) acked(t Topic, out *Outbox) {
	i := e.find(t)
	if i < 0 || e.subs[i].acked {
		return
	}
	e.subs[i].acked = true
	if e.inRecovery() {
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
	attempt := e.a.n
	e.a.becomeReady()
	e.recovering = false
	e.a.emit(Lifecycle{SourceState: SourceConnected, Attempt: attempt}, out)
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
			out.add(Effect{Kind: Complete, Waiter: w.waiter, Outcome: OutcomeGranted, Slot: -1, Conn: e.a.conn})
		} else {
			kept = append(kept, w)
		}
	}
	e.waiters = kept
}

func (e *Episode) rejected(ev *Event, out *Outbox) {
	if e.inRecovery() {
		// A failed resubscription: close the replacement and count the failure.
		out.add(Effect{Kind: Close, Conn: e.a.conn})
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
	for i := range e.subs {
		e.subs[i].acked = false
	}
	// Demands waiting for acknowledgements fail: their subscription may or may not be restored
	// by recovery, and they learn through the lifecycle.
	for _, w := range e.waiters {
		out.add(Effect{Kind: Complete, Waiter: w.waiter, Outcome: OutcomeFailed, Slot: -1, Err: ev.Err})
	}
	e.waiters = e.waiters[:0]
	switch {
	case e.a.phase == attemptReady:
		// A new episode: an immediate attempt without a policy, InitialDelay with one.
		e.a.lose(ev.Err)
		e.recovering = true
		e.a.emit(Lifecycle{SourceState: SourceDisconnected, Err: ev.Err}, out)
		e.next(ev, out)
	case e.recovering:
		e.a.fail(ev.Err)
		if e.a.decide(true) == rulingExhausted {
			e.exhaust(ev.Err, out)
			return
		}
		e.a.emit(Lifecycle{SourceState: SourceDisconnected, Attempt: e.a.n, Err: ev.Err}, out)
		e.next(ev, out)
	default:
		// The initial attempt is single: its subscriptions never existed.
		e.a.fail(ev.Err)
		e.a.becomeIdle()
		e.clearSubs()
		e.a.emit(Lifecycle{SourceState: SourceDisconnected, Err: ev.Err}, out)
	}
}

// next schedules the recovery's next attempt: after the policy's delay, or without a policy on
// the no-policy schedule (immediate after a loss, then 250 ms doubling up to 5 s).
func (e *Episode) next(ev *Event, out *Outbox) {
	governed := e.rules.policy != nil
	var delay time.Duration
	if governed {
		delay = e.a.plan(ev.Draw, out)
	} else {
		delay = e.a.wait()
	}
	scheduled := Lifecycle{SourceState: SourceConnecting, Attempt: e.a.n, NextDelay: delay, Scheduled: governed || delay > 0}
	if delay <= 0 {
		e.a.emit(scheduled, out)
		e.a.becomeDialing(out)
		return
	}
	e.a.becomeScheduled(delay, out)
	e.a.emit(scheduled, out)
}

// exhaust ends recovery at the policy's limit: every subscription ends.
func (e *Episode) exhaust(err error, out *Outbox) {
	e.a.becomeExhausted(out)
	e.recovering = false
	e.a.emit(Lifecycle{SourceState: SourceDisconnected, Attempt: e.a.n, Exhausted: true, Err: err}, out)
	out.add(Effect{Kind: End, Reason: EndReconnectExhausted, Err: err})
	e.clearSubs()
}

// stop closes the episode for good (retirement and disposal alike): delays, attempts and
// resubscription waits are cancelled, and subscriptions end.
func (e *Episode) stop(out *Outbox) {
	if e.a.phase == attemptStopped {
		return
	}
	ended := e.a.phase != attemptExhausted && e.a.phase != attemptIdle
	e.a.stop(false, out)
	e.recovering = false
	for _, w := range e.waiters {
		out.add(Effect{Kind: Complete, Waiter: w.waiter, Outcome: OutcomeClosed, Slot: -1})
	}
	e.waiters = e.waiters[:0]
	if ended {
		out.add(Effect{Kind: End, Reason: EndClosed})
	}
	e.clearSubs()
}
