package fsm

import (
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// The properties below generate Clusters of up to six shards over a small pool of node IDs and
// addresses, so that replies share, swap and reuse nodes and addresses as real ones do after
// failovers and replacements.

// drawNode draws a node with an ID from a pool of 12 and an address from a pool of 8 hosts and
// two ports, with and without a host name.
func drawNode(t *rapid.T, idn int, role Role, primaryID NodeID) Node {
	ip := rapid.SampledFrom([]string{"10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.4", "::1", "2001:db8::7", "10.0.0.5", "10.0.0.6"}).Draw(t, "ip")
	port := rapid.SampledFrom([]int{7000, 7001}).Draw(t, "port")
	n := Node{ID: id(idn), IP: ip, Role: role, Primary: primaryID,
		Health: rapid.SampledFrom([]Health{HealthUnknown, HealthOnline, HealthFailed}).Draw(t, "health")}
	n.Addr = Endpoint{Host: ip, Port: port}
	if rapid.Bool().Draw(t, "named") {
		n.Hostname = rapid.SampledFrom([]string{"node-a", "node-b", "node-c"}).Draw(t, "hostname")
		if rapid.Bool().Draw(t, "prefer-name") {
			n.Addr.Host = n.Hostname
		}
	}
	return n
}

// drawReply draws a valid reply: distinct node IDs, each shard a primary with up to two
// replicas, slots cut into ranges dealt to the shards. covering decides whether every slot is
// dealt out (a conclusive reply) or some are left out.
func drawReply(t *rapid.T, covering bool) TopologyReply {
	query := rapid.SampledFrom([]TopologyQuery{QueryClusterSlots, QueryClusterShards, QueryClusterNodes}).Draw(t, "query")
	ids := rapid.Permutation([]int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}).Draw(t, "ids")
	shards := rapid.IntRange(1, 4).Draw(t, "shards")
	r := TopologyReply{Query: query}
	next := 0
	for i := 0; i < shards; i++ {
		p := drawNode(t, ids[next], RolePrimary, "")
		next++
		sh := ReplyShard{Nodes: []Node{p}}
		for range rapid.IntRange(0, 2).Draw(t, "replicas") {
			sh.Nodes = append(sh.Nodes, drawNode(t, ids[next], RoleReplica, p.ID))
			next++
		}
		r.Shards = append(r.Shards, sh)
	}
	// Cut the slots at up to 8 points and deal the pieces out.
	cuts := rapid.SliceOfNDistinct(rapid.IntRange(1, SlotCount-1), 0, 8, rapid.ID[int]).Draw(t, "cuts")
	slices.Sort(cuts)
	bounds := append(append([]int{0}, cuts...), SlotCount)
	for i := 0; i+1 < len(bounds); i++ {
		owner := rapid.IntRange(-1, shards-1).Draw(t, "owner")
		if covering && owner < 0 {
			owner = 0
		}
		if owner >= 0 {
			r.Shards[owner].Ranges = append(r.Shards[owner].Ranges, SlotRange{uint16(bounds[i]), uint16(bounds[i+1] - 1)})
		}
	}
	if query == QueryClusterNodes {
		sh := r.Shards[rapid.IntRange(0, shards-1).Draw(t, "self-shard")]
		r.Self = sh.Nodes[rapid.IntRange(0, len(sh.Nodes)-1).Draw(t, "self")].ID
	}
	return r
}

// drawTopology applies up to three drawn replies to the empty Topology.
func drawTopology(t *rapid.T) Topology {
	var top Topology
	for range rapid.IntRange(0, 3).Draw(t, "history") {
		top, _ = top.Apply(drawReply(t, rapid.Bool().Draw(t, "covering")))
	}
	return top
}

// breakReply makes a valid reply inconclusive in one of the ways a garbled or hostile reply can.
func breakReply(t *rapid.T, r TopologyReply) TopologyReply {
	sh := &r.Shards[rapid.IntRange(0, len(r.Shards)-1).Draw(t, "victim")]
	switch rapid.IntRange(0, 6).Draw(t, "fault") {
	case 0: // no slots at all
		for i := range r.Shards {
			r.Shards[i].Ranges = nil
		}
	case 1: // a range overlapping another
		var all []SlotRange
		for i := range r.Shards {
			all = append(all, r.Shards[i].Ranges...)
		}
		if len(all) == 0 {
			all = []SlotRange{{0, 0}}
			sh.Ranges = append(sh.Ranges, all[0])
		}
		sh.Ranges = append(sh.Ranges, rapid.SampledFrom(all).Draw(t, "twice"))
	case 2: // a range past the last slot
		sh.Ranges = append(sh.Ranges, SlotRange{SlotCount - 1, SlotCount})
	case 3: // a node without ID
		sh.Nodes[rapid.IntRange(0, len(sh.Nodes)-1).Draw(t, "node")].ID = ""
	case 4: // a node twice
		other := r.Shards[rapid.IntRange(0, len(r.Shards)-1).Draw(t, "other")]
		sh.Nodes = append(sh.Nodes, other.Nodes[0])
	case 5: // slots without a primary
		sh.Ranges = append(sh.Ranges, SlotRange{0, 0})
		sh.Nodes = sh.Nodes[1:]
		for i := range sh.Nodes {
			sh.Nodes[i].Primary = ""
		}
	case 6: // CLUSTER NODES without myself
		r.Query, r.Self = QueryClusterNodes, ""
	}
	return r
}

// ownerIDs lists the ID serving each slot ("" for none).
func ownerIDs(top Topology) []NodeID {
	out := make([]NodeID, SlotCount)
	for s := range out {
		out[s] = top.ownerID(s)
	}
	return out
}

// replyOwners lists the ID each slot is dealt to by r ("" for none).
func replyOwners(r TopologyReply) []NodeID {
	out := make([]NodeID, SlotCount)
	for _, sh := range r.Shards {
		for _, rg := range sh.Ranges {
			for s := int(rg.First); s <= int(rg.Last); s++ {
				out[s] = sh.Nodes[sh.primary()].ID
			}
		}
	}
	return out
}

func TestPropInconclusiveNeverChangesOwnership(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		top := drawTopology(t)
		bad := breakReply(t, drawReply(t, rapid.Bool().Draw(t, "covering")))
		next, ch := top.Apply(bad)
		if ch.Verdict != VerdictInconclusive || ch.Err == nil {
			t.Fatalf("a broken reply was taken: %v\n%s", ch.String(), bad.String())
		}
		if ch.Changed() || !next.Equal(top) || next.String() != top.String() {
			t.Fatalf("an inconclusive reply changed the topology: %v", ch.String())
		}
	})
}

func TestPropConclusiveIsIdempotent(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		top := drawTopology(t)
		r := drawReply(t, true)
		once, ch1 := top.Apply(r)
		twice, ch2 := once.Apply(r)
		if ch1.Verdict != VerdictConclusive || ch2.Verdict != VerdictConclusive {
			t.Fatalf("verdicts %v, %v", ch1.Verdict, ch2.Verdict)
		}
		if ch2.Changed() || !twice.Equal(once) || twice.String() != once.String() {
			t.Fatalf("applying the same conclusive reply again changed: %v", ch2.String())
		}
	})
}

func TestPropConclusiveReplacesOwnershipAndMembership(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		top := drawTopology(t)
		r := drawReply(t, true)
		next, ch := top.Apply(r)
		if !slices.Equal(ownerIDs(next), replyOwners(r)) {
			t.Fatal("ownership differs from the reply's")
		}
		var named []NodeID
		for _, sh := range r.Shards {
			for _, n := range sh.Nodes {
				named = append(named, n.ID)
			}
		}
		slices.Sort(named)
		if !slices.Equal(nodeIDs(next.Nodes()), named) {
			t.Fatalf("members %v, reply names %v", nodeIDs(next.Nodes()), named)
		}
		var left []NodeID
		for _, n := range top.Nodes() {
			if _, found := slices.BinarySearch(named, n.ID); !found {
				left = append(left, n.ID)
			}
		}
		if !slices.Equal(nodeIDs(ch.Left), left) {
			t.Fatalf("left %v, want %v", nodeIDs(ch.Left), left)
		}
		checkRetired(t, top, next, ch)
	})
}

func TestPropPartialUpdatesOnlyCoveredSlots(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		top := drawTopology(t)
		r := drawReply(t, false)
		next, ch := top.Apply(r)
		if ch.Verdict == VerdictInconclusive {
			if ch.Covered != 0 || !next.Equal(top) {
				t.Fatalf("inconclusive: %v", ch.String())
			}
			return
		}
		before, after, dealt := ownerIDs(top), ownerIDs(next), replyOwners(r)
		for s := range after {
			want := dealt[s]
			if want == "" && ch.Verdict == VerdictPartial {
				want = before[s]
			}
			if after[s] != want {
				t.Fatalf("slot %d served by %q, want %q (%v)", s, after[s], want, ch.Verdict)
			}
		}
		if ch.Verdict == VerdictPartial {
			if len(ch.Left) != 0 {
				t.Fatalf("a partial reply removed %v", nodeIDs(ch.Left))
			}
			for _, n := range top.Nodes() {
				if _, ok := next.Node(n.ID); !ok {
					t.Fatalf("a partial reply dropped %s", n.ID)
				}
			}
		}
		checkRetired(t, top, next, ch)
	})
}

// checkRetired: the retired endpoints are exactly those that named a node before and name none
// now, and every alias of every member leads Lookup to a member having that alias.
func checkRetired(t *rapid.T, before, after Topology, ch TopologyChange) {
	now := after.Endpoints()
	var want []Endpoint
	for _, ep := range before.Endpoints() {
		if !slices.Contains(now, ep) {
			want = append(want, ep)
		}
	}
	if !slices.Equal(ch.Retired, want) {
		t.Fatalf("retired %v, want %v", ch.Retired, want)
	}
	for _, n := range after.Nodes() {
		for _, ep := range n.Aliases() {
			got, ok := after.Lookup(ep)
			if !ok || !got.Matches(ep) {
				t.Fatalf("Lookup(%v) = %v, %v", ep, got, ok)
			}
		}
	}
}

// TestPropOrderDoesNotMatter: the order of shards, nodes and ranges in a reply changes nothing,
// so nothing printed depends on it.
func TestPropOrderDoesNotMatter(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		top := drawTopology(t)
		r := drawReply(t, rapid.Bool().Draw(t, "covering"))
		shuffled := TopologyReply{Query: r.Query, Self: r.Self}
		for _, i := range rapid.Permutation(seq(len(r.Shards))).Draw(t, "shard-order") {
			sh := r.Shards[i]
			var out ReplyShard
			for _, j := range rapid.Permutation(seq(len(sh.Nodes))).Draw(t, "node-order") {
				out.Nodes = append(out.Nodes, sh.Nodes[j])
			}
			for _, j := range rapid.Permutation(seq(len(sh.Ranges))).Draw(t, "range-order") {
				out.Ranges = append(out.Ranges, sh.Ranges[j])
			}
			shuffled.Shards = append(shuffled.Shards, out)
		}
		a, cha := top.Apply(r)
		b, chb := top.Apply(shuffled)
		if !a.Equal(b) || a.String() != b.String() || cha.String() != chb.String() {
			t.Fatalf("order mattered:\n%s\n%s\n--\n%s\n%s", a.String(), cha.String(), b.String(), chb.String())
		}
	})
}

func seq(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}
