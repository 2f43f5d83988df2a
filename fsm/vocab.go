package fsm

import (
	"strconv"
	"time"
)

// ConnID identifies one physical connection attempt. Machines allocate them; runtimes map them to
// real or simulated connections. Zero means "no connection".
type ConnID uint64

// TimerID identifies one armed timer. Machines allocate them; a TimerFired for a timer the machine
// no longer expects is ignored, so runtimes need not win races against cancellation.
type TimerID uint64

// String returns the id as traces and errors print it: the bare number for a command slot's
// connection ("7"), and the machine with the id's number within it for the others
// ("dedicated#1", "pubsub#3", "sharded-pubsub#2"), rather than the raw value with the machine in
// its top bits (see IDBase).
func (c ConnID) String() string { return string(c.AppendTo(nil)) }

// AppendTo appends String's form to dst.
func (c ConnID) AppendTo(dst []byte) []byte { return appendID(dst, uint64(c)) }

// String returns the id as traces print it, like ConnID.String ("5", "dedicated#2").
func (t TimerID) String() string { return string(t.AppendTo(nil)) }

// AppendTo appends String's form to dst.
func (t TimerID) AppendTo(dst []byte) []byte { return appendID(dst, uint64(t)) }

// idPrefixes name each machine in its identifiers; the command slots' identifiers have none.
var idPrefixes = [...]string{MachineMux: "", MachinePool: "dedicated", MachinePubSub: "pubsub",
	MachineShardedPubSub: "sharded-pubsub", MachineCluster: "cluster", MachineSentinel: "sentinel",
	MachineSentinelMonitor: "sentinel-monitor", MachineFence: "fence"}

// appendID appends a ConnID or TimerID: its machine (unless it is the mux), '#', and its number
// within the machine. A Cluster node's identifiers start with "n", the node number and a dot:
// "n3.7" for its command slots, "n3.dedicated#2" for its pool.
func appendID(dst []byte, id uint64) []byte {
	m := MachineOf(id)
	n := id - IDBase(m)
	if isNodeMachine(m) {
		node := NodeOf(id)
		n = id - NodeIDBase(m, node)
		dst = append(dst, 'n')
		dst = strconv.AppendUint(dst, uint64(node), 10)
		dst = append(dst, '.')
		if m == MachineNodePool {
			dst = append(dst, "dedicated#"...)
		}
		return strconv.AppendUint(dst, n, 10)
	}
	switch {
	case m == MachineMux:
	case int(m) < len(idPrefixes):
		dst = append(dst, idPrefixes[m]...)
		dst = append(dst, '#')
	default:
		dst = append(dst, "machine"...)
		dst = strconv.AppendUint(dst, uint64(m), 10)
		dst = append(dst, '#')
	}
	return strconv.AppendUint(dst, n, 10)
}

// WaiterID identifies a caller waiting for a machine's answer (a connection grant or an error).
// Runtimes allocate them.
type WaiterID uint64

// Source says which recovery path produced a lifecycle event or measurement.
type Source uint8

// Sources of recovery work, matching the spec's ReconnectSource.
const (
	SourceUnspecified Source = iota
	SourceCommand
	SourceDedicated
	SourcePubSub
	SourceClusterDiscovery
)

var sourceNames = [...]string{"unspecified", "command", "dedicated", "pubsub", "cluster-discovery"}

// String returns the metric tag form of the source ("command", "dedicated", ...).
func (s Source) String() string {
	if int(s) < len(sourceNames) {
		return sourceNames[s]
	}
	return "source(" + strconv.Itoa(int(s)) + ")"
}

// Scope narrows a recovery path for measurements and lifecycle events: the spec's
// respire.reconnect.scope tag of the Cluster and Sentinel paths. Command slots, dedicated rents
// and pub/sub episodes have none.
type Scope uint8

// Scopes of recovery work.
const (
	// ScopeNone: the path carries no scope tag.
	ScopeNone Scope = iota
	// ScopeClusterDiscovery: a Cluster discovery round (topology and endpoint fallback).
	ScopeClusterDiscovery
	// ScopeSentinelDiscovery: a Sentinel resolution of the primary.
	ScopeSentinelDiscovery
	// ScopeSentinelMonitor: a Sentinel event monitor's subscription connection.
	ScopeSentinelMonitor
)

var scopeNames = [...]string{"none", "cluster-discovery", "sentinel-discovery", "sentinel-monitor"}

// String returns the tag form of the scope ("cluster-discovery", ...), or "none".
func (s Scope) String() string {
	if int(s) < len(scopeNames) {
		return scopeNames[s]
	}
	return "scope(" + strconv.Itoa(int(s)) + ")"
}

// SourceState is the state of the source connection (slot, rent or episode) before endpoint
// health aggregation.
type SourceState uint8

// Source connection states.
const (
	SourceStateUnknown SourceState = iota
	// SourceConnecting: an attempt is scheduled or in progress.
	SourceConnecting
	// SourceConnected: the source has a ready connection.
	SourceConnected
	// SourceDisconnected: the source lost its connection or an attempt failed.
	SourceDisconnected
)

var sourceStateNames = [...]string{"unknown", "connecting", "connected", "disconnected"}

// String returns the lower-case name of the state.
func (s SourceState) String() string {
	if int(s) < len(sourceStateNames) {
		return sourceStateNames[s]
	}
	return "source-state(" + strconv.Itoa(int(s)) + ")"
}

// EndpointState is the aggregate health of an endpoint.
type EndpointState uint8

// Aggregate endpoint states.
const (
	// EndpointDisconnected: at least one slot of the endpoint has no ready connection.
	EndpointDisconnected EndpointState = iota
	// EndpointConnected: every slot of the endpoint has a ready connection.
	EndpointConnected
)

// String returns "connected" or "disconnected".
func (s EndpointState) String() string {
	if s == EndpointConnected {
		return "connected"
	}
	return "disconnected"
}

// Lifecycle is a connection-state-change observation, the payload of an Emit effect. It carries
// the spec's metadata; the runtime adds the endpoint.
type Lifecycle struct {
	// State is the aggregate endpoint health after the transition.
	State EndpointState
	// Source is the recovery path.
	Source Source
	// Scope narrows the path (ScopeNone for command slots, dedicated rents and pub/sub).
	Scope Scope
	// SourceState is the state of the source connection.
	SourceState SourceState
	// Slot is the command slot, or -1 for events that concern no slot.
	Slot int
	// Attempt is the one-based configured attempt, or 0 without policy metadata.
	Attempt int
	// NextDelay is the actual delay scheduled before Attempt, meaningful when Scheduled; or, with
	// Recycle RecycleRetrying, the delay before the lifetime replacement is retried.
	NextDelay time.Duration
	// Scheduled reports that an attempt was scheduled (NextDelay is set).
	Scheduled bool
	// Exhausted reports that this source reached its configured attempt limit.
	Exhausted bool
	// Episode is the process-local episode id, or 0 when the path has none.
	Episode uint64
	// Err is the connection error of a failure, or nil.
	Err error
	// Recycle marks an informational observation of lifetime recycling (RecycleNone otherwise).
	// A recycle never changes the source's state: it stays connected throughout.
	Recycle RecycleState
}

// AppendTo appends a deterministic description of l to dst.
func (l *Lifecycle) AppendTo(dst []byte) []byte {
	dst = append(dst, "lifecycle source="...)
	dst = append(dst, l.Source.String()...)
	if l.Scope != ScopeNone {
		dst = append(dst, " scope="...)
		dst = append(dst, l.Scope.String()...)
	}
	dst = append(dst, " state="...)
	dst = append(dst, l.SourceState.String()...)
	dst = append(dst, " endpoint="...)
	dst = append(dst, l.State.String()...)
	if l.Slot >= 0 {
		dst = append(dst, " slot="...)
		dst = strconv.AppendInt(dst, int64(l.Slot), 10)
	}
	if l.Attempt > 0 {
		dst = append(dst, " attempt="...)
		dst = strconv.AppendInt(dst, int64(l.Attempt), 10)
	}
	if l.Scheduled {
		dst = append(dst, " delay="...)
		dst = appendDuration(dst, l.NextDelay)
	}
	if l.Exhausted {
		dst = append(dst, " exhausted"...)
	}
	if l.Recycle != RecycleNone {
		dst = append(dst, " recycle="...)
		dst = append(dst, l.Recycle.String()...)
		if l.Recycle == RecycleRetrying {
			dst = append(dst, " retry-delay="...)
			dst = appendDuration(dst, l.NextDelay)
		}
	}
	if l.Episode != 0 {
		dst = append(dst, " episode="...)
		dst = strconv.AppendUint(dst, l.Episode, 10)
	}
	if l.Err != nil {
		dst = append(dst, " err="...)
		dst = appendQuote(dst, l.Err.Error())
	}
	return dst
}

// Instrument names a recovery measurement.
type Instrument uint8

// Recovery instruments, matching the spec's metric names.
const (
	// InstrumentAttempt is respire.connection.reconnect.attempt (value: attempt number).
	InstrumentAttempt Instrument = iota + 1
	// InstrumentDelay is respire.connection.reconnect.delay (value: seconds).
	InstrumentDelay
	// InstrumentExhausted is respire.connection.reconnect.exhausted (value: 1).
	InstrumentExhausted
	// InstrumentRecycled is redis.client.connection.recycle (value: 1): a connection that reached
	// its maximum lifetime was replaced.
	InstrumentRecycled
	// InstrumentSentinelFailover is respire.sentinel.failover (value: 1): a Sentinel resolution
	// validated a primary other than the previous one. The runtime tags it with the new primary.
	InstrumentSentinelFailover
	// InstrumentSentinelGenerationsRetired is respire.sentinel.generations.retired (value: +1
	// or -1, an up-down count): the retired primary generations whose connections still drain.
	// The runtime records it; steady growth means stuck work.
	InstrumentSentinelGenerationsRetired
	// InstrumentSlotMigrationsSkipped is respire.cluster.slot_migrations.skipped (value: the
	// moves skipped): SMIGRATED named slots its source no longer owned, or a node the topology
	// does not know, so MOVED redirects and a topology refresh find the owners instead.
	InstrumentSlotMigrationsSkipped
)

// Name returns the OpenTelemetry instrument name.
func (i Instrument) Name() string {
	switch i {
	case InstrumentAttempt:
		return "respire.connection.reconnect.attempt"
	case InstrumentDelay:
		return "respire.connection.reconnect.delay"
	case InstrumentExhausted:
		return "respire.connection.reconnect.exhausted"
	case InstrumentRecycled:
		return "redis.client.connection.recycle"
	case InstrumentSentinelFailover:
		return "respire.sentinel.failover"
	case InstrumentSentinelGenerationsRetired:
		return "respire.sentinel.generations.retired"
	case InstrumentSlotMigrationsSkipped:
		return "respire.cluster.slot_migrations.skipped"
	}
	return "instrument(" + strconv.Itoa(int(i)) + ")"
}

// Metric is a measurement, the payload of a Record effect. The runtime adds endpoint tags.
type Metric struct {
	// Instrument is what is measured.
	Instrument Instrument
	// Source is the recovery path (the respire.connection.source tag).
	Source Source
	// Scope is the respire.reconnect.scope tag, or ScopeNone for none.
	Scope Scope
	// Value is the attempt number, the delay in seconds, or 1 for an exhaustion or a recycle.
	Value float64
}

// Outcome is the answer a machine gives a waiter.
type Outcome uint8

// Waiter outcomes.
const (
	// OutcomeGranted: the waiter may use the granted slot's connection.
	OutcomeGranted Outcome = iota + 1
	// OutcomeFailed: a connection attempt failed; Err is the connection error.
	OutcomeFailed
	// OutcomeExhausted: reconnect limit reached; Err is the last connection error.
	OutcomeExhausted
	// OutcomeClosed: the generation was retired or disposed.
	OutcomeClosed
	// OutcomeCancelled: the waiter withdrew.
	OutcomeCancelled
	// OutcomeOverflow: too many waiters are pending; the demand was not queued.
	OutcomeOverflow
)

var outcomeNames = [...]string{"none", "granted", "failed", "exhausted", "closed", "cancelled", "overflow"}

// String returns the lower-case name of the outcome.
func (o Outcome) String() string {
	if int(o) < len(outcomeNames) {
		return outcomeNames[o]
	}
	return "outcome(" + strconv.Itoa(int(o)) + ")"
}

// appendDuration appends d in Go's duration syntax without allocating.
func appendDuration(dst []byte, d time.Duration) []byte {
	var buf [32]byte
	return append(dst, formatDuration(buf[:0], d)...)
}

// formatDuration writes d like time.Duration.String but into buf.
func formatDuration(buf []byte, d time.Duration) []byte {
	if d == 0 {
		return append(buf, "0s"...)
	}
	if d < 0 {
		buf = append(buf, '-')
		d = -d
	}
	switch {
	case d < time.Microsecond:
		buf = strconv.AppendInt(buf, int64(d), 10)
		return append(buf, "ns"...)
	case d < time.Millisecond:
		buf = appendFraction(buf, int64(d), int64(time.Microsecond))
		return append(buf, "µs"...)
	case d < time.Second:
		buf = appendFraction(buf, int64(d), int64(time.Millisecond))
		return append(buf, "ms"...)
	}
	h := d / time.Hour
	d -= h * time.Hour
	m := d / time.Minute
	d -= m * time.Minute
	if h > 0 {
		buf = strconv.AppendInt(buf, int64(h), 10)
		buf = append(buf, 'h')
	}
	if h > 0 || m > 0 {
		buf = strconv.AppendInt(buf, int64(m), 10)
		buf = append(buf, 'm')
	}
	buf = appendFraction(buf, int64(d), int64(time.Second))
	return append(buf, 's')
}

// appendFraction appends v/unit as a decimal with trailing zeros removed.
func appendFraction(buf []byte, v, unit int64) []byte {
	buf = strconv.AppendInt(buf, v/unit, 10)
	frac := v % unit
	if frac == 0 {
		return buf
	}
	digits := 0
	for u := unit; u > 1; u /= 10 {
		digits++
	}
	var tmp [20]byte
	for i := digits - 1; i >= 0; i-- {
		tmp[i] = byte('0' + frac%10)
		frac /= 10
	}
	end := digits
	for end > 0 && tmp[end-1] == '0' {
		end--
	}
	buf = append(buf, '.')
	return append(buf, tmp[:end]...)
}

// appendQuote appends s quoted exactly as strconv.AppendQuote would. Error texts are almost always
// printable ASCII without quotes or backslashes; those are copied between quotes directly, which
// keeps trace formatting cheap. Anything else takes strconv's path.
func appendQuote(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < ' ' || c > '~' || c == '"' || c == '\\' {
			return strconv.AppendQuote(dst, s)
		}
	}
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"')
}
