package fsm

import "strconv"

// Machine names one of a client's machines. Identifiers (ConnID, TimerID) carry their machine in
// their top bits, so a runtime routes connection and timer events without bookkeeping.
type Machine uint8

// Machines of a client.
const (
	// MachineMux is the command-slot machine (the zero value).
	MachineMux Machine = iota
	// MachinePool is the dedicated-connection pool.
	MachinePool
	// MachinePubSub is the regular (channel and pattern) pub/sub episode.
	MachinePubSub
	// MachineShardedPubSub is the sharded pub/sub episode.
	MachineShardedPubSub
	// Machines is the number of machines every client hosts.
	Machines
)

// The Sentinel machines follow Machines: only a client that resolves its primary through Sentinel
// hosts them, and the engine does not drive them yet (docs/sentinel.md).
const (
	// MachineSentinel is the Sentinel resolution of the primary (Resolution).
	MachineSentinel Machine = Machines + iota
	// MachineSentinelMonitor is the Sentinel event monitor (Monitor).
	MachineSentinelMonitor
)

var machineNames = [...]string{"mux", "pool", "pubsub", "sharded-pubsub", "sentinel", "sentinel-monitor"}

// String returns the machine's name.
func (m Machine) String() string {
	if int(m) < len(machineNames) {
		return machineNames[m]
	}
	return "machine(" + strconv.Itoa(int(m)) + ")"
}

// idShift places the machine in an identifier's top bits.
const idShift = 56

// IDBase is the first identifier of machine m: pass it as the machine's IDBase.
func IDBase(m Machine) uint64 { return uint64(m) << idShift }

// MachineOf returns the machine that allocated a ConnID or TimerID.
func MachineOf(id uint64) Machine { return Machine(id >> idShift) }

// Stepper is what every machine is: one entry point, events in, effects out.
type Stepper interface {
	Step(ev *Event, out *Outbox)
}

// TopicKind is the kind of a pub/sub subscription.
type TopicKind uint8

// Topic kinds.
const (
	// TopicChannel is a SUBSCRIBE channel.
	TopicChannel TopicKind = iota
	// TopicPattern is a PSUBSCRIBE pattern.
	TopicPattern
	// TopicShard is an SSUBSCRIBE shard channel.
	TopicShard
)

var topicKindNames = [...]string{"channel", "pattern", "shard"}

// String returns "channel", "pattern" or "shard".
func (k TopicKind) String() string {
	if int(k) < len(topicKindNames) {
		return topicKindNames[k]
	}
	return "route-kind(" + strconv.Itoa(int(k)) + ")"
}

// Topic is one subscription: a channel, a pattern or a shard channel.
type Topic struct {
	Kind TopicKind
	Name string
}

// AppendTo appends "kind:name" (the name quoted) to dst.
func (r Topic) AppendTo(dst []byte) []byte {
	dst = append(dst, r.Kind.String()...)
	dst = append(dst, ':')
	return appendQuote(dst, r.Name)
}

// Less orders routes by kind, then name.
func (r Topic) Less(o Topic) bool {
	if r.Kind != o.Kind {
		return r.Kind < o.Kind
	}
	return r.Name < o.Name
}
