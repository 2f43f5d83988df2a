package fsm

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// id returns a 40-hex node ID for a small number.
func id(n int) NodeID { return NodeID(fmt.Sprintf("%040x", n)) }

func primary(n int, host string, port int) Node {
	return Node{ID: id(n), Addr: MakeEndpoint(host, port), IP: CanonicalHost(host), Role: RolePrimary}
}

func replica(n int, host string, port int, of int) Node {
	r := primary(n, host, port)
	r.Role, r.Primary = RoleReplica, id(of)
	return r
}

func shard(ranges []SlotRange, nodes ...Node) ReplyShard {
	return ReplyShard{Ranges: ranges, Nodes: nodes}
}

func rng(first, last int) []SlotRange { return []SlotRange{{uint16(first), uint16(last)}} }

// threeShards is a conclusive CLUSTER SLOTS reply of three primaries with a replica each.
func threeShards() TopologyReply {
	return TopologyReply{Query: QueryClusterSlots, Shards: []ReplyShard{
		shard(rng(0, 5460), primary(1, "10.0.0.1", 7000), replica(4, "10.0.0.4", 7000, 1)),
		shard(rng(5461, 10922), primary(2, "10.0.0.2", 7000), replica(5, "10.0.0.5", 7000, 2)),
		shard(rng(10923, 16383), primary(3, "10.0.0.3", 7000), replica(6, "10.0.0.6", 7000, 3)),
	}}
}

func mustApply(t *testing.T, top Topology, r TopologyReply, want Verdict) (Topology, TopologyChange) {
	t.Helper()
	next, ch := top.Apply(r)
	if ch.Verdict != want {
		t.Fatalf("verdict %v, want %v: %v", ch.Verdict, want, ch.String())
	}
	return next, ch
}

func ownerOf(t *testing.T, top Topology, slot int) NodeID {
	t.Helper()
	n, ok := top.Owner(uint16(slot))
	if !ok {
		return ""
	}
	return n.ID
}

func TestApplyConclusiveToEmpty(t *testing.T) {
	top, ch := mustApply(t, Topology{}, threeShards(), VerdictConclusive)
	if ch.Covered != SlotCount || ch.SlotsMoved != SlotCount || len(ch.Joined) != 6 || len(ch.Left) != 0 || len(ch.Retired) != 0 {
		t.Fatalf("change: %v", ch.String())
	}
	if !top.Complete() || top.Len() != 6 {
		t.Fatalf("covered %d, %d nodes", top.Covered(), top.Len())
	}
	for slot, want := range map[int]NodeID{0: id(1), 5460: id(1), 5461: id(2), 16383: id(3)} {
		if got := ownerOf(t, top, slot); got != want {
			t.Errorf("slot %d served by %q, want %q", slot, got, want)
		}
	}
	if _, ok := top.Owner(SlotCount); ok {
		t.Error("slot 16384 has an owner")
	}
	if got := top.Ranges(id(2)); !slices.Equal(got, rng(5461, 10922)) {
		t.Errorf("ranges of node 2: %v", got)
	}
	if got := top.Replicas(id(3)); len(got) != 1 || got[0].ID != id(6) {
		t.Errorf("replicas of node 3: %v", got)
	}
	shards := top.Shards()
	if len(shards) != 3 || shards[1].Primary.ID != id(2) || len(shards[1].Replicas) != 1 || shards[1].Replicas[0].ID != id(5) ||
		!slices.Equal(shards[1].Ranges, rng(5461, 10922)) {
		t.Errorf("shards: %v", shards)
	}
	if len(top.Orphans()) != 0 {
		t.Errorf("orphans: %v", top.Orphans())
	}
	want := strings.Join([]string{
		"shard 0-5460",
		"  primary " + string(id(1)) + " addr=10.0.0.1:7000",
		"  replica " + string(id(4)) + " addr=10.0.0.4:7000 of=" + string(id(1)),
		"shard 5461-10922",
		"  primary " + string(id(2)) + " addr=10.0.0.2:7000",
		"  replica " + string(id(5)) + " addr=10.0.0.5:7000 of=" + string(id(2)),
		"shard 10923-16383",
		"  primary " + string(id(3)) + " addr=10.0.0.3:7000",
		"  replica " + string(id(6)) + " addr=10.0.0.6:7000 of=" + string(id(3)),
	}, "\n")
	if got := top.String(); got != want {
		t.Errorf("String:\n%s\nwant:\n%s", got, want)
	}
}

// TestApplyInconclusive: an empty or invalid reply never wipes the map. The incident's review
// found exactly this: an unusable reply parsed as an empty member set made every node look
// retired.
func TestApplyInconclusive(t *testing.T) {
	full, _ := mustApply(t, Topology{}, threeShards(), VerdictConclusive)
	noSelf := threeShards()
	noSelf.Query = QueryClusterNodes
	selfAbsent := threeShards()
	selfAbsent.Self = id(99)
	overlap := threeShards()
	overlap.Shards[1].Ranges = rng(5000, 10922)
	reversed := threeShards()
	reversed.Shards[0].Ranges = []SlotRange{{5460, 0}}
	outOfRange := threeShards()
	outOfRange.Shards[2].Ranges = []SlotRange{{10923, 16384}}
	twoPrimaries := threeShards()
	twoPrimaries.Shards[0].Nodes[1].Role, twoPrimaries.Shards[0].Nodes[1].Primary = RolePrimary, ""
	noPrimary := threeShards()
	noPrimary.Shards[0].Nodes = noPrimary.Shards[0].Nodes[1:]
	duplicate := threeShards()
	duplicate.Shards[1].Nodes[1].ID = id(4)
	noID := threeShards()
	noID.Shards[0].Nodes[0].ID = ""
	noRole := threeShards()
	noRole.Shards[0].Nodes[1].Role = RoleUnknown
	wrongPrimary := threeShards()
	wrongPrimary.Shards[0].Nodes[1].Primary = id(2)
	primaryOfPrimary := threeShards()
	primaryOfPrimary.Shards[0].Nodes[0].Primary = id(2)
	badPort := threeShards()
	badPort.Shards[0].Nodes[0].Addr.Port = 70000
	for name, c := range map[string]struct {
		reply TopologyReply
		want  error
	}{
		"nil shards":                 {TopologyReply{Query: QueryClusterSlots}, ErrEmptyTopologyReply},
		"shards without slots":       {TopologyReply{Query: QueryClusterShards, Shards: []ReplyShard{shard(nil, primary(1, "10.0.0.1", 7000))}}, ErrEmptyTopologyReply},
		"nodes without myself":       {noSelf, ErrInvalidTopologyReply},
		"myself not among the nodes": {selfAbsent, ErrInvalidTopologyReply},
		"overlapping ranges":         {overlap, ErrInvalidTopologyReply},
		"reversed range":             {reversed, ErrInvalidTopologyReply},
		"slot 16384":                 {outOfRange, ErrInvalidTopologyReply},
		"two primaries":              {twoPrimaries, ErrInvalidTopologyReply},
		"slots without primary":      {noPrimary, ErrInvalidTopologyReply},
		"duplicate node":             {duplicate, ErrInvalidTopologyReply},
		"node without id":            {noID, ErrInvalidTopologyReply},
		"node without role":          {noRole, ErrInvalidTopologyReply},
		"replica of another shard":   {wrongPrimary, ErrInvalidTopologyReply},
		"primary with a primary":     {primaryOfPrimary, ErrInvalidTopologyReply},
		"port out of range":          {badPort, ErrInvalidTopologyReply},
	} {
		t.Run(name, func(t *testing.T) {
			next, ch := mustApply(t, full, c.reply, VerdictInconclusive)
			if !errors.Is(ch.Err, c.want) {
				t.Fatalf("err %v, want %v", ch.Err, c.want)
			}
			if ch.Changed() || !next.Equal(full) || next.String() != full.String() {
				t.Fatalf("an inconclusive reply changed the topology: %v", ch.String())
			}
			var re *TopologyReplyError
			if errors.As(ch.Err, &re) && strings.Contains(ch.Err.Error(), "10.0.0") {
				t.Fatalf("the error names an address: %v", ch.Err)
			}
		})
	}
}

// TestApplyPartial: a partial reply (cluster-require-full-coverage no, one shard down) updates
// the slots it covers and removes nothing.
func TestApplyPartial(t *testing.T) {
	full, _ := mustApply(t, Topology{}, threeShards(), VerdictConclusive)
	// The second shard failed over (5 is now its primary) and the third is not covered.
	partial := TopologyReply{Query: QueryClusterSlots, Shards: []ReplyShard{
		shard(rng(0, 5460), primary(1, "10.0.0.1", 7000), replica(4, "10.0.0.4", 7000, 1)),
		shard(rng(5461, 10922), primary(5, "10.0.0.5", 7000)),
	}}
	next, ch := mustApply(t, full, partial, VerdictPartial)
	if ch.Covered != 10923 || ch.SlotsMoved != 5462 || len(ch.Left) != 0 || len(ch.Retired) != 0 || len(ch.Joined) != 0 {
		t.Fatalf("change: %v", ch.String())
	}
	for slot, want := range map[int]NodeID{0: id(1), 5461: id(5), 10922: id(5), 10923: id(3), 16383: id(3)} {
		if got := ownerOf(t, next, slot); got != want {
			t.Errorf("slot %d served by %q, want %q", slot, got, want)
		}
	}
	if n, _ := next.Node(id(5)); n.Role != RolePrimary {
		t.Errorf("node 5 after the failover: %v", n)
	}
	if next.Len() != 6 {
		t.Errorf("%d nodes after a partial reply", next.Len())
	}
	// Slots nobody serves stay unserved after a partial reply that does not cover them.
	gap := TopologyReply{Query: QueryClusterSlots, Shards: []ReplyShard{shard(rng(0, 99), primary(1, "10.0.0.1", 7000))}}
	fromGap, _ := mustApply(t, Topology{}, gap, VerdictPartial)
	if fromGap.Covered() != 100 || fromGap.Complete() {
		t.Errorf("covered %d", fromGap.Covered())
	}
	if !strings.HasSuffix(fromGap.String(), "uncovered 100-16383") {
		t.Errorf("String:\n%s", fromGap.String())
	}
}

// TestApplyConclusiveRetires: a node absent from a conclusive reply has left, and its endpoints
// are retired (the incident: two nodes replaced at new addresses).
func TestApplyConclusiveRetires(t *testing.T) {
	full, _ := mustApply(t, Topology{}, threeShards(), VerdictConclusive)
	replaced := threeShards()
	replaced.Shards[1].Nodes = []Node{primary(7, "10.0.1.7", 8502), replica(8, "10.0.1.8", 8503, 7)}
	next, ch := mustApply(t, full, replaced, VerdictConclusive)
	if got := nodeIDs(ch.Left); !slices.Equal(got, []NodeID{id(2), id(5)}) {
		t.Errorf("left %v", got)
	}
	if got := nodeIDs(ch.Joined); !slices.Equal(got, []NodeID{id(7), id(8)}) {
		t.Errorf("joined %v", got)
	}
	want := []Endpoint{MakeEndpoint("10.0.0.2", 7000), MakeEndpoint("10.0.0.5", 7000)}
	if !slices.Equal(ch.Retired, want) {
		t.Errorf("retired %v, want %v", ch.Retired, want)
	}
	if ch.SlotsMoved != 5462 {
		t.Errorf("moved %d", ch.SlotsMoved)
	}
	if _, ok := next.Lookup(MakeEndpoint("10.0.0.2", 7000)); ok {
		t.Error("a retired endpoint still names a node")
	}
	if !strings.Contains(ch.String(), "left=["+string(id(2))+" "+string(id(5))+"] retired=[10.0.0.2:7000 10.0.0.5:7000]") {
		t.Errorf("String: %s", ch.String())
	}
}

// TestApplyNodeIDsTellReusedAddressesApart: a new node at a retired node's address is another
// node; the address itself stays in use, so it is not retired.
func TestApplyNodeIDsTellReusedAddressesApart(t *testing.T) {
	full, _ := mustApply(t, Topology{}, threeShards(), VerdictConclusive)
	reused := threeShards()
	reused.Shards[0].Nodes[0] = primary(9, "10.0.0.1", 7000)
	reused.Shards[0].Nodes[1].Primary = id(9)
	next, ch := mustApply(t, full, reused, VerdictConclusive)
	if !slices.Equal(nodeIDs(ch.Left), []NodeID{id(1)}) || !slices.Equal(nodeIDs(ch.Joined), []NodeID{id(9)}) {
		t.Fatalf("change: %v", ch.String())
	}
	if len(ch.Retired) != 0 {
		t.Errorf("retired %v: the address is still in use", ch.Retired)
	}
	if n, ok := next.Lookup(MakeEndpoint("10.0.0.1", 7000)); !ok || n.ID != id(9) {
		t.Errorf("lookup: %v %v", n, ok)
	}
}

func TestApplyReaddressed(t *testing.T) {
	full, _ := mustApply(t, Topology{}, threeShards(), VerdictConclusive)
	moved := threeShards()
	moved.Shards[2].Nodes[1] = replica(6, "10.9.9.6", 7001, 3)
	_, ch := mustApply(t, full, moved, VerdictConclusive)
	if len(ch.Readdressed) != 1 || ch.Readdressed[0] != (Readdress{id(6), MakeEndpoint("10.0.0.6", 7000), MakeEndpoint("10.9.9.6", 7001)}) {
		t.Fatalf("readdressed %v", ch.Readdressed)
	}
	if !slices.Equal(ch.Retired, []Endpoint{MakeEndpoint("10.0.0.6", 7000)}) || len(ch.Left) != 0 || ch.SlotsMoved != 0 {
		t.Fatalf("change: %v", ch.String())
	}
}

func TestApplyTwiceIsIdempotent(t *testing.T) {
	once, _ := mustApply(t, Topology{}, threeShards(), VerdictConclusive)
	twice, ch := mustApply(t, once, threeShards(), VerdictConclusive)
	if ch.Changed() || !twice.Equal(once) {
		t.Fatalf("second apply changed something: %v", ch.String())
	}
	if twice.owner != once.owner {
		t.Error("an unchanged topology was rebuilt instead of kept")
	}
}

// TestAliases: a node is found by its preferred endpoint, its IP and its host name, in any case
// and any IPv6 spelling.
func TestAliases(t *testing.T) {
	n := Node{ID: id(1), Addr: MakeEndpoint("Node-A.Example.Internal", 7000), IP: CanonicalHost("2001:0db8:0:0:0:0:0:1"),
		Hostname: CanonicalHost("node-a.example.internal"), Role: RolePrimary}
	top, _ := mustApply(t, Topology{}, TopologyReply{Query: QueryClusterSlots, Shards: []ReplyShard{shard(rng(0, 16383), n)}}, VerdictConclusive)
	if got := n.Aliases(); !slices.Equal(got, []Endpoint{{"2001:db8::1", 7000}, {"node-a.example.internal", 7000}}) {
		t.Errorf("aliases %v", got)
	}
	for _, s := range []string{"NODE-A.example.internal:7000", "[2001:db8::1]:7000", "2001:0DB8::0:1:7000", "node-a.example.internal.:7000"} {
		ep, err := ParseEndpoint(s)
		if err != nil {
			t.Fatal(err)
		}
		if got, ok := top.Lookup(ep); !ok || got.ID != id(1) {
			t.Errorf("Lookup(%s) = %v, %v", s, got, ok)
		}
		if !n.Matches(ep) {
			t.Errorf("%s does not match", s)
		}
	}
	for _, s := range []string{"node-a.example.internal:7001", "node-b:7000", "10.0.0.1:7000"} {
		ep, _ := ParseEndpoint(s)
		if _, ok := top.Lookup(ep); ok || n.Matches(ep) {
			t.Errorf("%s names the node", s)
		}
	}
	if got := top.Endpoints(); len(got) != 2 {
		t.Errorf("endpoints %v", got)
	}
}

// TestLookupPrefersLiveNode: CLUSTER NODES can list a failed node and its replacement at one
// address; the address names the replacement.
func TestLookupPrefersLiveNode(t *testing.T) {
	dead := primary(1, "10.0.0.1", 7000)
	dead.Health = HealthFailed
	live := primary(2, "10.0.0.1", 7000)
	live.Health = HealthOnline
	reply := TopologyReply{Query: QueryClusterNodes, Self: id(2), Shards: []ReplyShard{shard(nil, dead), shard(rng(0, 16383), live)}}
	top, _ := mustApply(t, Topology{}, reply, VerdictConclusive)
	if n, _ := top.Lookup(MakeEndpoint("10.0.0.1", 7000)); n.ID != id(2) {
		t.Errorf("lookup found %v", n)
	}
	// Among live nodes a primary wins over a replica, which has the smaller ID here.
	r := replica(1, "10.0.0.1", 7000, 2)
	reply = TopologyReply{Query: QueryClusterSlots, Shards: []ReplyShard{shard(rng(0, 16383), live, r)}}
	top, _ = mustApply(t, Topology{}, reply, VerdictConclusive)
	if n, _ := top.Lookup(MakeEndpoint("10.0.0.1", 7000)); n.ID != id(2) {
		t.Errorf("lookup found %v", n)
	}
}

// TestNodesReplyKeepsPreferredEndpoint: CLUSTER NODES has no preferred endpoint; a node whose
// host name CLUSTER SLOTS preferred keeps it.
func TestNodesReplyKeepsPreferredEndpoint(t *testing.T) {
	n := Node{ID: id(1), Addr: MakeEndpoint("node-a", 7000), IP: "10.0.0.1", Hostname: "node-a", Role: RolePrimary}
	top, _ := mustApply(t, Topology{}, TopologyReply{Query: QueryClusterSlots, Shards: []ReplyShard{shard(rng(0, 16383), n)}}, VerdictConclusive)
	fromNodes := n
	fromNodes.Addr = MakeEndpoint("10.0.0.1", 7000)
	fromNodes.Health = HealthOnline
	next, ch := mustApply(t, top, TopologyReply{Query: QueryClusterNodes, Self: id(1), Shards: []ReplyShard{shard(rng(0, 16383), fromNodes)}}, VerdictConclusive)
	if got, _ := next.Node(id(1)); got.Addr != MakeEndpoint("node-a", 7000) || got.Health != HealthOnline {
		t.Fatalf("node after CLUSTER NODES: %v", got)
	}
	if len(ch.Readdressed) != 0 || len(ch.Retired) != 0 {
		t.Fatalf("change: %v", ch.String())
	}
	// A CLUSTER SLOTS reply does change the preferred endpoint.
	next, ch = mustApply(t, next, TopologyReply{Query: QueryClusterSlots, Shards: []ReplyShard{shard(rng(0, 16383), fromNodes)}}, VerdictConclusive)
	if got, _ := next.Node(id(1)); got.Addr != MakeEndpoint("10.0.0.1", 7000) || len(ch.Readdressed) != 1 {
		t.Fatalf("node after CLUSTER SLOTS: %v; %v", got, ch.String())
	}
}

func TestPartialReplyBoundedGrowth(t *testing.T) {
	// Partial replies never remove nodes, so they could pile up without a bound. Eight replies of
	// 512 one-slot shards each fill the Topology to the bound.
	var top Topology
	for i := 0; i < MaxTopologyNodes/512; i++ {
		r := TopologyReply{Query: QueryClusterSlots}
		for j := 0; j < 512; j++ {
			n := i*512 + j
			r.Shards = append(r.Shards, shard(rng(n, n), primary(n+1, "10.0.0.1", 1+n)))
		}
		top, _ = mustApply(t, top, r, VerdictPartial)
	}
	if top.Len() != MaxTopologyNodes {
		t.Fatalf("%d nodes", top.Len())
	}
	r := TopologyReply{Query: QueryClusterSlots, Shards: []ReplyShard{shard(rng(0, 0), primary(MaxTopologyNodes+1, "10.0.0.1", 1))}}
	next, ch := mustApply(t, top, r, VerdictInconclusive)
	if !errors.Is(ch.Err, ErrTopologyTooLarge) || !next.Equal(top) {
		t.Fatalf("change: %v", ch.String())
	}
	var many TopologyReply
	many.Query = QueryClusterShards
	for i := 0; i <= MaxTopologyNodes; i++ {
		many.Shards = append(many.Shards, shard(nil, primary(i+1, "10.0.0.1", 1)))
	}
	if err := many.Validate(); !errors.Is(err, ErrInvalidTopologyReply) {
		t.Fatalf("a reply of %d nodes: %v", MaxTopologyNodes+1, err)
	}
}

func TestTopologyStringOrphansAndSlotless(t *testing.T) {
	orphan := replica(7, "10.0.0.7", 7000, 99)
	spare := primary(8, "10.0.0.8", 7000)
	reply := threeShards()
	reply.Shards = append(reply.Shards, shard(nil, orphan), shard(nil, spare))
	top, _ := mustApply(t, Topology{}, reply, VerdictConclusive)
	if sh := top.Shards(); len(sh) != 4 || sh[3].Primary.ID != id(8) || len(sh[3].Ranges) != 0 {
		t.Errorf("shards: %v", sh)
	}
	if o := top.Orphans(); len(o) != 1 || o[0].ID != id(7) {
		t.Errorf("orphans: %v", o)
	}
	s := top.String()
	if !strings.Contains(s, "\nshard -\n  primary "+string(id(8))) || !strings.HasSuffix(s, "\norphan replica "+string(id(7))+" addr=10.0.0.7:7000 of="+string(id(99))) {
		t.Fatalf("String:\n%s", s)
	}
}

func TestReplyString(t *testing.T) {
	r := TopologyReply{Query: QueryClusterNodes, Self: id(1), Shards: []ReplyShard{shard([]SlotRange{{0, 0}, {2, 5}}, primary(1, "::1", 7000))},
		Migrations: []SlotMigration{{Slot: 3, Peer: id(2)}, {Slot: 9, Peer: id(3), Importing: true}}}
	want := "CLUSTER NODES reply self=" + string(id(1)) + "\nshard 0,2-5\n  primary " + string(id(1)) + " addr=[::1]:7000" +
		"\nmigration slot=3 migrating to " + string(id(2)) + "\nmigration slot=9 importing from " + string(id(3))
	if got := r.String(); got != want {
		t.Fatalf("String:\n%s\nwant:\n%s", got, want)
	}
}

func nodeIDs(nodes []Node) []NodeID {
	out := make([]NodeID, len(nodes))
	for i, n := range nodes {
		out[i] = n.ID
	}
	return out
}

func BenchmarkTopologyApply(b *testing.B) {
	full, _ := Topology{}.Apply(threeShards())
	moved := threeShards()
	moved.Shards[0].Ranges = rng(0, 5000)
	moved.Shards[1].Ranges = rng(5001, 10922)
	b.Run("unchanged", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			full.Apply(threeShards())
		}
	})
	b.Run("slots moved", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			full.Apply(moved)
		}
	})
}
