package fsm

import (
	"slices"
	"strconv"
)

// ClusterMap is what a Cluster machine publishes for routing (the Publish effect): its Topology,
// and the nodes it tracks, each with the number that its machines' identifiers carry, and the
// node serving each slot. It is an immutable value: runtimes read it from any goroutine.
type ClusterMap struct {
	// Version counts the maps a Cluster machine published, from 1.
	Version uint64
	// Topology is the slot map and membership the machine holds.
	Topology Topology
	// Nodes are the nodes the machine routes to, sorted by Num: the members with a dialable
	// endpoint, the configured seeds being tried, and the redirect targets not yet known as
	// members. Retired nodes are not listed.
	Nodes []MapNode
	// owner[s] is 1 + the index in Nodes of the node serving slot s, or 0.
	owner *[SlotCount]uint16
	// routed is the number of slots with a node.
	routed int
}

// MapNode is one node of a ClusterMap.
type MapNode struct {
	// Num is the node's number, carried by its machines' identifiers (NodeOf).
	Num uint32
	// ID is the node's Cluster ID, or "" for a seed or a redirect target that no topology named
	// yet.
	ID NodeID
	// Addr is the endpoint its connections dial.
	Addr Endpoint
	// Aliases are the endpoints that name the node (Node.Aliases), Addr included.
	Aliases []Endpoint
	// Role is the node's role in the topology (RoleUnknown outside it).
	Role Role
	// Member reports whether the topology names the node.
	Member bool
}

// Owner returns the index in Nodes of the node serving slot, or -1.
func (m *ClusterMap) Owner(slot int) int {
	if m == nil || m.owner == nil || slot < 0 || slot >= SlotCount {
		return -1
	}
	return int(m.owner[slot]) - 1
}

// Complete reports whether a node serves every slot.
func (m *ClusterMap) Complete() bool { return m != nil && m.routed == SlotCount }

// Routed returns the number of slots a node serves.
func (m *ClusterMap) Routed() int {
	if m == nil {
		return 0
	}
	return m.routed
}

// Index returns the index in Nodes of the node numbered num, or -1.
func (m *ClusterMap) Index(num uint32) int {
	if m == nil {
		return -1
	}
	i, ok := slices.BinarySearchFunc(m.Nodes, num, func(n MapNode, num uint32) int {
		switch {
		case n.Num < num:
			return -1
		case n.Num > num:
			return 1
		}
		return 0
	})
	if !ok {
		return -1
	}
	return i
}

// Primaries returns the indexes in Nodes of the members that are primaries, in Nodes' order.
func (m *ClusterMap) Primaries() []int {
	if m == nil {
		return nil
	}
	var out []int
	for i := range m.Nodes {
		if m.Nodes[i].Member && m.Nodes[i].Role == RolePrimary {
			out = append(out, i)
		}
	}
	return out
}

// appendSummary appends a deterministic one-line summary of m: its version, node count, routed
// slots and a digest of its content.
func (m *ClusterMap) appendSummary(dst []byte) []byte {
	dst = appendUint(dst, "map=", m.Version)
	dst = appendUint(dst, " nodes=", uint64(len(m.Nodes)))
	dst = appendUint(dst, " routed=", uint64(m.routed))
	h := newDigest()
	var buf []byte
	for i := range m.Nodes {
		n := &m.Nodes[i]
		buf = appendUint(buf[:0], "", uint64(n.Num))
		buf = append(buf, n.ID...)
		buf = n.Addr.AppendTo(buf)
		buf = append(buf, n.Role.String()...)
		h.write(buf)
	}
	if m.owner != nil {
		for _, o := range m.owner {
			h.byte(byte(o))
			h.byte(byte(o >> 8))
		}
	}
	dst = append(dst, " digest="...)
	return strconv.AppendUint(dst, uint64(h)&0xffffffff, 16)
}

// appendSummary appends a deterministic one-line summary of r: its query, shard and node counts,
// covered slots and a digest of its description.
func (r *TopologyReply) appendSummary(dst []byte) []byte {
	dst = append(dst, "reply="...)
	dst = appendQuote(dst, r.Query.String())
	nodes, covered := 0, 0
	for i := range r.Shards {
		nodes += len(r.Shards[i].Nodes)
		for _, rg := range r.Shards[i].Ranges {
			covered += rg.Len()
		}
	}
	dst = appendUint(dst, " shards=", uint64(len(r.Shards)))
	dst = appendUint(dst, " nodes=", uint64(nodes))
	dst = appendUint(dst, " covered=", uint64(covered))
	h := newDigest()
	h.write([]byte(r.String()))
	dst = append(dst, " digest="...)
	return strconv.AppendUint(dst, uint64(h)&0xffffffff, 16)
}

// digest is a 64-bit FNV-1a hash, for the short digests that traces print.
type digest uint64

func newDigest() digest { return 14695981039346656037 }

func (d *digest) byte(b byte) { *d = (*d ^ digest(b)) * 1099511628211 }

func (d *digest) write(p []byte) {
	for _, b := range p {
		d.byte(b)
	}
}
