package fsm

import (
	"strconv"
	"time"
)

// EffectKind says what a runtime must do. Effects are imperatives.
type EffectKind uint8

// Effect kinds.
const (
	// Dial: open connection Conn for Slot (transport, then handshake). Attempt is the one-based
	// policy attempt, or 0 for initial connections and attempts without a policy.
	Dial EffectKind = iota + 1
	// ArmTimer: fire Timer after After.
	ArmTimer
	// CancelTimer: Timer need not fire (a late fire is ignored anyway).
	CancelTimer
	// Close: close Conn (abort an attempt in progress, or a ready connection). With Drain, a
	// ready connection first completes the commands it accepted.
	Close
	// Route: Slot now routes to Conn (zero: no connection) and is in State. Runtimes publish this
	// in their routing snapshot.
	Route
	// Emit: deliver the Lifecycle observation, in order, off the event loop.
	Emit
	// Record: record Metric.
	Record
	// Complete: answer Waiter with Outcome (Slot and Conn when granted, or the validated primary
	// in Endpoint for a Sentinel resolution's grant; Err when failed).
	Complete
	// Subscribe: send the subscribe commands for Topics on Conn.
	Subscribe
	// Unsubscribe: send the unsubscribe commands for Topics on Conn.
	Unsubscribe
	// Gap: deliver a gap marker on Topic's subscription: messages published while it was not
	// subscribed are lost. It precedes every message received after the topic's acknowledgement.
	Gap
	// End: end every subscription of the machine (or only Topic's, when Topic.Name is set) with
	// Reason, after what was already buffered.
	End
	// Query: send a query on Conn. A Sentinel machine's query is Sentinel.Query, answered by an
	// Answered event. A Cluster machine's is a topology query (CLUSTER SLOTS) on a ready command
	// connection of Node at Endpoint, answered by a Replied or QueryFailed event naming Waiter,
	// the query's id.
	Query
	// Publish: a machine's view is decided. From a Sentinel resolution, the primary Endpoint is
	// validated (Sentinel: generation, epoch, known Sentinels, whether it changed): route it to
	// the monitor as Published. From a Cluster machine, the slot map is now Map: runtimes route
	// keyed commands by it.
	Publish
	// Retire: retire the primary's generation Sentinel.Generation: it takes no new work, and the
	// commands it accepted drain on its connections.
	Retire
	// Rediscover: ask the Sentinel resolution to rediscover the primary, for Sentinel.Trigger.
	// Route it to the resolution as RediscoveryRequested.
	Rediscover
	// Warn: log the warning Sentinel.Warning (about Endpoint, when set).
	Warn
	// Kill: send CLIENT KILL ID Fence.ClientID on the fence's ready control connection Conn
	// (dialed to Fence.Peer), and report its answer as a Killed event.
	Kill
)

var effectNames = [...]string{"none", "dial", "arm-timer", "cancel-timer", "close", "route",
	"emit", "record", "complete", "subscribe", "unsubscribe", "gap", "end", "query", "publish",
	"retire", "rediscover", "warn", "kill"}

// String returns the kebab-case name of the kind.
func (k EffectKind) String() string {
	if int(k) < len(effectNames) {
		return effectNames[k]
	}
	return "effect(" + strconv.Itoa(int(k)) + ")"
}

// Effect is one output of a machine: plain data for a runtime to execute.
type Effect struct {
	// Kind says what to do.
	Kind EffectKind
	// Slot is the slot concerned (Dial, Route, Complete).
	Slot int
	// Conn is the connection concerned (Dial, Close, Route, Complete).
	Conn ConnID
	// Timer is the timer concerned (ArmTimer, CancelTimer).
	Timer TimerID
	// Waiter is the waiter answered by Complete.
	Waiter WaiterID
	// Attempt is the attempt number of a Dial.
	Attempt int
	// After is the delay of ArmTimer.
	After time.Duration
	// State is the slot state published by Route.
	State SlotState
	// Drain asks Close to let accepted commands finish first.
	Drain bool
	// Outcome is the answer of Complete.
	Outcome Outcome
	// Err is the error of a failed Complete.
	Err error
	// Lifecycle is the observation of Emit.
	Lifecycle Lifecycle
	// Metric is the measurement of Record.
	Metric Metric
	// Topics are the subscriptions of Subscribe and Unsubscribe.
	Topics []Topic
	// Topic is the subscription of Gap and End.
	Topic Topic
	// Reason is why End ends subscriptions.
	Reason EndReason
	// Machine is the machine that produced the effect; runtimes that host several machines set
	// it when routing (it is not part of the effect's text).
	Machine Machine
	// Node is the Cluster node (its number) whose machine produced the effect, or the node a
	// Query goes to or a Complete grants; 0 outside Cluster machines.
	Node uint32
	// Endpoint is the endpoint an effect concerns when it is not the machine's own: the target of
	// a Dial (a Sentinel, a primary to validate, a Cluster node); the Sentinel, primary or
	// discovery candidate a Record, Emit, Subscribe or Warn is about; the primary of Publish and
	// Retire; the node of a Cluster Query; and the validated primary a Sentinel resolution grants
	// (Complete). Zero otherwise.
	Endpoint Endpoint
	// Sentinel is the payload of the Sentinel effects (Query, Publish, Retire, Rediscover, Warn),
	// or nil. It is shared and must not be modified.
	Sentinel *SentinelData
	// Map is the slot map of a Cluster Publish. It is never modified.
	Map *ClusterMap
	// Fence is the identity a Kill names. It is never modified.
	Fence *FenceData
	// Move asks a draining Close (a MOVING handoff's) to move the commands the connection
	// accepted but provably never wrote to the slot's current connection (Slot; Node for a
	// Cluster node's slot), instead of letting them drain on the old one.
	Move bool
}

// EndReason says why a subscription ended.
type EndReason uint8

// Subscription end reasons.
const (
	// EndUnsubscribed: the application unsubscribed.
	EndUnsubscribed EndReason = iota + 1
	// EndClosed: the client was closed.
	EndClosed
	// EndReconnectExhausted: recovery reached the reconnect policy's limit.
	EndReconnectExhausted
	// EndRejected: the server rejected the subscription.
	EndRejected
)

var endReasonNames = [...]string{"none", "unsubscribed", "closed", "reconnect-exhausted", "rejected"}

// String returns the kebab-case name of the reason.
func (r EndReason) String() string {
	if int(r) < len(endReasonNames) {
		return endReasonNames[r]
	}
	return "end-reason(" + strconv.Itoa(int(r)) + ")"
}

// AppendTo appends a deterministic, single-line description of f to dst.
func (f *Effect) AppendTo(dst []byte) []byte {
	dst = append(dst, f.Kind.String()...)
	switch f.Kind {
	case Dial:
		if f.Slot >= 0 {
			dst = appendUint(dst, " slot=", uint64(f.Slot))
		}
		dst = f.Conn.AppendTo(append(dst, " conn="...))
		dst = appendUint(dst, " attempt=", uint64(f.Attempt))
		dst = appendAddr(dst, f.Endpoint)
	case ArmTimer:
		dst = f.Timer.AppendTo(append(dst, " timer="...))
		dst = append(dst, " after="...)
		dst = appendDuration(dst, f.After)
	case CancelTimer:
		dst = f.Timer.AppendTo(append(dst, " timer="...))
	case Close:
		dst = f.Conn.AppendTo(append(dst, " conn="...))
		if f.Drain {
			dst = append(dst, " drain"...)
		}
		if f.Move {
			dst = appendUint(dst, " move slot=", uint64(f.Slot))
		}
	case Route:
		dst = appendUint(dst, " slot=", uint64(f.Slot))
		dst = f.Conn.AppendTo(append(dst, " conn="...))
		dst = append(dst, " state="...)
		dst = append(dst, f.State.String()...)
	case Emit:
		dst = append(dst, ' ')
		dst = f.Lifecycle.AppendTo(dst)
		if f.Lifecycle.Source == SourceClusterDiscovery && !f.Endpoint.IsZero() {
			dst = f.Endpoint.AppendTo(append(dst, " candidate="...))
		} else {
			dst = appendAddr(dst, f.Endpoint)
		}
	case Record:
		dst = append(dst, ' ')
		dst = append(dst, f.Metric.Instrument.Name()...)
		if f.Metric.Source == SourceClusterDiscovery && !f.Endpoint.IsZero() {
			dst = f.Endpoint.AppendTo(append(dst, " candidate="...))
		}
		dst = append(dst, " source="...)
		dst = append(dst, f.Metric.Source.String()...)
		if f.Metric.Scope != ScopeNone {
			dst = append(dst, " scope="...)
			dst = append(dst, f.Metric.Scope.String()...)
		}
		dst = append(dst, " value="...)
		dst = strconv.AppendFloat(dst, f.Metric.Value, 'g', -1, 64)
		if f.Metric.Source != SourceClusterDiscovery {
			dst = appendAddr(dst, f.Endpoint)
		}
	case Query, Publish:
		if f.Sentinel != nil {
			dst = f.appendSentinel(dst)
			break
		}
		if f.Kind == Query {
			dst = appendID(append(dst, " query="...), uint64(f.Waiter))
			dst = f.Conn.AppendTo(append(dst, " conn="...))
			dst = f.Endpoint.AppendTo(append(dst, " to="...))
		} else if f.Map != nil {
			dst = f.Map.appendSummary(append(dst, ' '))
		}
	case Retire, Rediscover, Warn:
		dst = f.appendSentinel(dst)
	case Kill:
		dst = f.Conn.AppendTo(append(dst, " conn="...))
		dst = f.Fence.appendTo(dst)
	case Subscribe, Unsubscribe:
		dst = f.Conn.AppendTo(append(dst, " conn="...))
		for i := range f.Topics {
			dst = append(dst, ' ')
			dst = f.Topics[i].AppendTo(dst)
		}
	case Gap:
		dst = append(dst, ' ')
		dst = f.Topic.AppendTo(dst)
	case End:
		dst = append(dst, " reason="...)
		dst = append(dst, f.Reason.String()...)
		if f.Topic.Name != "" {
			dst = append(dst, ' ')
			dst = f.Topic.AppendTo(dst)
		}
		if f.Err != nil {
			dst = append(dst, " err="...)
			dst = appendQuote(dst, f.Err.Error())
		}
	case Complete:
		dst = appendUint(dst, " waiter=", uint64(f.Waiter))
		dst = append(dst, " outcome="...)
		dst = append(dst, f.Outcome.String()...)
		if f.Outcome == OutcomeGranted {
			if f.Slot >= 0 {
				dst = appendUint(dst, " slot=", uint64(f.Slot))
			}
			if f.Conn != 0 || f.Endpoint.IsZero() {
				dst = f.Conn.AppendTo(append(dst, " conn="...))
			}
		}
		dst = appendAddr(dst, f.Endpoint)
		if f.Err != nil {
			dst = append(dst, " err="...)
			dst = appendQuote(dst, f.Err.Error())
		}
	}
	if f.Node != 0 {
		dst = appendUint(dst, " node=", uint64(f.Node))
	}
	return dst
}

// String returns AppendTo's description.
func (f Effect) String() string { return string(f.AppendTo(nil)) }

// appendAddr appends " addr=host:port" for an endpoint that is set.
// appendSentinel appends a Sentinel effect's connection, endpoint and payload.
func (f *Effect) appendSentinel(dst []byte) []byte {
	if f.Conn != 0 {
		dst = f.Conn.AppendTo(append(dst, " conn="...))
	}
	dst = appendAddr(dst, f.Endpoint)
	return f.Sentinel.appendEffect(dst, f.Kind)
}

func appendAddr(dst []byte, e Endpoint) []byte {
	if e.IsZero() {
		return dst
	}
	return e.AppendTo(append(dst, " addr="...))
}

// Outbox collects the effects of steps. Reuse one Outbox (Reset between steps) so that stepping
// allocates nothing once its capacity has grown.
type Outbox struct {
	// Effects are the effects appended so far, in order.
	Effects []Effect
}

// Reset empties the outbox, keeping its capacity.
func (o *Outbox) Reset() { o.Effects = o.Effects[:0] }

func (o *Outbox) add(f Effect) { o.Effects = append(o.Effects, f) }

// push appends an effect of kind, every other field zero, and returns it for the caller to fill.
// Effect is a large struct: filling it in place saves the copy of a literal that add makes, on
// the paths that emit most (routes, dials, timers, observations, measurements).
func (o *Outbox) push(kind EffectKind) *Effect {
	n := len(o.Effects)
	if n < cap(o.Effects) {
		o.Effects = o.Effects[:n+1]
		o.Effects[n] = Effect{Kind: kind}
	} else {
		o.Effects = append(o.Effects, Effect{Kind: kind})
	}
	return &o.Effects[n]
}
