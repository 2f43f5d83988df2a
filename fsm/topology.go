package fsm

import (
	"slices"
	"strconv"
	"strings"
)

// Topology is a client's picture of a Redis Cluster: its member nodes and which primary serves
// each of the 16384 hash slots. It is an immutable value: Apply returns a new Topology and leaves
// the receiver untouched, so a Topology can be published to other goroutines and shared freely.
// The zero Topology knows no node and no slot.
//
// Ownership changes only through Apply, by these rules:
//   - an invalid reply, or one covering no slot, is inconclusive: nothing changes;
//   - a partial reply (covering some slots, as a Cluster with cluster-require-full-coverage no
//     answers while a shard is down) updates the slots it covers and the nodes it names, and
//     removes nothing;
//   - a conclusive reply (covering all 16384 slots) replaces ownership and membership: a node it
//     does not name has left.
type Topology struct {
	// nodes are the members, sorted by ID.
	nodes []Node
	// owner[s] is 1 + the index in nodes of the primary serving slot s, or 0; nil when no slot
	// is served. Never modified once the Topology is built.
	owner *[SlotCount]uint16
	// covered is the number of served slots.
	covered int
	// byEndpoint maps every alias to the node it names (see Lookup).
	byEndpoint map[Endpoint]int
}

// Len returns the number of member nodes.
func (t Topology) Len() int { return len(t.nodes) }

// Nodes returns a copy of the member nodes, sorted by ID.
func (t Topology) Nodes() []Node { return slices.Clone(t.nodes) }

// Covered returns the number of slots a known primary serves.
func (t Topology) Covered() int { return t.covered }

// Complete reports whether every slot is served.
func (t Topology) Complete() bool { return t.covered == SlotCount }

// Owner returns the primary serving slot, if one is known. Slots from SlotCount on have none.
func (t Topology) Owner(slot uint16) (Node, bool) {
	if t.owner == nil || int(slot) >= SlotCount || t.owner[slot] == 0 {
		return Node{}, false
	}
	return t.nodes[t.owner[slot]-1], true
}

// Node returns the member with the given ID.
func (t Topology) Node(id NodeID) (Node, bool) {
	if i, ok := t.index(id); ok {
		return t.nodes[i], true
	}
	return Node{}, false
}

func (t Topology) index(id NodeID) (int, bool) {
	return slices.BinarySearchFunc(t.nodes, id, func(n Node, id NodeID) int { return strings.Compare(string(n.ID), string(id)) })
}

// Lookup returns the member that ep names: the node having ep among its aliases (its preferred
// endpoint, or its IP address or host name at its port). ep must be canonical (see MakeEndpoint).
// When several members share an alias, as when a node was replaced at the same address and the
// Cluster still lists the failed one, Lookup prefers a node that has not failed, then a primary,
// then the smallest ID.
func (t Topology) Lookup(ep Endpoint) (Node, bool) {
	if i, ok := t.byEndpoint[ep]; ok {
		return t.nodes[i], true
	}
	return Node{}, false
}

// Ranges returns the slot ranges the node serves, in ascending order.
func (t Topology) Ranges(id NodeID) []SlotRange {
	i, ok := t.index(id)
	if !ok || t.owner == nil {
		return nil
	}
	var out []SlotRange
	t.eachRange(func(owner int, r SlotRange) {
		if owner == i+1 {
			out = append(out, r)
		}
	})
	return out
}

// Replicas returns the members that name primary as their primary, sorted by ID.
func (t Topology) Replicas(primary NodeID) []Node {
	var out []Node
	for _, n := range t.nodes {
		if n.Role == RoleReplica && n.Primary == primary {
			out = append(out, n)
		}
	}
	return out
}

// Endpoints returns every alias of every member, sorted and without duplicates: the endpoints a
// client may legitimately dial.
func (t Topology) Endpoints() []Endpoint {
	return t.aliases()
}

func (t Topology) aliases() []Endpoint {
	var out []Endpoint
	for i := range t.nodes {
		out = t.nodes[i].appendAliases(out)
	}
	slices.SortFunc(out, CompareEndpoints)
	return slices.Compact(out)
}

// eachRange calls f for each maximal run of slots with one owner (0 for unserved), in order.
func (t Topology) eachRange(f func(owner int, r SlotRange)) {
	if t.owner == nil {
		f(0, SlotRange{0, SlotCount - 1})
		return
	}
	start := 0
	for s := 1; s <= SlotCount; s++ {
		if s == SlotCount || t.owner[s] != t.owner[start] {
			f(int(t.owner[start]), SlotRange{uint16(start), uint16(s - 1)})
			start = s
		}
	}
}

// ownerID returns the ID of the primary serving slot s, or "".
func (t Topology) ownerID(s int) NodeID {
	if t.owner == nil || t.owner[s] == 0 {
		return ""
	}
	return t.nodes[t.owner[s]-1].ID
}

// Equal reports whether t and u hold the same members, described identically, and the same
// ownership.
func (t Topology) Equal(u Topology) bool {
	if !slices.Equal(t.nodes, u.nodes) {
		return false
	}
	if t.owner == nil || u.owner == nil {
		return t.covered == 0 && u.covered == 0
	}
	return *t.owner == *u.owner
}

// Verdict says how a reply was taken.
type Verdict uint8

// Verdicts of Apply.
const (
	// VerdictInconclusive: the reply was invalid or covered no slot; nothing changed.
	VerdictInconclusive Verdict = iota
	// VerdictPartial: the reply covered some slots; those slots and the nodes it names were
	// updated, and nothing was removed.
	VerdictPartial
	// VerdictConclusive: the reply covered every slot and replaced ownership and membership.
	VerdictConclusive
)

var verdictNames = [...]string{"inconclusive", "partial", "conclusive"}

// String returns the lower-case name of the verdict.
func (v Verdict) String() string {
	if int(v) < len(verdictNames) {
		return verdictNames[v]
	}
	return "verdict(" + strconv.Itoa(int(v)) + ")"
}

// Readdress records a member whose preferred endpoint changed.
type Readdress struct {
	// ID is the node.
	ID NodeID
	// From and To are its old and new preferred endpoints.
	From, To Endpoint
}

// TopologyChange reports what Apply did with a reply.
type TopologyChange struct {
	// Query is the command the reply answered.
	Query TopologyQuery
	// Verdict says how the reply was taken.
	Verdict Verdict
	// Err says why an inconclusive reply was ignored: a *TopologyReplyError,
	// ErrEmptyTopologyReply or ErrTopologyTooLarge. It is nil otherwise.
	Err error
	// Covered is the number of slots the reply covered.
	Covered int
	// SlotsMoved is the number of slots whose serving node changed (including slots that gained
	// or lost a server).
	SlotsMoved int
	// Joined are the nodes that were not members before, sorted by ID.
	Joined []Node
	// Left are the members a conclusive reply did not name, sorted by ID. From now on they should
	// receive no new work; their accepted commands may drain.
	Left []Node
	// Readdressed are the members whose preferred endpoint changed, sorted by ID.
	Readdressed []Readdress
	// Retired are the endpoints that named a member before and name none now, sorted: no new
	// connection should go to them once their grace has passed.
	Retired []Endpoint
}

// Changed reports whether the reply changed the Topology.
func (c *TopologyChange) Changed() bool {
	return c.SlotsMoved > 0 || len(c.Joined) > 0 || len(c.Left) > 0 || len(c.Readdressed) > 0 || len(c.Retired) > 0
}

// String returns a deterministic one-line description of c.
func (c *TopologyChange) String() string {
	dst := append([]byte("topology "), c.Verdict.String()...)
	dst = append(dst, " query="...)
	dst = appendQuote(dst, c.Query.String())
	dst = append(dst, " covered="...)
	dst = strconv.AppendInt(dst, int64(c.Covered), 10)
	dst = append(dst, " moved="...)
	dst = strconv.AppendInt(dst, int64(c.SlotsMoved), 10)
	appendIDs := func(dst []byte, name string, nodes []Node) []byte {
		if len(nodes) == 0 {
			return dst
		}
		dst = append(dst, ' ')
		dst = append(dst, name...)
		dst = append(dst, "=["...)
		for i := range nodes {
			if i > 0 {
				dst = append(dst, ' ')
			}
			dst = append(dst, nodes[i].ID...)
		}
		return append(dst, ']')
	}
	dst = appendIDs(dst, "joined", c.Joined)
	dst = appendIDs(dst, "left", c.Left)
	if len(c.Readdressed) > 0 {
		dst = append(dst, " readdressed=["...)
		for i, r := range c.Readdressed {
			if i > 0 {
				dst = append(dst, ' ')
			}
			dst = append(dst, r.ID...)
			dst = append(dst, ':')
			dst = r.From.AppendTo(dst)
			dst = append(dst, "->"...)
			dst = r.To.AppendTo(dst)
		}
		dst = append(dst, ']')
	}
	if len(c.Retired) > 0 {
		dst = append(dst, " retired=["...)
		for i, ep := range c.Retired {
			if i > 0 {
				dst = append(dst, ' ')
			}
			dst = ep.AppendTo(dst)
		}
		dst = append(dst, ']')
	}
	if c.Err != nil {
		dst = append(dst, " err="...)
		dst = appendQuote(dst, c.Err.Error())
	}
	return string(dst)
}

// Apply folds a reply into t and returns the resulting Topology with a report of the change; t
// itself is not modified. The rules are those of Topology: an invalid or empty reply changes
// nothing, a partial one updates only what it covers and names, a conclusive one replaces
// ownership and membership.
//
// A member the reply names takes the reply's description, with one exception: CLUSTER NODES
// knows no preferred endpoint, so a member that a CLUSTER SLOTS or SHARDS reply gave a preferred
// endpoint keeps it as long as it is still one of the member's aliases.
func (t Topology) Apply(r TopologyReply) (Topology, TopologyChange) {
	ch := TopologyChange{Query: r.Query}
	if err := r.Validate(); err != nil {
		ch.Err = err
		return t, ch
	}
	ch.Covered = r.covered()
	if ch.Covered == 0 {
		ch.Err = ErrEmptyTopologyReply
		return t, ch
	}
	conclusive := ch.Covered == SlotCount

	incoming := make([]Node, 0, 8)
	for i := range r.Shards {
		for _, n := range r.Shards[i].Nodes {
			if old, ok := t.Node(n.ID); ok && !r.Query.preferred() && old.Addr.Dialable() && n.Matches(old.Addr) {
				n.Addr = old.Addr
			}
			incoming = append(incoming, n)
		}
	}
	slices.SortFunc(incoming, compareNodeIDs)

	nodes := incoming
	if !conclusive {
		nodes = mergeNodes(t.nodes, incoming)
		if len(nodes) > MaxTopologyNodes {
			ch.Err = ErrTopologyTooLarge
			return t, ch
		}
	}
	owner := new([SlotCount]uint16)
	if !conclusive && t.owner != nil {
		remap := make([]uint16, len(t.nodes)+1)
		for i := range t.nodes {
			j, _ := slices.BinarySearchFunc(nodes, t.nodes[i], compareNodeIDs)
			remap[i+1] = uint16(j + 1)
		}
		for s, o := range t.owner {
			owner[s] = remap[o]
		}
	}
	for i := range r.Shards {
		sh := &r.Shards[i]
		if len(sh.Ranges) == 0 {
			continue
		}
		p, _ := slices.BinarySearchFunc(nodes, sh.Nodes[sh.primary()], compareNodeIDs)
		for _, rg := range sh.Ranges {
			for s := int(rg.First); s <= int(rg.Last); s++ {
				owner[s] = uint16(p + 1)
			}
		}
	}
	u := build(nodes, owner)
	if conclusive {
		ch.Verdict = VerdictConclusive
	} else {
		ch.Verdict = VerdictPartial
	}
	diff(&ch, t, u)
	if u.Equal(t) {
		return t, ch
	}
	return u, ch
}

// mergeNodes returns the union of two ID-sorted lists, taking b's node where both have one ID.
func mergeNodes(a, b []Node) []Node {
	out := make([]Node, 0, len(a)+len(b))
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case j == len(b) || (i < len(a) && a[i].ID < b[j].ID):
			out = append(out, a[i])
			i++
		case i == len(a) || b[j].ID < a[i].ID:
			out = append(out, b[j])
			j++
		default:
			out = append(out, b[j])
			i++
			j++
		}
	}
	return out
}

// build assembles a Topology from ID-sorted nodes and an ownership table, and indexes the
// aliases.
func build(nodes []Node, owner *[SlotCount]uint16) Topology {
	t := Topology{nodes: nodes, owner: owner}
	for _, o := range owner {
		if o != 0 {
			t.covered++
		}
	}
	if t.covered == 0 {
		t.owner = nil
	}
	t.byEndpoint = make(map[Endpoint]int, 2*len(nodes))
	var buf [3]Endpoint
	for i := range nodes {
		for _, ep := range nodes[i].appendAliases(buf[:0]) {
			if j, ok := t.byEndpoint[ep]; !ok || prefer(&nodes[i], &nodes[j]) {
				t.byEndpoint[ep] = i
			}
		}
	}
	return t
}

// prefer reports whether a should answer for a shared alias rather than b (which has the
// smaller ID, as nodes are indexed in ID order): a node that has not failed over one that has,
// then a primary over a replica.
func prefer(a, b *Node) bool {
	if af, bf := a.Health == HealthFailed, b.Health == HealthFailed; af != bf {
		return bf
	}
	return a.Role == RolePrimary && b.Role != RolePrimary
}

// diff fills the change report of going from t to u.
func diff(ch *TopologyChange, t, u Topology) {
	// Compare owners by index: remap[i] is 1 + the index in u of t's node i-1, or 0.
	remap := make([]uint16, len(t.nodes)+1)
	for i := range t.nodes {
		if j, ok := u.index(t.nodes[i].ID); ok {
			remap[i+1] = uint16(j + 1)
		}
	}
	var none [SlotCount]uint16
	before, after := &none, &none
	if t.owner != nil {
		before = t.owner
	}
	if u.owner != nil {
		after = u.owner
	}
	for s := range before {
		if o := before[s]; after[s] != remap[o] || (o != 0 && remap[o] == 0) {
			ch.SlotsMoved++
		}
	}
	i, j := 0, 0
	for i < len(t.nodes) || j < len(u.nodes) {
		switch {
		case j == len(u.nodes) || (i < len(t.nodes) && t.nodes[i].ID < u.nodes[j].ID):
			ch.Left = append(ch.Left, t.nodes[i])
			i++
		case i == len(t.nodes) || u.nodes[j].ID < t.nodes[i].ID:
			ch.Joined = append(ch.Joined, u.nodes[j])
			j++
		default:
			if from, to := t.nodes[i].Addr, u.nodes[j].Addr; from != to {
				ch.Readdressed = append(ch.Readdressed, Readdress{ID: t.nodes[i].ID, From: from, To: to})
			}
			i++
			j++
		}
	}
	was, is := t.aliases(), u.aliases()
	for _, ep := range was {
		if _, found := slices.BinarySearchFunc(is, ep, CompareEndpoints); !found {
			ch.Retired = append(ch.Retired, ep)
		}
	}
}

// Shard is one primary of a Topology with its replicas and the slots it serves.
type Shard struct {
	// Primary is the shard's primary.
	Primary Node
	// Replicas are the members naming Primary as their primary, sorted by ID.
	Replicas []Node
	// Ranges are the slots Primary serves, in ascending order; empty for a primary without slots.
	Ranges []SlotRange
}

// Shards returns the shards of t in a deterministic order: those serving slots by their first
// slot, then the primaries without slots by ID. Replicas whose primary is not a member primary
// belong to no shard; see Orphans.
func (t Topology) Shards() []Shard {
	owned := make([][]SlotRange, len(t.nodes)+1)
	var order []int
	t.eachRange(func(o int, r SlotRange) {
		if o != 0 && len(owned[o]) == 0 {
			order = append(order, o-1)
		}
		owned[o] = append(owned[o], r)
	})
	for i := range t.nodes {
		if t.nodes[i].Role == RolePrimary && len(owned[i+1]) == 0 {
			order = append(order, i)
		}
	}
	out := make([]Shard, 0, len(order))
	for _, p := range order {
		out = append(out, Shard{Primary: t.nodes[p], Replicas: t.Replicas(t.nodes[p].ID), Ranges: owned[p+1]})
	}
	return out
}

// Orphans returns the replicas whose primary is not a member, or is not a primary, sorted by ID.
func (t Topology) Orphans() []Node {
	var out []Node
	for _, n := range t.nodes {
		if n.Role != RoleReplica {
			continue
		}
		if p, ok := t.Node(n.Primary); !ok || p.Role != RolePrimary {
			out = append(out, n)
		}
	}
	return out
}

// String returns a deterministic multi-line description of t: its Shards, each primary followed
// by its replicas, then its Orphans, then the slots no member serves. For example
//
//	shard 0-5460
//	  primary 1c15c326dd5302a9af4451f255c450e28e0eb28c addr=127.0.0.1:30001
//	  replica 4cc6f0ed768f7ca5f15e99ca9e71f9a4d9550150 addr=127.0.0.1:30005 of=1c15c3...
//	uncovered 16000
func (t Topology) String() string {
	var dst []byte
	line := func() {
		if len(dst) > 0 {
			dst = append(dst, '\n')
		}
	}
	for _, sh := range t.Shards() {
		line()
		dst = append(dst, "shard "...)
		dst = appendRanges(dst, sh.Ranges)
		dst = append(dst, "\n  "...)
		dst = sh.Primary.AppendTo(dst)
		for i := range sh.Replicas {
			dst = append(dst, "\n  "...)
			dst = sh.Replicas[i].AppendTo(dst)
		}
	}
	for _, n := range t.Orphans() {
		line()
		dst = append(dst, "orphan "...)
		dst = n.AppendTo(dst)
	}
	var uncovered []SlotRange
	t.eachRange(func(o int, r SlotRange) {
		if o == 0 {
			uncovered = append(uncovered, r)
		}
	})
	if len(uncovered) > 0 {
		line()
		dst = append(dst, "uncovered "...)
		dst = appendRanges(dst, uncovered)
	}
	return string(dst)
}
