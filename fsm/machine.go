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
	// MachineCluster is a Cluster client's topology machine (fsm.Cluster): its discovery
	// rounds, refresh timers and topology queries.
	MachineCluster
	// MachineNodeMux is the command-slot machine of one Cluster node. Its identifiers carry the
	// node's number below the machine bits (NodeIDBase, NodeOf).
	MachineNodeMux
	// MachineNodePool is the dedicated-connection pool of one Cluster node, numbered like
	// MachineNodeMux.
	MachineNodePool
	// MachineSentinel is the Sentinel resolution of the primary (Resolution).
	MachineSentinel
	// MachineSentinelMonitor is the Sentinel event monitor (Monitor).
	MachineSentinelMonitor
	// MachineFence is the fence machine (Fence): the identity obligations of connections that
	// died with replies outstanding, discharged by CLIENT KILL ID over control connections.
	MachineFence
	// Machines is the number of machines.
	Machines
)

var machineNames = [...]string{"mux", "pool", "pubsub", "sharded-pubsub", "cluster", "node-mux",
	"node-pool", "sentinel", "sentinel-monitor", "fence"}

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

// nodeShift places a Cluster node's number below the machine bits of a node machine's
// identifiers: 20 bits of node number, then 36 bits of identifiers per node machine.
const nodeShift = 36

// MaxNodeNumber is the largest Cluster node number. A Cluster machine numbers the nodes it
// tracks from 1 and reuses a number, after it reached MaxNodeNumber, only once no node holds
// it (see Cluster).
const MaxNodeNumber = 1<<(idShift-nodeShift) - 1

// NodeIDBase is the first identifier of node machine m (MachineNodeMux or MachineNodePool) of
// the Cluster node numbered node.
func NodeIDBase(m Machine, node uint32) uint64 {
	return IDBase(m) | uint64(node&MaxNodeNumber)<<nodeShift
}

// NodeOf returns the Cluster node number an identifier of a node machine carries, or 0 for the
// identifiers of other machines.
func NodeOf(id uint64) uint32 {
	if m := MachineOf(id); m == MachineNodeMux || m == MachineNodePool {
		return uint32(id>>nodeShift) & MaxNodeNumber
	}
	return 0
}

// isNodeMachine reports whether m is numbered per Cluster node.
func isNodeMachine(m Machine) bool { return m == MachineNodeMux || m == MachineNodePool }

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
