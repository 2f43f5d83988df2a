package node

import (
	"strings"
	"testing"
)

// testDeployment is a replication group r1 (primary), r2 and a Sentinel s1, one connection to
// each.
type testDeployment struct {
	g     *Group
	nodes map[string]*Node
	conns map[string]*Conn
	links map[string]*testLink
}

func newTestDeployment(t *testing.T) *testDeployment {
	t.Helper()
	d := &testDeployment{nodes: map[string]*Node{}, conns: map[string]*Conn{}, links: map[string]*testLink{}}
	for _, id := range []string{"r1", "r2", "s1"} {
		n := New(id, "", &testEnv{}, &Plants{})
		c := &Conn{}
		l := &testLink{n: n, c: c}
		n.Accept(c, 1, l)
		d.nodes[id], d.conns[id], d.links[id] = n, c, l
	}
	d.g = NewGroup(6379, d.nodes["r1"], []*Node{d.nodes["r2"]})
	d.nodes["s1"].MakeSentinel("mymaster", 26379, SentinelView{Primary: "r1", Epoch: 1}, []string{"s2"})
	return d
}

func (d *testDeployment) do(t *testing.T, id string, args ...string) string {
	t.Helper()
	d.links[id].send(args...)
	d.nodes[id].Serve(d.conns[id])
	return strings.Join(d.links[id].replies(t), " | ")
}

// TestSentinelNodes: data nodes answer ROLE and a replica refuses writes; a Sentinel answers its
// queries from its own view, refuses data commands, and announces a changed view on
// +switch-master.
func TestSentinelNodes(t *testing.T) {
	d := newTestDeployment(t)
	if got := d.do(t, "r1", "ROLE"); !strings.Contains(got, `"master"`) || !strings.Contains(got, `"r2"`) {
		t.Fatalf("primary ROLE: %s", got)
	}
	if got := d.do(t, "r2", "ROLE"); !strings.Contains(got, `"slave"`) || !strings.Contains(got, `"r1"`) {
		t.Fatalf("replica ROLE: %s", got)
	}
	if got := d.do(t, "r2", "SET", "k", "v"); !strings.HasPrefix(got, `error:"READONLY`) {
		t.Fatalf("replica write: %s", got)
	}
	if got := d.do(t, "s1", "SENTINEL", "MASTER", "mymaster"); !strings.Contains(got, `"config-epoch" "1"`) || !strings.Contains(got, `"ip" "r1"`) {
		t.Fatalf("SENTINEL MASTER: %s", got)
	}
	if got := d.do(t, "s1", "SENTINEL", "GET-MASTER-ADDR-BY-NAME", "other"); !strings.Contains(got, "null") {
		t.Fatalf("unknown name: %s", got)
	}
	if got := d.do(t, "s1", "GET", "k"); !strings.HasPrefix(got, `error:"ERR unknown command`) {
		t.Fatalf("data command on a Sentinel: %s", got)
	}
	if got := d.do(t, "s1", "SENTINEL", "MASTER", "mymaster"); !strings.Contains(got, `"flags" "master"`) {
		t.Fatalf("SENTINEL MASTER flags: %s", got)
	}
	d.do(t, "s1", "SUBSCRIBE", "+switch-master")
	// Leading a failover: the new epoch with the old primary, flagged, and nothing announced.
	d.nodes["s1"].UpdateSentinel(SentinelView{Primary: "r1", Epoch: 2, InFailover: true}, true)
	if got := d.do(t, "s1", "SENTINEL", "MASTER", "mymaster"); !strings.Contains(got, `"flags" "master,failover_in_progress"`) ||
		!strings.Contains(got, `"config-epoch" "2"`) || !strings.Contains(got, `"ip" "r1"`) {
		t.Fatalf("SENTINEL MASTER mid-failover: %s", got)
	}
	d.nodes["s1"].UpdateSentinel(SentinelView{Primary: "r2", Epoch: 2}, true)
	if got := strings.Join(d.links["s1"].replies(t), " | "); !strings.Contains(got, "mymaster r1 6379 r2 6379") {
		t.Fatalf("+switch-master: %s", got)
	}
	if got := d.do(t, "s1", "SENTINEL", "GET-MASTER-ADDR-BY-NAME", "mymaster"); !strings.Contains(got, `"r2"`) {
		t.Fatalf("view after the update: %s", got)
	}
}

// TestGroupDivergence: a diverged old primary keeps acknowledging writes on its own copy after
// the promotion, and loses them when it rejoins; a stale rejoin (of an earlier divergence) does
// nothing; a diverged node that is promoted rejoins first (the random Sentinel runs found a
// double divergence when a failover promoted the primary itself).
func TestGroupDivergence(t *testing.T) {
	d := newTestDeployment(t)
	d.do(t, "r1", "SET", "k", "before")
	seq := d.g.Diverge(d.nodes["r1"])
	d.g.Promote(d.nodes["r2"])
	if got := d.do(t, "r1", "SET", "k", "lost"); got != `simple:"OK"` {
		t.Fatalf("diverged write: %s", got)
	}
	if got := d.do(t, "r2", "GET", "k"); got != `"before"` {
		t.Fatalf("the new primary saw the diverged write: %s", got)
	}
	if d.g.Rejoin(d.nodes["r1"], seq+1) {
		t.Fatal("a rejoin of another divergence took effect")
	}
	if !d.g.Rejoin(d.nodes["r1"], seq) {
		t.Fatal("the rejoin did not take effect")
	}
	if got := d.do(t, "r1", "GET", "k"); got != `"before"` {
		t.Fatalf("after rejoining, r1 kept its diverged write: %s", got)
	}
	if got := d.do(t, "r1", "SET", "k", "x"); !strings.HasPrefix(got, `error:"READONLY`) {
		t.Fatalf("rejoined r1 accepted a write: %s", got)
	}
	seq = d.g.Diverge(d.nodes["r2"])
	d.g.Promote(d.nodes["r1"])
	d.g.Promote(d.nodes["r2"]) // r2 rejoins, then leads again
	if d.g.Rejoin(d.nodes["r2"], seq) {
		t.Fatal("the divergence outlived the node's promotion")
	}
}
