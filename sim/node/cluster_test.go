package node

import (
	"strconv"
	"strings"
	"testing"

	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/netio/resp"
	"github.com/respire-go/respire/netio/topo"
)

// testCluster is a Cluster of shard A (a1 primary, a2 replica, slots 0..8191) and shard B (b1,
// slots 8192..16383), with a spare s9, and one connection to each node.
type testCluster struct {
	c     *Cluster
	nodes map[string]*Node
	conns map[string]*Conn
	links map[string]*testLink
}

func newTestCluster(t *testing.T) *testCluster {
	t.Helper()
	tc := &testCluster{c: NewCluster(6379), nodes: map[string]*Node{}, conns: map[string]*Conn{}, links: map[string]*testLink{}}
	env := &testEnv{}
	for i, id := range []string{"a1", "a2", "b1", "s9"} {
		n := New(id, "", env, &Plants{})
		c := &Conn{}
		l := &testLink{n: n, c: c}
		n.Accept(c, fsm.ConnID(i+1), l)
		tc.nodes[id], tc.conns[id], tc.links[id] = n, c, l
		tc.c.Join(n)
	}
	tc.c.AddShard(tc.nodes["a1"], []*Node{tc.nodes["a2"]}, "", []fsm.SlotRange{{First: 0, Last: 8191}})
	tc.c.AddShard(tc.nodes["b1"], nil, "", []fsm.SlotRange{{First: 8192, Last: 16383}})
	return tc
}

// do sends one command to node id and returns its reply.
func (tc *testCluster) do(t *testing.T, id string, args ...string) string {
	t.Helper()
	l := tc.links[id]
	l.send(args...)
	tc.nodes[id].Serve(tc.conns[id])
	r := l.replies(t)
	if len(r) != 1 {
		t.Fatalf("%s %v: replies %v", id, args, r)
	}
	return r[0]
}

// keyIn returns a key whose slot lies in [first, last].
func keyIn(first, last int) (string, int) {
	for i := 0; ; i++ {
		k := "k" + strconv.Itoa(i)
		if s := int(topo.KeySlotString(k)); s >= first && s <= last {
			return k, s
		}
	}
}

func TestClusterSlotsReplyParses(t *testing.T) {
	tc := newTestCluster(t)
	l := tc.links["b1"]
	l.send("CLUSTER", "SLOTS")
	tc.nodes["b1"].Serve(tc.conns["b1"])
	var v resp.Value
	if _, err := resp.Parse(l.out, &v, nil); err != nil {
		t.Fatal(err)
	}
	r, err := topo.ParseClusterSlots(v, fsm.Endpoint{Host: "b1", Port: 6379})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Shards) != 2 || len(r.Shards[0].Nodes) != 2 || len(r.Shards[1].Nodes) != 1 {
		t.Fatalf("shards %+v", r.Shards)
	}
	a := r.Shards[0]
	if a.Nodes[0].Addr != (fsm.Endpoint{Host: "a1", Port: 6379}) || string(a.Nodes[0].ID) != NodeID("a1") ||
		a.Nodes[1].Addr.Host != "a2" || a.Ranges[0] != (fsm.SlotRange{First: 0, Last: 8191}) {
		t.Fatalf("shard A %+v", a)
	}
	// A killed replica is left out, as Redis leaves out failed replicas.
	tc.nodes["a2"].Kill()
	l.out = l.out[:0]
	l.send("CLUSTER", "SLOTS")
	tc.nodes["b1"].Serve(tc.conns["b1"])
	if _, err := resp.Parse(l.out, &v, nil); err != nil {
		t.Fatal(err)
	}
	if r, _ = topo.ParseClusterSlots(v, fsm.Endpoint{}); len(r.Shards[0].Nodes) != 1 {
		t.Fatalf("killed replica listed: %+v", r.Shards[0])
	}
}

func TestClusterRouting(t *testing.T) {
	tc := newTestCluster(t)
	k, slot := keyIn(0, 8191)
	s := strconv.Itoa(slot)
	for _, tt := range []struct{ node, want string }{
		{"a1", `simple:"OK"`},
		{"b1", `error:"MOVED ` + s + ` a1:6379"`},
		{"a2", `error:"MOVED ` + s + ` a1:6379"`}, // a replica redirects to its primary
		{"s9", `error:"MOVED ` + s + ` a1:6379"`}, // a spare, outside every shard
	} {
		if got := tc.do(t, tt.node, "SET", k, "v"); got != tt.want {
			t.Errorf("SET on %s: %s, want %s", tt.node, got, tt.want)
		}
	}
	k2, _ := keyIn(8192, 16383)
	if got := tc.do(t, "a1", "MGET", k, k2); !strings.HasPrefix(got, `error:"CROSSSLOT`) {
		t.Errorf("cross-slot MGET: %s", got)
	}
	if got := tc.do(t, "b1", "PING"); got != `simple:"PONG"` {
		t.Errorf("keyless PING: %s", got)
	}
	tc.c.SetDown(true)
	if got := tc.do(t, "a1", "GET", k); got != `error:"CLUSTERDOWN The cluster is down"` {
		t.Errorf("down: %s", got)
	}
	tc.c.SetDown(false)
	tc.c.SetEmpty(true)
	if got := tc.do(t, "a1", "GET", k); got != `error:"CLUSTERDOWN Hash slot not served"` {
		t.Errorf("restarting: %s", got)
	}
	if got := tc.do(t, "a1", "CLUSTER", "SLOTS"); got != "array[]" && got != "[]" {
		t.Errorf("restarting CLUSTER SLOTS: %s", got)
	}
}

// TestClusterMigration: while a slot migrates, its keys are on the target, the source answers
// ASK, the target serves only after ASKING (MOVED back otherwise, and ASKING covers one command);
// after the migration the source answers MOVED.
func TestClusterMigration(t *testing.T) {
	tc := newTestCluster(t)
	k, slot := keyIn(0, 8191)
	s := strconv.Itoa(slot)
	tc.do(t, "a1", "SET", k, "v1")
	slots := []fsm.SlotRange{{First: uint16(slot), Last: uint16(slot)}}
	tc.c.Migrate(slots, tc.nodes["b1"], true)
	if got := tc.do(t, "a1", "GET", k); got != `error:"ASK `+s+` b1:6379"` {
		t.Fatalf("source during migration: %s", got)
	}
	if got := tc.do(t, "b1", "GET", k); got != `error:"MOVED `+s+` a1:6379"` {
		t.Fatalf("target without ASKING: %s", got)
	}
	tc.do(t, "b1", "ASKING")
	if got := tc.do(t, "b1", "GET", k); got != `"v1"` {
		t.Fatalf("target after ASKING: %s", got)
	}
	if got := tc.do(t, "b1", "GET", k); !strings.HasPrefix(got, `error:"MOVED`) {
		t.Fatalf("ASKING admitted a second command: %s", got)
	}
	tc.c.FinishMigration(slots)
	if got := tc.do(t, "a1", "GET", k); got != `error:"MOVED `+s+` b1:6379"` {
		t.Fatalf("source after migration: %s", got)
	}
	if got := tc.do(t, "b1", "GET", k); got != `"v1"` {
		t.Fatalf("target after migration: %s", got)
	}
	// Without an ASK window the slot moves at once; to a spare, which leads a new shard.
	tc.c.Migrate(slots, tc.nodes["s9"], false)
	if got := tc.do(t, "b1", "GET", k); got != `error:"MOVED `+s+` s9:6379"` {
		t.Fatalf("after a move to the spare: %s", got)
	}
	if got := tc.do(t, "s9", "GET", k); got != `"v1"` {
		t.Fatalf("the spare's new shard: %s", got)
	}
}

// TestClusterPromoteAndReplace: a promoted replica serves the shard's data; the old primary
// answers writes READONLY and reads MOVED when asked for; a replacement takes the role, the
// data and the DNS names of the node it replaces, and a shard endpoint follows the primary.
func TestClusterPromoteAndReplace(t *testing.T) {
	tc := newTestCluster(t)
	k, slot := keyIn(0, 8191)
	s := strconv.Itoa(slot)
	tc.do(t, "a1", "SET", k, "v1")
	tc.c.AddDNS("cfg", []*Node{tc.nodes["a1"], tc.nodes["b1"]})
	if !tc.c.Promote(tc.nodes["a2"], true) || tc.c.Promote(tc.nodes["a2"], true) {
		t.Fatal("promote a2 once")
	}
	if got := tc.do(t, "a1", "SET", k, "v2"); got != `error:"READONLY You can't write against a read only replica."` {
		t.Fatalf("write on the demoted primary: %s", got)
	}
	if got := tc.do(t, "a1", "GET", k); got != `error:"MOVED `+s+` a2:6379"` {
		t.Fatalf("read on the demoted primary: %s", got)
	}
	if got := tc.do(t, "a2", "GET", k); got != `"v1"` {
		t.Fatalf("the promoted replica: %s", got)
	}
	if n, ok := tc.c.Resolve("cfg"); !ok || n != tc.nodes["a1"] {
		t.Fatal("cfg resolves to a1 first")
	}
	tc.nodes["a1"].Kill()
	if n, _ := tc.c.Resolve("cfg"); n != tc.nodes["b1"] {
		t.Fatal("cfg skips a killed node")
	}
	if !tc.c.Replace(tc.nodes["a2"], tc.nodes["s9"]) {
		t.Fatal("replace a2")
	}
	if got := tc.do(t, "s9", "GET", k); got != `"v1"` {
		t.Fatalf("the replacement: %s", got)
	}
	if got := tc.do(t, "a2", "GET", k); got != `error:"MOVED `+s+` s9:6379"` {
		t.Fatalf("the replaced node: %s", got)
	}
	tc.c.shards[0].endpoint = "shard-a"
	if n, ok := tc.c.Resolve("shard-a"); !ok || n != tc.nodes["s9"] || tc.c.addr(tc.nodes["s9"]) != "shard-a:6379" {
		t.Fatal("a shard endpoint names the shard's primary")
	}
}

// TestClusterShardChannels: SSUBSCRIBE and SPUBLISH route by their channel's slot like keys.
func TestClusterShardChannels(t *testing.T) {
	tc := newTestCluster(t)
	ch, slot := keyIn(8192, 16383)
	s := strconv.Itoa(slot)
	if got := tc.do(t, "a1", "SSUBSCRIBE", ch); got != `error:"MOVED `+s+` b1:6379"` {
		t.Fatalf("SSUBSCRIBE on a1: %s", got)
	}
	if got := tc.do(t, "a1", "SPUBLISH", ch, "m"); got != `error:"MOVED `+s+` b1:6379"` {
		t.Fatalf("SPUBLISH on a1: %s", got)
	}
	if got := tc.do(t, "b1", "SSUBSCRIBE", ch); !strings.Contains(got, "ssubscribe") {
		t.Fatalf("SSUBSCRIBE on b1: %s", got)
	}
	other, _ := keyIn(0, 8191)
	if got := tc.do(t, "b1", "SSUBSCRIBE", ch, other); !strings.HasPrefix(got, `error:"CROSSSLOT`) {
		t.Fatalf("SSUBSCRIBE across slots: %s", got)
	}
}

// TestClusterMigrateToReplica: a replica that leads a new shard starts with an empty dataset, and
// the migrated keys move into it; the keys its old shard keeps stay there. Found by
// TestRandomClusterRunsKeepEveryInvariant: the new shard shared its old shard's dataset, so moving
// a key deleted it.
func TestClusterMigrateToReplica(t *testing.T) {
	tc := newTestCluster(t)
	k, slot := keyIn(0, 8191)
	stay, _ := keyIn(slot+1, 8191)
	tc.do(t, "a1", "SET", k, "v1")
	tc.do(t, "a1", "SET", stay, "v2")
	tc.c.Migrate([]fsm.SlotRange{{First: uint16(slot), Last: uint16(slot)}}, tc.nodes["a2"], false)
	if got := tc.do(t, "a2", "GET", k); got != `"v1"` {
		t.Fatalf("the migrated key on the new shard: %s", got)
	}
	if got := tc.do(t, "a1", "GET", stay); got != `"v2"` {
		t.Fatalf("the key the old shard keeps: %s", got)
	}
	if got := tc.do(t, "a2", "GET", stay); !strings.HasPrefix(got, `error:"MOVED`) {
		t.Fatalf("the new shard serves another slot: %s", got)
	}
}

// TestClusterOverlappingMigrations: a migration that starts while another of the same slot is
// under way takes the keys from where the first put them; one back to the owner undoes it. Found
// by TestRandomClusterRunsKeepEveryInvariant: the second migration looked for the keys on the
// owner, and the first target kept them for ever.
func TestClusterOverlappingMigrations(t *testing.T) {
	tc := newTestCluster(t)
	k, slot := keyIn(0, 8191)
	slots := []fsm.SlotRange{{First: uint16(slot), Last: uint16(slot)}}
	tc.do(t, "a1", "SET", k, "v1")
	tc.c.Migrate(slots, tc.nodes["b1"], true)
	tc.c.Migrate(slots, tc.nodes["s9"], true)
	tc.do(t, "s9", "ASKING")
	if got := tc.do(t, "s9", "GET", k); got != `"v1"` {
		t.Fatalf("the second target: %s", got)
	}
	tc.c.Migrate(slots, tc.nodes["a1"], true) // back to the owner
	if got := tc.do(t, "a1", "GET", k); got != `"v1"` {
		t.Fatalf("the owner after the migration was undone: %s", got)
	}
	tc.c.FinishMigration(slots)
	if got := tc.do(t, "a1", "GET", k); got != `"v1"` {
		t.Fatalf("the owner keeps the slot: %s", got)
	}
}
