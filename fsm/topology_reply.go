package fsm

import (
	"errors"
	"slices"
	"strconv"
)

// SlotCount is the number of hash slots of a Redis Cluster: keys map to slots 0 to 16383.
const SlotCount = 16384

// MaxTopologyNodes bounds the nodes of one topology reply and of a Topology: 4,096, four times the
// 1,000 nodes Redis Cluster is designed for. A reply naming more is invalid, and a partial reply
// that would grow a Topology beyond it is inconclusive.
const MaxTopologyNodes = 4096

// SlotRange is the inclusive range of hash slots First to Last.
type SlotRange struct {
	First, Last uint16
}

// Len returns the number of slots in r, or 0 when r is invalid.
func (r SlotRange) Len() int {
	if r.Last < r.First || r.Last >= SlotCount {
		return 0
	}
	return int(r.Last-r.First) + 1
}

// String returns "first-last", or the single slot when the range holds one.
func (r SlotRange) String() string { return string(r.AppendTo(nil)) }

// AppendTo appends the String form of r to dst.
func (r SlotRange) AppendTo(dst []byte) []byte {
	dst = strconv.AppendUint(dst, uint64(r.First), 10)
	if r.Last != r.First {
		dst = append(dst, '-')
		dst = strconv.AppendUint(dst, uint64(r.Last), 10)
	}
	return dst
}

// TopologyQuery names the command a topology reply answers.
type TopologyQuery uint8

// Topology queries.
const (
	QueryUnknown TopologyQuery = iota
	// QueryClusterSlots is CLUSTER SLOTS: slot ranges with each range's nodes, preferred
	// endpoints first. It leaves out failed and loading replicas.
	QueryClusterSlots
	// QueryClusterShards is CLUSTER SHARDS (Redis 7.0 and later): shards with their slots and
	// every node, preferred endpoints and health included.
	QueryClusterShards
	// QueryClusterNodes is CLUSTER NODES: every node the answering node knows, with flags, as
	// text. It gives IP addresses and host names but no preferred endpoint.
	QueryClusterNodes
	// QueryMoved is a MOVED redirect taken as a reply: it moves one slot to a known member,
	// which serves it as a primary from now on.
	QueryMoved
)

var queryNames = [...]string{"unknown", "CLUSTER SLOTS", "CLUSTER SHARDS", "CLUSTER NODES", "MOVED"}

// String returns the command, such as "CLUSTER SLOTS".
func (q TopologyQuery) String() string {
	if int(q) < len(queryNames) {
		return queryNames[q]
	}
	return "query(" + strconv.Itoa(int(q)) + ")"
}

// preferred reports whether the query's nodes carry the server's preferred endpoint.
func (q TopologyQuery) preferred() bool { return q != QueryClusterNodes }

// ReplyShard is one shard of a topology reply: the slots it serves and its nodes.
type ReplyShard struct {
	// Ranges are the slots the shard's primary serves; empty for a shard without slots.
	Ranges []SlotRange
	// Nodes are the shard's members: at most one with RolePrimary (exactly one when Ranges is not
	// empty), the others with RoleReplica and Primary set to the primary's ID.
	Nodes []Node
}

// primary returns the index of the shard's primary in Nodes, or -1.
func (s *ReplyShard) primary() int {
	for i := range s.Nodes {
		if s.Nodes[i].Role == RolePrimary {
			return i
		}
	}
	return -1
}

// SlotMigration is a slot the answering node is moving, as CLUSTER NODES shows it on the
// answering node's own line ("[slot->-id]" or "[slot-<-id]").
type SlotMigration struct {
	// Slot is the slot being moved.
	Slot uint16
	// Peer is the node the slot moves to (Importing false) or comes from (Importing true).
	Peer NodeID
	// Importing reports that the answering node is receiving the slot; false means it is
	// handing the slot over (MIGRATING).
	Importing bool
}

// TopologyReply is what one node answered to a topology query, parsed into values. The parsers in
// netio/wire build them; Topology.Apply folds them into a Topology.
type TopologyReply struct {
	// Query is the command that was answered.
	Query TopologyQuery
	// Shards are the shards the reply describes, in the reply's order.
	Shards []ReplyShard
	// Self is the answering node when the reply says which it is (CLUSTER NODES marks it
	// "myself"), or "".
	Self NodeID
	// Migrations are the slots the answering node is moving, when the reply says (CLUSTER NODES).
	Migrations []SlotMigration
}

// ErrInvalidTopologyReply is wrapped by every *TopologyReplyError.
var ErrInvalidTopologyReply = errors.New("respire: invalid cluster topology reply")

// ErrEmptyTopologyReply is the reason a reply covering no slot is inconclusive: a Cluster that is
// restarting, or a node that has not joined yet, answers so, and it says nothing about who
// serves what.
var ErrEmptyTopologyReply = errors.New("respire: cluster topology reply covers no slot")

// ErrTopologyTooLarge is the reason a partial reply is inconclusive when applying it would make a
// Topology hold more than MaxTopologyNodes nodes.
var ErrTopologyTooLarge = errors.New("respire: cluster topology would exceed 4096 nodes")

// TopologyReplyError reports a TopologyReply that breaks a rule of Validate. It never includes
// host names or addresses.
type TopologyReplyError struct {
	// Query is the command the reply answered.
	Query TopologyQuery
	// Reason says which rule is broken.
	Reason string
}

// Error implements error.
func (e *TopologyReplyError) Error() string {
	return "respire: invalid " + e.Query.String() + " reply: " + e.Reason
}

// Unwrap returns ErrInvalidTopologyReply.
func (e *TopologyReplyError) Unwrap() error { return ErrInvalidTopologyReply }

// Validate checks the rules every reply obeys and returns a *TopologyReplyError for the first one
// broken:
//   - at most MaxTopologyNodes nodes, each with a non-empty ID that appears once in the reply, a
//     role, and a port within 0 to 65535;
//   - each shard has at most one primary, and exactly one when it serves slots;
//   - the replicas of a shard with a primary name it as their Primary;
//   - slot ranges lie within 0 to 16383, with First not after Last, and no slot is served by two
//     ranges;
//   - a CLUSTER NODES reply names its answering node, which is one of its nodes.
func (r *TopologyReply) Validate() error {
	fail := func(reason string) error { return &TopologyReplyError{Query: r.Query, Reason: reason} }
	nodes := 0
	for i := range r.Shards {
		nodes += len(r.Shards[i].Nodes)
	}
	if nodes > MaxTopologyNodes {
		return fail("more than 4096 nodes")
	}
	ids := make([]NodeID, 0, nodes)
	var seen [SlotCount / 64]uint64
	for i := range r.Shards {
		sh := &r.Shards[i]
		p := sh.primary()
		for j := range sh.Nodes {
			n := &sh.Nodes[j]
			switch {
			case n.ID == "":
				return fail("a node has no ID")
			case n.Role != RolePrimary && n.Role != RoleReplica:
				return fail("a node has no role")
			case n.Role == RolePrimary && j != p:
				return fail("a shard has two primaries")
			case n.Role == RolePrimary && n.Primary != "":
				return fail("a primary names a primary of its own")
			case n.Role == RoleReplica && p >= 0 && n.Primary != sh.Nodes[p].ID:
				return fail("a replica does not name its shard's primary")
			case n.Addr.Port < 0 || n.Addr.Port > 65535:
				return fail("a port is out of range")
			}
			ids = append(ids, n.ID)
		}
		if len(sh.Ranges) > 0 && p < 0 {
			return fail("a shard serves slots without a primary")
		}
		for _, rg := range sh.Ranges {
			if rg.Len() == 0 {
				return fail("a slot range is out of bounds or reversed")
			}
			for s := int(rg.First); s <= int(rg.Last); s++ {
				if seen[s/64]&(1<<(s%64)) != 0 {
					return fail("a slot is served by two ranges")
				}
				seen[s/64] |= 1 << (s % 64)
			}
		}
	}
	slices.Sort(ids)
	for i := 1; i < len(ids); i++ {
		if ids[i] == ids[i-1] {
			return fail("a node appears twice")
		}
	}
	if r.Query == QueryClusterNodes && r.Self == "" {
		return fail("the answering node (myself) is missing")
	}
	if r.Self != "" {
		if _, found := slices.BinarySearch(ids, r.Self); !found {
			return fail("the answering node is not among the nodes")
		}
	}
	return nil
}

// covered returns the number of slots the reply's ranges serve. Call it on a valid reply.
func (r *TopologyReply) covered() int {
	n := 0
	for i := range r.Shards {
		for _, rg := range r.Shards[i].Ranges {
			n += rg.Len()
		}
	}
	return n
}

// String returns a deterministic multi-line description of r in its own order, for test
// failures and traces.
func (r *TopologyReply) String() string {
	dst := append([]byte(nil), r.Query.String()...)
	dst = append(dst, " reply"...)
	if r.Self != "" {
		dst = append(dst, " self="...)
		dst = append(dst, r.Self...)
	}
	for i := range r.Shards {
		sh := &r.Shards[i]
		dst = append(dst, "\nshard "...)
		dst = appendRanges(dst, sh.Ranges)
		for j := range sh.Nodes {
			dst = append(dst, "\n  "...)
			dst = sh.Nodes[j].AppendTo(dst)
		}
	}
	for _, m := range r.Migrations {
		dst = append(dst, "\nmigration slot="...)
		dst = strconv.AppendUint(dst, uint64(m.Slot), 10)
		if m.Importing {
			dst = append(dst, " importing from "...)
		} else {
			dst = append(dst, " migrating to "...)
		}
		dst = append(dst, m.Peer...)
	}
	return string(dst)
}

// appendRanges appends ranges separated by commas, or "-" when there are none.
func appendRanges(dst []byte, ranges []SlotRange) []byte {
	if len(ranges) == 0 {
		return append(dst, '-')
	}
	for i, rg := range ranges {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = rg.AppendTo(dst)
	}
	return dst
}
