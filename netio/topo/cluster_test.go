package topo_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/netio/resp"
	"github.com/respire-go/respire/netio/topo"
)

// Node IDs of the hand-made replies.
const (
	idA = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	idB = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
	idC = "cccccccccccccccccccccccccccccccccccccccc"
	idD = "dddddddddddddddddddddddddddddddddddddddd"
	idE = "eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee"
)

var seed = fsm.MakeEndpoint("10.1.1.1", 7000)

// wantMalformed checks that err is a *ReplyError that names neither a host nor an address.
func wantMalformed(t *testing.T, err error, reply string) {
	t.Helper()
	var re *topo.ReplyError
	if !errors.As(err, &re) || !errors.Is(err, topo.ErrMalformedReply) {
		t.Fatalf("err = %v (%T), want a *topo.ReplyError", err, err)
	}
	for _, secret := range []string{"10.0.0", "node-a", "example"} {
		if strings.Contains(reply, secret) && strings.Contains(err.Error(), secret) {
			t.Fatalf("the error quotes the reply: %v", err)
		}
	}
}

func nodesLine(fields ...string) string { return strings.Join(fields, " ") + "\n" }

// The answering node of the CLUSTER NODES replies below, serving every slot.
var selfLine = nodesLine(idA, "10.0.0.1:7000@17000", "myself,master", "-", "0", "0", "1", "connected", "0-16383")

func parseNodes(t *testing.T, text string) fsm.TopologyReply {
	t.Helper()
	r, err := topo.ParseClusterNodesText(text, seed)
	if err != nil {
		t.Fatalf("%v\n%s", err, text)
	}
	return r
}

func nodeOf(t *testing.T, r fsm.TopologyReply, id string) fsm.Node {
	t.Helper()
	for _, sh := range r.Shards {
		for _, n := range sh.Nodes {
			if n.ID == fsm.NodeID(id) {
				return n
			}
		}
	}
	t.Fatalf("node %s not in\n%s", id, r.String())
	return fsm.Node{}
}

// TestClusterNodesAddressForms: every form of the address field, above all the auxiliary fields
// after the host name that the incident's fix sliced into the host name.
func TestClusterNodesAddressForms(t *testing.T) {
	for _, c := range []struct {
		name, addr string
		want       fsm.Node
	}{
		{"7.0 with a host name", "10.0.0.2:7000@17000,Node-A.Example.internal",
			fsm.Node{Addr: fsm.MakeEndpoint("10.0.0.2", 7000), IP: "10.0.0.2", Hostname: "node-a.example.internal"}},
		{"7.2 host name then auxiliary fields", "10.0.0.2:7000@17000,node-a.internal,tls-port=0,shard-id=" + idE,
			fsm.Node{Addr: fsm.MakeEndpoint("10.0.0.2", 7000), IP: "10.0.0.2", Hostname: "node-a.internal"}},
		{"7.2 empty host name then auxiliary fields", "10.0.0.2:7000@17000,,tls-port=0,shard-id=" + idE,
			fsm.Node{Addr: fsm.MakeEndpoint("10.0.0.2", 7000), IP: "10.0.0.2"}},
		{"question mark host name", "10.0.0.2:7000@17000,?",
			fsm.Node{Addr: fsm.MakeEndpoint("10.0.0.2", 7000), IP: "10.0.0.2"}},
		{"IPv6 as Redis writes it", "::1:7000@17000",
			fsm.Node{Addr: fsm.MakeEndpoint("::1", 7000), IP: "::1"}},
		{"IPv6 in brackets", "[::1]:7000@17000",
			fsm.Node{Addr: fsm.MakeEndpoint("::1", 7000), IP: "::1"}},
		{"expanded IPv6 announce-ip", "2001:0db8:0:0:0:0:0:1:7000@17000,node-a",
			fsm.Node{Addr: fsm.MakeEndpoint("2001:db8::1", 7000), IP: "2001:db8::1", Hostname: "node-a"}},
		{"before Redis 4: no bus port", "10.0.0.2:7000",
			fsm.Node{Addr: fsm.MakeEndpoint("10.0.0.2", 7000), IP: "10.0.0.2"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			text := selfLine + nodesLine(idB, c.addr, "slave", idA, "0", "0", "1", "connected")
			got := nodeOf(t, parseNodes(t, text), idB)
			c.want.ID, c.want.Role, c.want.Primary, c.want.Health = idB, fsm.RoleReplica, idA, fsm.HealthOnline
			if got != c.want {
				t.Fatalf("got  %v\nwant %v", got, c.want)
			}
			// The incident's bug: the node must be found by its host name alias at its port.
			if c.want.Hostname != "" {
				top, _ := fsm.Topology{}.Apply(parseNodes(t, text))
				ep, _ := fsm.ParseEndpoint("NODE-A" + strings.TrimPrefix(c.want.Hostname, "node-a") + ":7000")
				if n, ok := top.Lookup(ep); !ok || n.ID != idB {
					t.Fatalf("Lookup(%v) = %v, %v", ep, n, ok)
				}
			}
		})
	}
}

func TestClusterNodesFlagsAndShapes(t *testing.T) {
	text := selfLine +
		nodesLine(idB, "10.0.0.2:7000@17000", "slave,fail", idA, "1700000000000", "1700000000000", "1", "disconnected") +
		nodesLine(idC, "10.0.0.3:7000@17000", "slave,fail?", idA, "0", "0", "1", "connected") +
		nodesLine(idD, ":0@0", "master,fail,noaddr", "-", "0", "0", "2", "disconnected") +
		nodesLine(idE, "10.0.0.5:7000@17000", "handshake", "-", "0", "0", "0", "disconnected")
	r := parseNodes(t, text)
	if b := nodeOf(t, r, idB); b.Health != fsm.HealthFailed {
		t.Errorf("fail: %v", b)
	}
	if c := nodeOf(t, r, idC); c.Health != fsm.HealthSuspect {
		t.Errorf("fail?: %v", c)
	}
	if d := nodeOf(t, r, idD); !d.Addr.IsZero() || d.IP != "" || d.Role != fsm.RolePrimary || d.Health != fsm.HealthFailed {
		t.Errorf("noaddr: %v", d)
	}
	for _, sh := range r.Shards {
		for _, n := range sh.Nodes {
			if n.ID == idE {
				t.Errorf("a node in handshake was kept: %v", n)
			}
		}
	}
	if r.Self != idA {
		t.Errorf("self %q", r.Self)
	}
}

// TestClusterNodesSelfWithoutAddress: a node that does not know its own address yet shows
// ":port"; it is on the host the query went to.
func TestClusterNodesSelfWithoutAddress(t *testing.T) {
	r := parseNodes(t, nodesLine(idA, ":7001@17001", "myself,master", "-", "0", "0", "0", "connected", "0-16383"))
	if a := nodeOf(t, r, idA); a.Addr != fsm.MakeEndpoint("10.1.1.1", 7001) {
		t.Errorf("self: %v", a)
	}
}

func TestClusterNodesSlotsAndMigrations(t *testing.T) {
	text := nodesLine(idA, "10.0.0.1:7000@17000", "myself,master", "-", "0", "0", "1", "connected",
		"0-5460", "5462", "[5463->-"+idB+"]", "[7000-<-"+idC+"]") +
		nodesLine(idB, "10.0.0.2:7000@17000", "master", "-", "0", "0", "2", "connected", "5461", "5463-16383") +
		nodesLine(idC, "10.0.0.3:7000@17000", "master", "-", "0", "0", "3", "connected")
	r := parseNodes(t, text)
	want := []fsm.SlotMigration{{Slot: 5463, Peer: idB}, {Slot: 7000, Peer: idC, Importing: true}}
	if len(r.Migrations) != 2 || r.Migrations[0] != want[0] || r.Migrations[1] != want[1] {
		t.Errorf("migrations %v", r.Migrations)
	}
	top, ch := fsm.Topology{}.Apply(r)
	if ch.Verdict != fsm.VerdictConclusive {
		t.Fatalf("%v", ch.String())
	}
	if o, _ := top.Owner(5463); o.ID != idB {
		t.Errorf("slot 5463 (migrating) served by %v", o)
	}
	if ranges := top.Ranges(idC); len(ranges) != 0 {
		t.Errorf("the slot-less primary serves %v", ranges)
	}
}

func TestClusterNodesOrphanReplicas(t *testing.T) {
	text := selfLine +
		nodesLine(idB, "10.0.0.2:7000@17000", "slave", idE, "0", "0", "1", "connected") +
		nodesLine(idC, "10.0.0.3:7000@17000", "slave", idE, "0", "0", "1", "connected") +
		nodesLine(idD, "10.0.0.4:7000@17000", "slave", "-", "0", "0", "1", "connected")
	r := parseNodes(t, text)
	if len(r.Shards) != 3 || len(r.Shards[1].Nodes) != 2 || len(r.Shards[2].Nodes) != 1 {
		t.Fatalf("orphans grouped as\n%s", r.String())
	}
	top, _ := fsm.Topology{}.Apply(r)
	if !strings.Contains(top.String(), "orphan replica "+idB) {
		t.Errorf("String:\n%s", top.String())
	}
}

func TestClusterNodesCRLF(t *testing.T) {
	r := parseNodes(t, strings.ReplaceAll(selfLine, "\n", "\r\n"))
	if r.Self != idA {
		t.Fatalf("%v", r.String())
	}
}

// TestClusterNodesMalformed: garbage, an empty reply, a reply without the answering node and
// every malformed field are errors, never an empty member set (the incident's review).
func TestClusterNodesMalformed(t *testing.T) {
	line := func(fields ...string) string { return nodesLine(fields...) }
	for name, text := range map[string]string{
		"garbage":              "garbage",
		"empty":                "",
		"blank lines":          "\n\n",
		"no myself":            line(idA, "10.0.0.1:7000@17000", "master", "-", "0", "0", "1", "connected", "0-16383"),
		"two myself":           selfLine + line(idB, "10.0.0.2:7000@17000", "myself,slave", idA, "0", "0", "1", "connected"),
		"short line":           selfLine + line(idB, "10.0.0.2:7000@17000", "slave", idA),
		"short id":             line("abc", "10.0.0.1:7000@17000", "myself,master", "-", "0", "0", "1", "connected"),
		"upper-case id":        line(strings.ToUpper(idA), "10.0.0.1:7000@17000", "myself,master", "-", "0", "0", "1", "connected"),
		"no port":              line(idA, "10.0.0.1@17000", "myself,master", "-", "0", "0", "1", "connected"),
		"port out of range":    line(idA, "10.0.0.1:70000@17000", "myself,master", "-", "0", "0", "1", "connected"),
		"bad bus port":         line(idA, "10.0.0.1:7000@x", "myself,master", "-", "0", "0", "1", "connected"),
		"aux without equals":   line(idA, "10.0.0.1:7000@17000,node-a,shard-id", "myself,master", "-", "0", "0", "1", "connected"),
		"bad host name":        line(idA, "10.0.0.1:7000@17000,node a", "myself,master", "-", "0", "0", "1", "connected"),
		"bad ip":               line(idA, "10.0.0/1:7000@17000", "myself,master", "-", "0", "0", "1", "connected"),
		"empty flag":           line(idA, "10.0.0.1:7000@17000", "myself,,master", "-", "0", "0", "1", "connected"),
		"bad primary":          selfLine + line(idB, "10.0.0.2:7000@17000", "slave", "nope", "0", "0", "1", "connected"),
		"bad epoch":            line(idA, "10.0.0.1:7000@17000", "myself,master", "-", "0", "0", "-1", "connected"),
		"bad link":             line(idA, "10.0.0.1:7000@17000", "myself,master", "-", "0", "0", "1", "up"),
		"slot 16384":           line(idA, "10.0.0.1:7000@17000", "myself,master", "-", "0", "0", "1", "connected", "0-16384"),
		"reversed range":       line(idA, "10.0.0.1:7000@17000", "myself,master", "-", "0", "0", "1", "connected", "5-1"),
		"bad migration":        line(idA, "10.0.0.1:7000@17000", "myself,master", "-", "0", "0", "1", "connected", "[5->-x]"),
		"replica serves slots": selfLine + line(idB, "10.0.0.2:7000@17000", "slave", idA, "0", "0", "1", "connected", "1"),
		"overlapping slots":    selfLine + line(idB, "10.0.0.2:7000@17000", "master", "-", "0", "0", "2", "connected", "100"),
		"duplicate node":       selfLine + line(idA, "10.0.0.2:7000@17000", "master", "-", "0", "0", "2", "connected"),
		"double space":         strings.Replace(selfLine, " ", "  ", 1),
	} {
		t.Run(name, func(t *testing.T) {
			r, err := topo.ParseClusterNodesText(text, seed)
			if err == nil {
				t.Fatalf("parsed:\n%s", r.String())
			}
			wantMalformed(t, err, text)
		})
	}
	// An inconsistent reply also says which rule it broke.
	_, err := topo.ParseClusterNodesText(selfLine+nodesLine(idB, "10.0.0.2:7000@17000", "master", "-", "0", "0", "2", "connected", "100"), seed)
	if !errors.Is(err, fsm.ErrInvalidTopologyReply) {
		t.Errorf("overlap: %v", err)
	}
	// Too many lines are refused before any is parsed.
	_, err = topo.ParseClusterNodesText(strings.Repeat("\n", fsm.MaxTopologyNodes+1), seed)
	wantMalformed(t, err, "")
}

func TestClusterNodesValue(t *testing.T) {
	for _, v := range []resp.Value{resp.BulkString(selfLine), resp.Verbatim("txt", selfLine)} {
		if r, err := topo.ParseClusterNodes(v, seed); err != nil || r.Self != idA {
			t.Errorf("%v: %v", v.Kind, err)
		}
	}
	if _, err := topo.ParseClusterNodes(resp.Int(1), seed); err == nil {
		t.Error("an integer parsed")
	}
	checkRejected(t, func(v resp.Value) error { _, err := topo.ParseClusterNodes(v, seed); return err }, fsm.QueryClusterNodes)
}

// checkRejected: an error reply to a topology query is a *TopologyRejectedError that keeps the
// code only.
func checkRejected(t *testing.T, parse func(resp.Value) error, q fsm.TopologyQuery) {
	t.Helper()
	err := parse(resp.ErrorValue("NOPERM User alice has no permissions to run the 'cluster|slots' command"))
	var re *topo.TopologyRejectedError
	if !errors.As(err, &re) || !errors.Is(err, topo.ErrTopologyRejected) || re.Code != "NOPERM" || re.Query != q {
		t.Fatalf("err = %v", err)
	}
	if strings.Contains(err.Error(), "alice") {
		t.Fatalf("the error names the user: %v", err)
	}
	if errors.Is(err, topo.ErrMalformedReply) {
		t.Fatal("a refusal is reported as a malformed reply")
	}
}

// slotsNode builds a CLUSTER SLOTS node entry; meta is nil for none.
func slotsNode(host resp.Value, port int64, id string, meta ...string) resp.Value {
	elems := []resp.Value{host, resp.Int(port), resp.BulkString(id)}
	if meta != nil {
		elems = append(elems, resp.BulkStrings(meta...))
	}
	return resp.ArrayOf(elems...)
}

func slotsEntry(first, last int64, nodes ...resp.Value) resp.Value {
	return resp.ArrayOf(append([]resp.Value{resp.Int(first), resp.Int(last)}, nodes...)...)
}

func TestClusterSlotsEndpoints(t *testing.T) {
	v := resp.ArrayOf(
		slotsEntry(0, 5000,
			slotsNode(resp.BulkString("10.0.0.1"), 7000, idA, "hostname", "Node-A"),
			slotsNode(resp.NullBulk(), 7001, idB, "ip", "10.0.0.2"), // unknown-endpoint: the seed's host
			slotsNode(resp.BulkString("?"), 7002, idC, "ip", "10.0.0.3")),
		slotsEntry(5001, 16383,
			slotsNode(resp.BulkString("node-d.example"), 7003, idD, "ip", "0:0:0:0:0:0:0:4"),
			slotsNode(resp.BulkString(""), 7004, idE)), // no metadata map at all (before 7.0)
	)
	r, err := topo.ParseClusterSlots(v, seed)
	if err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]fsm.Node{
		idA: {Addr: fsm.MakeEndpoint("10.0.0.1", 7000), IP: "10.0.0.1", Hostname: "node-a", Role: fsm.RolePrimary},
		idB: {Addr: fsm.MakeEndpoint("10.1.1.1", 7001), IP: "10.0.0.2", Role: fsm.RoleReplica, Primary: idA},
		idC: {Addr: fsm.MakeEndpoint("10.0.0.3", 7002), IP: "10.0.0.3", Role: fsm.RoleReplica, Primary: idA},
		idD: {Addr: fsm.MakeEndpoint("node-d.example", 7003), IP: "::4", Hostname: "node-d.example", Role: fsm.RolePrimary},
		idE: {Addr: fsm.MakeEndpoint("10.1.1.1", 7004), Role: fsm.RoleReplica, Primary: idD},
	} {
		want.ID = fsm.NodeID(id)
		if got := nodeOf(t, r, id); got != want {
			t.Errorf("got  %v\nwant %v", got, want)
		}
	}
}

func TestClusterSlotsGathersRangesOfOnePrimary(t *testing.T) {
	a := slotsNode(resp.BulkString("10.0.0.1"), 7000, idA)
	b := slotsNode(resp.BulkString("10.0.0.2"), 7000, idB)
	c := slotsNode(resp.BulkString("10.0.0.3"), 7000, idC)
	r, err := topo.ParseClusterSlots(resp.ArrayOf(slotsEntry(0, 99, a, c), slotsEntry(100, 199, b), slotsEntry(200, 16383, a, c)), seed)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Shards) != 2 || len(r.Shards[0].Ranges) != 2 || len(r.Shards[0].Nodes) != 2 {
		t.Fatalf("%s", r.String())
	}
}

// TestClusterSlotsEmpty: during a whole-cluster restart CLUSTER SLOTS answers an empty array. It
// parses, and applying it changes nothing (radix #208).
func TestClusterSlotsEmpty(t *testing.T) {
	full, _ := fsm.Topology{}.Apply(mustSlots(t, resp.ArrayOf(slotsEntry(0, 16383, slotsNode(resp.BulkString("10.0.0.1"), 7000, idA)))))
	r := mustSlots(t, resp.ArrayOf())
	next, ch := full.Apply(r)
	if ch.Verdict != fsm.VerdictInconclusive || !errors.Is(ch.Err, fsm.ErrEmptyTopologyReply) || !next.Equal(full) {
		t.Fatalf("%v", ch.String())
	}
}

func mustSlots(t *testing.T, v resp.Value) fsm.TopologyReply {
	t.Helper()
	r, err := topo.ParseClusterSlots(v, seed)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestClusterSlotsMalformed(t *testing.T) {
	a := slotsNode(resp.BulkString("10.0.0.1"), 7000, idA)
	for name, v := range map[string]resp.Value{
		"null":             resp.NullArray(),
		"string":           resp.BulkString("garbage"),
		"entry not array":  resp.ArrayOf(resp.Int(1)),
		"no node":          resp.ArrayOf(resp.ArrayOf(resp.Int(0), resp.Int(1))),
		"range as strings": resp.ArrayOf(resp.ArrayOf(resp.BulkString("0"), resp.BulkString("1"), a)),
		"slot 16384":       resp.ArrayOf(slotsEntry(0, 16384, a)),
		"negative slot":    resp.ArrayOf(slotsEntry(-1, 5, a)),
		"reversed range":   resp.ArrayOf(slotsEntry(5, 1, a)),
		"node not array":   resp.ArrayOf(slotsEntry(0, 1, resp.BulkString("10.0.0.1"))),
		"no node id":       resp.ArrayOf(slotsEntry(0, 1, resp.ArrayOf(resp.BulkString("10.0.0.1"), resp.Int(7000)))),
		"bad node id":      resp.ArrayOf(slotsEntry(0, 1, slotsNode(resp.BulkString("10.0.0.1"), 7000, "x"))),
		"port as string":   resp.ArrayOf(slotsEntry(0, 1, resp.ArrayOf(resp.BulkString("10.0.0.1"), resp.BulkString("7000"), resp.BulkString(idA)))),
		"port too big":     resp.ArrayOf(slotsEntry(0, 1, slotsNode(resp.BulkString("10.0.0.1"), 65536, idA))),
		"negative port":    resp.ArrayOf(slotsEntry(0, 1, slotsNode(resp.BulkString("10.0.0.1"), -1, idA))),
		"host integer":     resp.ArrayOf(slotsEntry(0, 1, slotsNode(resp.Int(1), 7000, idA))),
		"bad host":         resp.ArrayOf(slotsEntry(0, 1, slotsNode(resp.BulkString("10.0.0.1/8"), 7000, idA))),
		"odd metadata":     resp.ArrayOf(slotsEntry(0, 1, slotsNode(resp.BulkString("10.0.0.1"), 7000, idA, "ip"))),
		"metadata integer": resp.ArrayOf(slotsEntry(0, 1, resp.ArrayOf(resp.BulkString("10.0.0.1"), resp.Int(7000), resp.BulkString(idA), resp.ArrayOf(resp.BulkString("ip"), resp.Int(1))))),
		"bad hostname":     resp.ArrayOf(slotsEntry(0, 1, slotsNode(resp.BulkString("10.0.0.1"), 7000, idA, "hostname", "node a"))),
		"overlap":          resp.ArrayOf(slotsEntry(0, 10, a), slotsEntry(5, 16383, slotsNode(resp.BulkString("10.0.0.2"), 7000, idB))),
		"primary twice as replica": resp.ArrayOf(slotsEntry(0, 10, a),
			slotsEntry(11, 16383, slotsNode(resp.BulkString("10.0.0.2"), 7000, idB), a)),
	} {
		t.Run(name, func(t *testing.T) {
			r, err := topo.ParseClusterSlots(v, seed)
			if err == nil {
				t.Fatalf("parsed:\n%s", r.String())
			}
			wantMalformed(t, err, v.String())
		})
	}
	checkRejected(t, func(v resp.Value) error { _, err := topo.ParseClusterSlots(v, seed); return err }, fsm.QueryClusterSlots)
}

// shardsNode builds a CLUSTER SHARDS node map from alternating names and values; integers are
// given as "#123".
func shardsNode(kv ...string) resp.Value {
	elems := make([]resp.Value, len(kv))
	for i, s := range kv {
		if i%2 == 1 && strings.HasPrefix(s, "#") {
			n := int64(0)
			for _, c := range s[1:] {
				n = n*10 + int64(c-'0')
			}
			elems[i] = resp.Int(n)
		} else {
			elems[i] = resp.BulkString(s)
		}
	}
	return resp.MapOf(elems...)
}

func shardsShard(slots []int64, nodes ...resp.Value) resp.Value {
	s := make([]resp.Value, len(slots))
	for i, n := range slots {
		s[i] = resp.Int(n)
	}
	return resp.MapOf(resp.BulkString("slots"), resp.ArrayOf(s...), resp.BulkString("nodes"), resp.ArrayOf(nodes...))
}

func TestClusterShards(t *testing.T) {
	v := resp.ArrayOf(
		shardsShard([]int64{0, 100, 200, 16383},
			shardsNode("id", idA, "port", "#7000", "ip", "10.0.0.1", "endpoint", "node-a", "hostname", "Node-A", "role", "master", "health", "online"),
			shardsNode("id", idB, "port", "#0", "tls-port", "#7443", "ip", "10.0.0.2", "endpoint", "", "role", "replica", "health", "loading"),
			shardsNode("id", idC, "port", "#7000", "ip", "10.0.0.3", "endpoint", "?", "role", "replica", "health", "fail", "future-field", "x")),
		shardsShard([]int64{101, 199},
			shardsNode("id", idD, "port", "#7000", "ip", "10.0.0.4", "role", "master", "health", "failed")),
		shardsShard(nil),
	)
	r, err := topo.ParseClusterShards(v, seed)
	if err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]fsm.Node{
		idA: {Addr: fsm.MakeEndpoint("node-a", 7000), IP: "10.0.0.1", Hostname: "node-a", Role: fsm.RolePrimary, Health: fsm.HealthOnline},
		idB: {Addr: fsm.MakeEndpoint("10.1.1.1", 7443), IP: "10.0.0.2", Role: fsm.RoleReplica, Primary: idA, Health: fsm.HealthLoading},
		idC: {Addr: fsm.MakeEndpoint("10.0.0.3", 7000), IP: "10.0.0.3", Role: fsm.RoleReplica, Primary: idA, Health: fsm.HealthFailed},
		idD: {Addr: fsm.MakeEndpoint("10.0.0.4", 7000), IP: "10.0.0.4", Role: fsm.RolePrimary, Health: fsm.HealthFailed},
	} {
		want.ID = fsm.NodeID(id)
		if got := nodeOf(t, r, id); got != want {
			t.Errorf("got  %v\nwant %v", got, want)
		}
	}
	if len(r.Shards) != 2 {
		t.Errorf("an empty shard was kept:\n%s", r.String())
	}
	top, ch := fsm.Topology{}.Apply(r)
	if ch.Verdict != fsm.VerdictConclusive || len(top.Ranges(idA)) != 2 {
		t.Fatalf("%v\n%s", ch.String(), top.String())
	}
}

func TestClusterShardsMalformed(t *testing.T) {
	master := shardsNode("id", idA, "port", "#7000", "ip", "10.0.0.1", "role", "master")
	for name, v := range map[string]resp.Value{
		"not array":       resp.BulkString("garbage"),
		"shard not map":   resp.ArrayOf(resp.Int(1)),
		"odd shard":       resp.ArrayOf(resp.ArrayOf(resp.BulkString("slots"))),
		"odd slots":       resp.ArrayOf(shardsShard([]int64{0}, master)),
		"slots not array": resp.ArrayOf(resp.MapOf(resp.BulkString("slots"), resp.Int(1))),
		"slot 16384":      resp.ArrayOf(shardsShard([]int64{0, 16384}, master)),
		"nodes not array": resp.ArrayOf(resp.MapOf(resp.BulkString("nodes"), resp.Int(1))),
		"node not map":    resp.ArrayOf(shardsShard(nil, resp.Int(1))),
		"no id":           resp.ArrayOf(shardsShard(nil, shardsNode("port", "#7000", "ip", "10.0.0.1", "role", "master"))),
		"no role":         resp.ArrayOf(shardsShard(nil, shardsNode("id", idA, "port", "#7000", "ip", "10.0.0.1"))),
		"port as string":  resp.ArrayOf(shardsShard(nil, shardsNode("id", idA, "port", "7000", "ip", "10.0.0.1", "role", "master"))),
		"two masters": resp.ArrayOf(shardsShard(nil, master,
			shardsNode("id", idB, "port", "#7000", "ip", "10.0.0.2", "role", "master"))),
		"slots without master": resp.ArrayOf(shardsShard([]int64{0, 16383},
			shardsNode("id", idB, "port", "#7000", "ip", "10.0.0.2", "role", "replica"))),
		"bad endpoint": resp.ArrayOf(shardsShard(nil, shardsNode("id", idA, "port", "#7000", "ip", "10.0.0.1", "endpoint", "a b", "role", "master"))),
	} {
		t.Run(name, func(t *testing.T) {
			r, err := topo.ParseClusterShards(v, seed)
			if err == nil {
				t.Fatalf("parsed:\n%s", r.String())
			}
			wantMalformed(t, err, v.String())
		})
	}
	checkRejected(t, func(v resp.Value) error { _, err := topo.ParseClusterShards(v, seed); return err }, fsm.QueryClusterShards)
}
