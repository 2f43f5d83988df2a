package scenario

import "github.com/respire-go/respire/fsm"

// Target names what a fault hits: a node (all its connections, and connects to it), or one
// client slot (that slot's current connection, and connects made for it). Exactly one is set.
type Target struct {
	// Node is a node id.
	Node string `yaml:"node,omitempty"`
	// ClientSlot is a slot index of the client, in [0, client.connections).
	ClientSlot *int `yaml:"client_slot,omitempty"`
}

// WindowFault is a fault active on its target for a window: refuse and blackhole.
type WindowFault struct {
	Target `yaml:",inline"`
	// For is how long the fault lasts; omitted means until the end of the run.
	For *TimeRange `yaml:"for,omitempty"`
}

// Directions of a black-hole (BlackholeFault.Direction).
const (
	// DirectionBoth holds bytes and connects both ways (the default).
	DirectionBoth = "both"
	// DirectionToNode holds what the client sends (data and SYNs); replies still arrive.
	DirectionToNode = "to_node"
	// DirectionToClient holds what the node sends (replies and SYN-ACKs); commands still arrive.
	DirectionToClient = "to_client"
)

// BlackholeFault holds the target's packets for its window, in both directions or one (a
// one-way partition). Held bytes are delivered when it heals, and a held SYN or SYN-ACK is
// retransmitted as TCP does (after 1s, then doubling) until the connect timeout.
type BlackholeFault struct {
	Target `yaml:",inline"`
	// For is how long the fault lasts; omitted means until the end of the run.
	For *TimeRange `yaml:"for,omitempty"`
	// Direction is both (default), to_node or to_client.
	Direction string `yaml:"direction,omitempty"`
}

// Holds reports whether the black-hole holds packets going to the node (toNode) or to the client.
func (f *BlackholeFault) Holds(toNode bool) bool {
	switch f.Direction {
	case DirectionToNode:
		return toNode
	case DirectionToClient:
		return !toNode
	}
	return true
}

// AcceptThenDropFault: during its window, every new connection of the target is accepted,
// completes its handshake, and is dropped After later (default 0: as soon as it is ready).
type AcceptThenDropFault struct {
	Target `yaml:",inline"`
	// For is how long new connections are dropped; omitted means until the end of the run.
	For *TimeRange `yaml:"for,omitempty"`
	// After is the extra time a ready connection lives before it is dropped.
	After *TimeRange `yaml:"after,omitempty"`
}

// DropAfterBytesFault cuts a connection once Bytes more bytes have crossed it (both directions
// counted): the target slot's current connection (or its next one if it has none), or every
// connection open to the target node (or the next one accepted if there is none).
type DropAfterBytesFault struct {
	Target `yaml:",inline"`
	// Bytes is the number of bytes that may still cross, at least 1. A range "a..b" is resolved
	// from the seed.
	Bytes IntRange `yaml:"bytes"`
}

// DelayFault adds Extra one-way latency to the target's bytes and connects for its window.
type DelayFault struct {
	Target `yaml:",inline"`
	// For is the window's length; omitted means until the end of the run.
	For *TimeRange `yaml:"for,omitempty"`
	// Extra is the added one-way latency (positive).
	Extra TimeRange `yaml:"extra"`
}

// KillFault kills a node: every connection to it is reset and new connects are refused until it
// restarts. The node keeps its dataset across the restart, modelling persistence, unless
// LoseData.
type KillFault struct {
	// Node is the node to kill.
	Node string `yaml:"node"`
	// RestartAfter is when the node restarts after the kill; omitted means never.
	RestartAfter *TimeRange `yaml:"restart_after,omitempty"`
	// LoseData makes the node lose its dataset at the kill, as a server without persistence
	// does: it restarts empty. The linearizability checker counts the loss as a deletion of
	// every key at the kill's instant.
	LoseData bool `yaml:"lose_data,omitempty"`
	// NewRunID makes the node restart as a new process, with a new run id (INFO's run_id), as
	// a real restart does; without it the restart keeps the run id, as a process that was
	// stopped and continued would. No part of the client reads a data node's run id: the
	// restart is traced with the new id ("fault run-id").
	NewRunID bool `yaml:"new_run_id,omitempty"`
	// MoveTo, when set, is the IP address the node restarts at: from the restart on, the node's
	// name resolves there through the simulated DNS, the client's dials follow it by name
	// (engine.DialAddresses, as in production), a Cluster announces the new address in CLUSTER
	// SLOTS and its redirects, and Sentinels report it for a primary. The old address refuses
	// connects, or black-holes them (OldAddress). The port stays: DNS moves a name to another
	// address, never to another port.
	MoveTo string `yaml:"move_to,omitempty"`
	// OldAddress is what the address the node moved from does after the move: refuse (the
	// default: connects are answered with a reset) or blackhole (connects get no answer and
	// hang until the connect timeout, as at an address nothing listens at any more behind a
	// firewall). Only with MoveTo.
	OldAddress string `yaml:"old_address,omitempty"`
}

// Values of KillFault.OldAddress.
const (
	OldAddressRefuse    = "refuse"
	OldAddressBlackhole = "blackhole"
)

// HandshakeErrorFault makes a node answer HELLO and AUTH with an error reply for its window.
type HandshakeErrorFault struct {
	// Node is the node.
	Node string `yaml:"node"`
	// For is the window's length; omitted means until the end of the run.
	For *TimeRange `yaml:"for,omitempty"`
	// Reply is the error reply, code first: "WRONGPASS invalid username-password pair",
	// "NOPERM ...", "LOADING Redis is loading the dataset in memory".
	Reply string `yaml:"reply"`
}

// PauseFault stops a node from processing (like SIGSTOP): connects still complete (the kernel
// accepts them) and bytes queue up, but nothing is parsed or answered until it resumes.
type PauseFault struct {
	// Node is the node.
	Node string `yaml:"node"`
	// For is the pause's length; omitted means until the end of the run.
	For *TimeRange `yaml:"for,omitempty"`
}

// SubscribeErrorFault makes a node refuse subscription commands of the given kinds with an error
// reply for its window, as an ACL change (NOPERM) does. Unsubscriptions still work.
type SubscribeErrorFault struct {
	// Node is the node.
	Node string `yaml:"node"`
	// For is the window's length; omitted means until the end of the run.
	For *TimeRange `yaml:"for,omitempty"`
	// Kinds lists the refused kinds: channel, pattern, shard. Empty means all three.
	Kinds []string `yaml:"kinds,omitempty"`
	// Reply is the error reply (default Redis's NOPERM refusal of channels).
	Reply string `yaml:"reply,omitempty"`
}

// Refuses reports whether the fault refuses subscriptions of kind.
func (f *SubscribeErrorFault) Refuses(kind fsm.TopicKind) bool {
	if len(f.Kinds) == 0 {
		return true
	}
	for _, k := range f.Kinds {
		if tk, ok := TopicKind(k); ok && tk == kind {
			return true
		}
	}
	return false
}

// PushFault makes a node send unsolicited RESP3 pushes on its target's connections for its
// window, one every Every on each connection that speaks RESP3 (a RESP2 connection has no such
// frame): out-of-band notices such as the invalidations of client-side caching, which arrive
// between replies. A client must never take one for a command's reply (DESIGN checker 4:
// pushes never complete commands).
type PushFault struct {
	Target `yaml:",inline"`
	// For is the window's length; omitted means until the end of the run.
	For *TimeRange `yaml:"for,omitempty"`
	// Every is the interval between two pushes on a connection (positive).
	Every TimeRange `yaml:"every"`
}

// Fault is one entry of the fault timeline: a start time and exactly one kind.
type Fault struct {
	// At is when the fault starts (a range "a..b" is resolved from the seed).
	At TimeRange `yaml:"at"`
	// Every repeats the fault: it starts again at At+Every, At+2*Every and so on, Count times in
	// all, or until the end of the run when Count is zero. Resolve expands the repetitions into
	// entries of their own, each drawing its ranges anew from the seed (a flapping node with a
	// random downtime per cycle). At least 1ms.
	Every *TimeRange `yaml:"every,omitempty"`
	// Count is the number of starts of a repeated fault, the first included (zero: until the end
	// of the run). Requires Every.
	Count int `yaml:"count,omitempty"`
	// Refuse refuses new connections of its target for its window (a refused connect: the peer
	// answers with a reset).
	Refuse *WindowFault `yaml:"refuse,omitempty"`
	// AcceptThenDrop accepts new connections, lets them finish their handshake, then drops them.
	AcceptThenDrop *AcceptThenDropFault `yaml:"accept_then_drop,omitempty"`
	// Drop cuts the target's connections now: the client sees a reset.
	Drop *Target `yaml:"drop,omitempty"`
	// DropAfterBytes cuts a connection once a number of further bytes crossed it: how "written
	// but no reply" is produced.
	DropAfterBytes *DropAfterBytesFault `yaml:"drop_after_bytes,omitempty"`
	// LoseReply makes the node apply the next application command of the target (the slot's
	// current or next connection, or any connection of the node) and lose its reply; that
	// connection is then reset.
	LoseReply *Target `yaml:"lose_reply,omitempty"`
	// Blackhole makes the target half-open for its window: bytes in both directions (or in
	// the one its Direction names) stop
	// arriving, with no reset; new connects hang until the connect timeout. When it heals, the
	// held bytes are delivered (as TCP retransmission would), so the stream stays intact.
	Blackhole *BlackholeFault `yaml:"blackhole,omitempty"`
	// Delay adds latency to the target for its window.
	Delay *DelayFault `yaml:"delay,omitempty"`
	// Kill kills a node, optionally restarting it later with its dataset.
	Kill *KillFault `yaml:"kill,omitempty"`
	// HandshakeError makes a node reject HELLO and AUTH with an error reply for its window.
	HandshakeError *HandshakeErrorFault `yaml:"handshake_error,omitempty"`
	// Pause stops a node from processing for its window.
	Pause *PauseFault `yaml:"pause,omitempty"`
	// SubscribeError makes a node refuse subscription commands for its window.
	SubscribeError *SubscribeErrorFault `yaml:"subscribe_error,omitempty"`
	// Push makes a node send unsolicited RESP3 pushes between its replies.
	Push *PushFault `yaml:"push,omitempty"`
	// Cluster changes a simulated Redis Cluster (cluster.go).
	Cluster *ClusterFault `yaml:"cluster,omitempty"`
	// Sentinel changes a simulated Sentinel deployment (sentinel.go).
	Sentinel *SentinelFault `yaml:"sentinel,omitempty"`
	// CommandError makes a node refuse the commands it names with an error reply.
	CommandError *CommandErrorFault `yaml:"command_error,omitempty"`
	// SlowReply makes a node busy for a while after the commands it names.
	SlowReply *SlowReplyFault `yaml:"slow_reply,omitempty"`
	// MalformedReply makes a node answer the commands it names with a malformed frame.
	MalformedReply *MalformedReplyFault `yaml:"malformed_reply,omitempty"`
}

// FaultKinds lists the YAML names of the fault kinds.
var FaultKinds = []string{"refuse", "accept_then_drop", "drop", "drop_after_bytes", "lose_reply",
	"blackhole", "delay", "kill", "handshake_error", "pause", "subscribe_error", "push", "cluster",
	"command_error", "slow_reply", "malformed_reply", "sentinel"}

// Kind returns the YAML name of the fault's kind, or "" if none is set. With several set it
// returns the first, in FaultKinds order (Validate rejects that).
func (f *Fault) Kind() string {
	kinds := f.kinds()
	if len(kinds) == 0 {
		return ""
	}
	return kinds[0]
}

func (f *Fault) kinds() []string {
	var out []string
	set := []bool{f.Refuse != nil, f.AcceptThenDrop != nil, f.Drop != nil, f.DropAfterBytes != nil,
		f.LoseReply != nil, f.Blackhole != nil, f.Delay != nil, f.Kill != nil, f.HandshakeError != nil,
		f.Pause != nil, f.SubscribeError != nil, f.Push != nil, f.Cluster != nil, f.CommandError != nil,
		f.SlowReply != nil, f.MalformedReply != nil, f.Sentinel != nil}
	for i, s := range set {
		if s {
			out = append(out, FaultKinds[i])
		}
	}
	return out
}
