package fsm

import (
	"strconv"
	"time"
)

// EventKind says what happened. Events are past-tense facts.
type EventKind uint8

// Event kinds.
const (
	// Demanded: a caller needs a connection (Waiter, Need).
	Demanded EventKind = iota + 1
	// Noticed: a caller saw that Slot has no connection and is waiting for use; the slot's next
	// attempt may start. The caller itself is served elsewhere or demands separately.
	Noticed
	// Withdrew: Waiter stopped waiting (cancellation or deadline).
	Withdrew
	// DialSucceeded: the transport connection of Conn is established; its handshake runs.
	DialSucceeded
	// HandshakeDone: Conn finished its handshake and required identity; it is ready.
	HandshakeDone
	// DialFailed: establishing or handshaking Conn failed with Err (Class classifies it).
	DialFailed
	// ConnLost: the ready (or handshaking) connection Conn failed with Err.
	ConnLost
	// TimerFired: Timer expired.
	TimerFired
	// Retired: the generation stops taking new work; accepted commands drain.
	Retired
	// Disposed: the client is closing; everything stops now.
	Disposed
	// Returned: a renter gave back dedicated connection Conn; Healthy says whether it may be
	// reused.
	Returned
	// Acked: the server acknowledged the subscription of Topic on Conn.
	Acked
	// Rejected: the server rejected subscribing Topic on Conn with Err.
	Rejected
	// Unsubscribed: the application removed Topic from the desired subscriptions.
	Unsubscribed
	// Answered: the query Sentinel.Query sent on Conn was answered: Sentinel holds the answer, or
	// Err the failure (a refusal, a malformed reply), with Sentinel.Denied for a permission
	// refusal (NOPERM).
	Answered
	// Notified: a Sentinel published the event Sentinel.Message on the monitor connection Conn.
	Notified
	// Published: the Sentinel resolution validated the primary Sentinel.Primary of generation
	// Sentinel.Generation (the Publish effect, routed to the monitor); Sentinel.Peers lists every
	// known Sentinel. Routed to the command slots (Mux) when the generation is new, it renews the
	// slots that failed against the old one.
	Published
	// PrimaryFailed: a data connection of generation Sentinel.Generation saw the primary fail
	// (a disconnect, a READONLY reply, a replica ROLE) with Err.
	PrimaryFailed
	// RediscoveryRequested: the monitor asks for a rediscovery (the Rediscover effect, routed to
	// the resolution) for Sentinel.Trigger.
	RediscoveryRequested
	// Replied: the topology query Waiter was answered with Reply (a Cluster machine's event).
	Replied
	// QueryFailed: the topology query Waiter failed with Err: the connection failed, the server
	// rejected it, or its reply could not be parsed.
	QueryFailed
	// Moved: a command for Slot was redirected with MOVED to Endpoint (the zero Endpoint when
	// the reply named no usable host).
	Moved
	// Owed: connection Conn ended with commands whose bytes may have reached the server and
	// whose replies never came; Fence names its identity (a zero ClientID: none was recorded).
	Owed
	// Killed: the CLIENT KILL ID sent on the fence's control connection Conn was answered (Err
	// nil: the killed connection is gone), or failed with Err (Class classifies it).
	Killed
	// MovingNoticed: the ready connection Conn received a MOVING maintenance notice: its
	// endpoint moves to Endpoint (zero: the configured one, resolved again) and Grace is how
	// long the old socket may still serve (maint_handoff.go).
	MovingNoticed
	// SlotsMigrated: a Cluster node's connection received SMIGRATED: the node at Endpoint (the
	// source) announces that the slots of each shard of Reply (a QueryMoved reply, one node per
	// shard) now belong to that shard's node (cluster_maint.go).
	SlotsMigrated
)

var eventNames = [...]string{"none", "demanded", "noticed", "withdrew", "dial-succeeded",
	"handshake-done", "dial-failed", "conn-lost", "timer-fired", "retired", "disposed", "returned",
	"acked", "rejected", "unsubscribed", "answered", "notified", "published", "primary-failed",
	"rediscovery-requested", "replied", "query-failed", "moved", "owed", "killed", "moving-noticed",
	"slots-migrated"}

// String returns the kebab-case name of the kind.
func (k EventKind) String() string {
	if int(k) < len(eventNames) {
		return eventNames[k]
	}
	return "event(" + strconv.Itoa(int(k)) + ")"
}

// Need says what a demand needs.
type Need uint8

// Demand needs.
const (
	// NeedAny: any ready slot will do (an ordinary command).
	NeedAny Need = iota
	// NeedAll: every slot must be ready (initial eager connect, identity setup).
	NeedAll
	// NeedTopology: a fresh Cluster topology (a refresh pass that ends after the demand); the
	// answer names the node serving the demand's Slot.
	NeedTopology
)

var needNames = [...]string{"any", "all", "topology"}

// String returns "any", "all" or "topology".
func (n Need) String() string {
	if int(n) < len(needNames) {
		return needNames[n]
	}
	return "need(" + strconv.Itoa(int(n)) + ")"
}

// FailureClass classifies a connection failure for retry decisions.
type FailureClass uint8

// Failure classes.
const (
	// Transient failures (refused, reset, timeouts, transient server errors) may be retried.
	Transient FailureClass = iota
	// Permanent failures (authentication, ACL, TLS authentication, protocol or configuration
	// errors) are never retried by a dedicated rent.
	Permanent
)

// String returns "transient" or "permanent".
func (c FailureClass) String() string {
	if c == Permanent {
		return "permanent"
	}
	return "transient"
}

// Event is one input to a machine. It is a flat value (no interfaces but Err) so that stepping
// allocates nothing and a journal of events is a plain slice.
type Event struct {
	// Kind says what happened.
	Kind EventKind
	// At is the runtime's time, as an offset from its origin, when the event was stepped.
	At time.Duration
	// Draw is a number drawn uniformly from [0, 1) by the runtime for this event; machines use it
	// for jitter.
	Draw float64
	// Slot is the slot of a Noticed event.
	Slot int
	// Conn is the connection of dial and connection events.
	Conn ConnID
	// Timer is the timer of a TimerFired event.
	Timer TimerID
	// Waiter is the waiter of Demanded and Withdrew events.
	Waiter WaiterID
	// Need is what a Demanded event needs.
	Need Need
	// Class classifies the Err of a DialFailed event.
	Class FailureClass
	// Err is the failure of DialFailed, ConnLost and Rejected events.
	Err error
	// Machine is the machine a caller's event (Demanded, Withdrew, Noticed, Returned,
	// Unsubscribed) is for. Events about connections and timers are routed by their identifier's
	// machine instead (see MachineOf).
	Machine Machine
	// Healthy says whether a Returned connection may be reused.
	Healthy bool
	// Topic is the subscription of Acked, Rejected and Unsubscribed events.
	Topic Topic
	// Topics are the subscriptions a pub/sub Demanded event asks for.
	Topics []Topic
	// Sentinel is the payload of the Sentinel events (Answered, Notified, Published,
	// PrimaryFailed, RediscoveryRequested), or nil.
	Sentinel *SentinelData
	// Node is the Cluster node (its number) a caller's event for a node machine concerns: the
	// slot of a Noticed event, or the node a command was rejected by (NeedTopology).
	Node uint32
	// Endpoint is the endpoint a Cluster demand asks for (a redirect's target), or the target
	// of a Moved event.
	Endpoint Endpoint
	// Reply is the parsed answer of a Replied event. It is never modified.
	Reply *TopologyReply
	// Fence is the identity of an Owed event's connection. It is never modified.
	Fence *FenceData
	// Grace is the grace period of a MovingNoticed event.
	Grace time.Duration
}

// clusterMachine reports whether m is one of a Cluster client's machines (the topology machine
// or a node's), whose caller events carry a slot, a node or an endpoint.
func clusterMachine(m Machine) bool { return m == MachineCluster || isNodeMachine(m) }

// AppendTo appends a deterministic, single-line description of e to dst.
func (e *Event) AppendTo(dst []byte) []byte {
	dst = appendClock(dst, e.At)
	dst = append(dst, ' ')
	if e.Machine != MachineMux {
		dst = append(dst, e.Machine.String()...)
		dst = append(dst, ' ')
	}
	dst = append(dst, e.Kind.String()...)
	switch e.Kind {
	case Demanded:
		dst = appendUint(dst, " waiter=", uint64(e.Waiter))
		dst = append(dst, " need="...)
		dst = append(dst, e.Need.String()...)
		for i := range e.Topics {
			dst = append(dst, ' ')
			dst = e.Topics[i].AppendTo(dst)
		}
		if clusterMachine(e.Machine) {
			dst = e.appendTarget(dst)
		}
		if e.Machine == MachineFence {
			dst = e.Conn.AppendTo(append(dst, " conn="...))
		}
	case Owed:
		dst = e.Conn.AppendTo(append(dst, " conn="...))
		dst = e.Fence.appendTo(dst)
	case Killed:
		dst = e.Conn.AppendTo(append(dst, " conn="...))
		if e.Err != nil {
			dst = append(dst, " class="...)
			dst = append(dst, e.Class.String()...)
			dst = append(dst, " err="...)
			dst = appendQuote(dst, e.Err.Error())
		}
	case Noticed:
		dst = appendUint(dst, " slot=", uint64(e.Slot))
		if e.Node != 0 {
			dst = appendUint(dst, " node=", uint64(e.Node))
		}
	case Replied, QueryFailed:
		dst = appendID(append(dst, " query="...), uint64(e.Waiter))
		if e.Reply != nil {
			dst = e.Reply.appendSummary(append(dst, ' '))
		}
		if e.Err != nil {
			dst = append(dst, " err="...)
			dst = appendQuote(dst, e.Err.Error())
		}
	case Moved:
		dst = appendUint(dst, " slot=", uint64(e.Slot))
		dst = e.Endpoint.AppendTo(append(dst, " to="...))
	case MovingNoticed:
		dst = e.Conn.AppendTo(append(dst, " conn="...))
		if e.Endpoint.IsZero() {
			dst = append(dst, " to=configured"...)
		} else {
			dst = e.Endpoint.AppendTo(append(dst, " to="...))
		}
		dst = append(dst, " grace="...)
		dst = append(dst, e.Grace.String()...)
	case SlotsMigrated:
		dst = e.Endpoint.AppendTo(append(dst, " from="...))
		if e.Reply != nil {
			dst = e.Reply.appendSummary(append(dst, ' '))
		}
	case Withdrew:
		dst = appendUint(dst, " waiter=", uint64(e.Waiter))
	case Disposed:
		if e.Waiter != 0 {
			dst = appendUint(dst, " waiter=", uint64(e.Waiter))
		}
	case Answered, Notified, Published, PrimaryFailed, RediscoveryRequested:
		if e.Conn != 0 {
			dst = e.Conn.AppendTo(append(dst, " conn="...))
		}
		dst = e.Sentinel.appendEvent(dst, e.Kind)
		if e.Err != nil {
			dst = append(dst, " err="...)
			dst = appendQuote(dst, e.Err.Error())
		}
	case Returned:
		dst = e.Conn.AppendTo(append(dst, " conn="...))
		if e.Healthy {
			dst = append(dst, " healthy"...)
		}
	case Acked, Rejected, Unsubscribed:
		if e.Conn != 0 {
			dst = e.Conn.AppendTo(append(dst, " conn="...))
		}
		dst = append(dst, ' ')
		dst = e.Topic.AppendTo(dst)
		if e.Err != nil {
			dst = append(dst, " err="...)
			dst = appendQuote(dst, e.Err.Error())
		}
	case DialSucceeded, HandshakeDone:
		dst = e.Conn.AppendTo(append(dst, " conn="...))
	case DialFailed, ConnLost:
		dst = e.Conn.AppendTo(append(dst, " conn="...))
		if e.Kind == DialFailed {
			dst = append(dst, " class="...)
			dst = append(dst, e.Class.String()...)
		}
		if e.Err != nil {
			dst = append(dst, " err="...)
			dst = appendQuote(dst, e.Err.Error())
		}
	case TimerFired:
		dst = e.Timer.AppendTo(append(dst, " timer="...))
	}
	dst = append(dst, " draw="...)
	return strconv.AppendFloat(dst, e.Draw, 'g', -1, 64)
}

// String returns AppendTo's description.
func (e Event) String() string { return string(e.AppendTo(nil)) }

// appendTarget appends what a Cluster demand is routed by: its slot (or "any" for a keyless
// one), its endpoint and its node, when set.
func (e *Event) appendTarget(dst []byte) []byte {
	switch {
	case !e.Endpoint.IsZero():
		dst = e.Endpoint.AppendTo(append(dst, " endpoint="...))
	case e.Slot < 0:
		dst = append(dst, " slot=any"...)
	default:
		dst = appendUint(dst, " slot=", uint64(e.Slot))
	}
	if e.Node != 0 {
		dst = appendUint(dst, " node=", uint64(e.Node))
	}
	return dst
}

func appendUint(dst []byte, label string, v uint64) []byte {
	dst = append(dst, label...)
	return strconv.AppendUint(dst, v, 10)
}

// appendClock appends a fixed-format clock reading: seconds with millisecond and nanosecond
// precision ("t=12.000250125").
func appendClock(dst []byte, at time.Duration) []byte {
	dst = append(dst, "t="...)
	if at < 0 {
		dst = append(dst, '-')
		at = -at
	}
	dst = strconv.AppendInt(dst, int64(at/time.Second), 10)
	dst = append(dst, '.')
	frac := int64(at % time.Second)
	var tmp [9]byte
	for i := 8; i >= 0; i-- {
		tmp[i] = byte('0' + frac%10)
		frac /= 10
	}
	return append(dst, tmp[:]...)
}
