package topo_test

import (
	"flag"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/netio/redistest"
	"github.com/respire-go/respire/netio/resp"
	"github.com/respire-go/respire/netio/topo"
)

// capture rewrites testdata/cluster/real from the replies of the real cluster TestRealCluster
// starts: go test ./netio/wire -run TestRealCluster -capture, then -update for the golden files.
var capture = flag.Bool("capture", false, "rewrite testdata/cluster/real from a real Redis Cluster")

// rawConn is a connection to one node that keeps the exact bytes of every reply.
type rawConn struct {
	t    *testing.T
	conn net.Conn
	buf  []byte
}

func dialRaw(t *testing.T, addr string, proto int) *rawConn {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	c := &rawConn{t: t, conn: conn}
	if proto == 3 {
		if _, v := c.do("HELLO", "3"); v.IsError() {
			t.Fatalf("HELLO 3: %v", v)
		}
	}
	return c
}

// do sends one command and returns its reply, raw and parsed.
func (c *rawConn) do(args ...string) ([]byte, resp.Value) {
	c.t.Helper()
	if err := c.conn.SetDeadline(time.Now().Add(10 * time.Second)); err != nil {
		c.t.Fatal(err)
	}
	if _, err := c.conn.Write(resp.AppendCommand(nil, args...)); err != nil {
		c.t.Fatal(err)
	}
	var chunk [64 << 10]byte
	for {
		var v resp.Value
		n, err := resp.Parse(c.buf, &v, nil)
		if err == nil {
			raw := slices.Clone(c.buf[:n])
			c.buf = c.buf[n:]
			return raw, v
		}
		if err != resp.ErrIncomplete {
			c.t.Fatalf("%q: %v", args, err)
		}
		k, err := c.conn.Read(chunk[:])
		if err != nil {
			c.t.Fatalf("%q: %v", args, err)
		}
		c.buf = append(c.buf, chunk[:k]...)
	}
}

// captured is one recorded reply.
type captured struct {
	name, kind string
	asked      fsm.Endpoint
	raw        []byte
}

// realCluster drives the scenario of TestRealCluster and records its replies.
type realCluster struct {
	t        *testing.T
	c        *redistest.Cluster
	captures []captured
}

// query sends a command to node over a fresh connection speaking proto, records the reply under
// name when name is not empty, and returns it.
func (rc *realCluster) query(node *redistest.Server, proto int, name, kind string, args ...string) resp.Value {
	rc.t.Helper()
	raw, v := dialRaw(rc.t, node.Addr(), proto).do(args...)
	if name != "" {
		rc.captures = append(rc.captures, captured{name: name, kind: kind, asked: endpointOf(rc.t, node), raw: raw})
	}
	return v
}

func endpointOf(t *testing.T, s *redistest.Server) fsm.Endpoint {
	t.Helper()
	ep, err := fsm.ParseEndpoint(s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	return ep
}

// topology asks node for CLUSTER SLOTS (RESP2) and applies it to the empty Topology.
func (rc *realCluster) topology(node *redistest.Server) fsm.Topology {
	rc.t.Helper()
	r, err := topo.ParseClusterSlots(rc.query(node, 2, "", "", "CLUSTER", "SLOTS"), endpointOf(rc.t, node))
	if err != nil {
		rc.t.Fatal(err)
	}
	top, ch := fsm.Topology{}.Apply(r)
	if ch.Verdict != fsm.VerdictConclusive {
		rc.t.Fatalf("CLUSTER SLOTS: %v", ch.String())
	}
	return top
}

func (rc *realCluster) setAll(param, value string) {
	rc.t.Helper()
	for _, n := range rc.c.Nodes() {
		if !n.Running() {
			continue
		}
		if got := n.Do(rc.t, "CONFIG", "SET", param, value); got != "OK" {
			rc.t.Fatalf("CONFIG SET %s %s on %s: %s", param, value, n.Addr(), got)
		}
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// parse parses a recorded reply of the given kind.
func parse(kind string, v resp.Value, asked fsm.Endpoint) (fsm.TopologyReply, error) {
	switch kind {
	case "slots":
		return topo.ParseClusterSlots(v, asked)
	case "shards":
		return topo.ParseClusterShards(v, asked)
	case "nodes":
		return topo.ParseClusterNodes(v, asked)
	}
	panic("unknown kind " + kind)
}

func mustParse(t *testing.T, kind string, v resp.Value, asked fsm.Endpoint) fsm.TopologyReply {
	t.Helper()
	r, err := parse(kind, v, asked)
	if err != nil {
		t.Fatalf("%s: %v\n%v", kind, err, v)
	}
	return r
}

func mustNode(t *testing.T, top fsm.Topology, id string) fsm.Node {
	t.Helper()
	n, ok := top.Node(fsm.NodeID(id))
	if !ok {
		t.Fatalf("node %s missing from\n%s", id, top.String())
	}
	return n
}

// TestRealCluster parses the topology replies of a real 3-primary, 3-replica Redis Cluster in
// every form this package handles, checking each against what the test set up: default IP
// endpoints, announced host names, host names preferred (with one node lacking one, "?"), the
// unknown-endpoint type (null and empty endpoints), a slot in migration (ASK, TRYAGAIN), an
// expanded IPv6 cluster-announce-ip, a failed replica, and a partial map with CLUSTERDOWN.
func TestRealCluster(t *testing.T) {
	start := time.Now()
	c := redistest.StartCluster(t, redistest.ClusterConfig{})
	t.Logf("cluster up in %v", time.Since(start))
	rc := &realCluster{t: t, c: c}
	ids := map[string]string{} // address -> node ID
	for _, n := range c.Nodes() {
		ids[n.Addr()] = n.Do(t, "CLUSTER", "MYID")
	}
	primaries, replicas := c.Primaries(t), c.Replicas(t)
	first := primaries[0]
	asked := endpointOf(t, first)
	// CLUSTER SLOTS leaves out replicas whose replication offset is still 0 (SHARDS calls them
	// loading): write to every shard, then wait for the offsets to spread.
	for _, p := range primaries {
		conn := dialRaw(t, p.Addr(), 2)
		for i := 0; i < 32; i++ {
			conn.do("SET", "warm"+strconv.Itoa(i), "1") // a third of them land
		}
	}
	waitFor(t, "every replica to be served", func() bool {
		s := rc.query(first, 2, "", "", "CLUSTER", "SHARDS").String()
		if strings.Contains(s, `"loading"`) || strings.Count(s, `"online"`) != 6 {
			return false
		}
		// SHARDS may call a replica online before SLOTS lists it: wait for both.
		r, err := topo.ParseClusterSlots(rc.query(first, 2, "", "", "CLUSTER", "SLOTS"), asked)
		if err != nil {
			return false
		}
		top, _ := fsm.Topology{}.Apply(r)
		return top.Len() == 6
	})

	// 1. Default configuration: every node by IP.
	for _, q := range []struct{ kind, cmd string }{{"slots", "SLOTS"}, {"shards", "SHARDS"}, {"nodes", "NODES"}} {
		for _, proto := range []int{2, 3} {
			v := rc.query(first, proto, "ip-"+q.kind+"-resp"+strconv.Itoa(proto), q.kind, "CLUSTER", q.cmd)
			r := mustParse(t, q.kind, v, asked)
			top, ch := fsm.Topology{}.Apply(r)
			if ch.Verdict != fsm.VerdictConclusive || top.Len() != 6 || len(r.Shards) != 3 {
				t.Fatalf("%s RESP%d: %v\n%s", q.cmd, proto, ch.String(), top.String())
			}
			for addr, id := range ids {
				n := mustNode(t, top, id)
				if n.Addr.String() != addr {
					t.Errorf("%s: node %s at %v, want %s", q.cmd, id, n.Addr, addr)
				}
				if got, ok := top.Lookup(n.Addr); !ok || got.ID != n.ID {
					t.Errorf("%s: lookup %v", q.cmd, n.Addr)
				}
			}
			for _, p := range primaries {
				if got := top.Replicas(fsm.NodeID(ids[p.Addr()])); len(got) != 1 {
					t.Errorf("%s: %s has replicas %v", q.cmd, p.Addr(), got)
				}
			}
			if q.kind == "nodes" && r.Self != fsm.NodeID(ids[first.Addr()]) {
				t.Errorf("CLUSTER NODES: self %s, want %s", r.Self, ids[first.Addr()])
			}
		}
	}
	full := rc.topology(first)

	// 2. Announced host names, mixed case, on all nodes but one primary.
	unnamed := primaries[2]
	name := func(n *redistest.Server) string { return "Node-" + strconv.Itoa(n.Port()) + ".Example.internal" }
	for _, n := range c.Nodes() {
		if n != unnamed {
			n.Do(t, "CONFIG", "SET", "cluster-announce-hostname", name(n))
		}
	}
	waitFor(t, "host names to spread", func() bool {
		s := first.Do(t, "CLUSTER", "NODES")
		return strings.Count(s, ".Example.internal") == 5
	})
	for _, q := range []struct{ kind, cmd string }{{"slots", "SLOTS"}, {"shards", "SHARDS"}, {"nodes", "NODES"}} {
		for _, proto := range []int{2, 3} {
			v := rc.query(first, proto, "hostname-"+q.kind+"-resp"+strconv.Itoa(proto), q.kind, "CLUSTER", q.cmd)
			top, _ := fsm.Topology{}.Apply(mustParse(t, q.kind, v, asked))
			for _, n := range c.Nodes() {
				got := mustNode(t, top, ids[n.Addr()])
				want := strings.ToLower(name(n))
				if n == unnamed {
					want = ""
				}
				if got.Hostname != want || got.Addr.String() != n.Addr() {
					t.Errorf("%s RESP%d: %v; want host name %q at %s", q.cmd, proto, got, want, n.Addr())
				}
				if want != "" {
					// Case-insensitive: the announced spelling finds the node.
					ep, _ := fsm.ParseEndpoint(name(n) + ":" + strconv.Itoa(n.Port()))
					if l, ok := top.Lookup(ep); !ok || l.ID != got.ID {
						t.Errorf("%s: lookup by host name %v found %v", q.cmd, ep, l)
					}
				}
			}
		}
	}

	// 3. Host names preferred: the unnamed node's endpoint is "?", replaced by its IP.
	rc.setAll("cluster-preferred-endpoint-type", "hostname")
	for _, q := range []struct{ kind, cmd string }{{"slots", "SLOTS"}, {"shards", "SHARDS"}} {
		for _, proto := range []int{2, 3} {
			v := rc.query(first, proto, "prefer-hostname-"+q.kind+"-resp"+strconv.Itoa(proto), q.kind, "CLUSTER", q.cmd)
			top, _ := fsm.Topology{}.Apply(mustParse(t, q.kind, v, asked))
			for _, n := range c.Nodes() {
				got := mustNode(t, top, ids[n.Addr()])
				want := strings.ToLower(name(n)) + ":" + strconv.Itoa(n.Port())
				if n == unnamed {
					want = n.Addr()
				}
				if got.Addr.String() != want || got.IP != "127.0.0.1" {
					t.Errorf("%s RESP%d: %v; want addr %s", q.cmd, proto, got, want)
				}
			}
		}
	}
	rc.checkMoved("prefer-hostname", first, full, func(owner *redistest.Server, r topo.Redirect) {
		if owner == unnamed {
			if r.Host != topo.HostUnknown {
				t.Errorf("MOVED to the unnamed node: %v", r)
			}
			return
		}
		if r.Host != topo.HostGiven || r.Target.Host != strings.ToLower(name(owner)) {
			t.Errorf("MOVED to %s: %v", owner.Addr(), r)
		}
	})

	// 4. Unknown endpoints: null in CLUSTER SLOTS, empty in CLUSTER SHARDS and redirects. The
	// client uses the host it asked.
	rc.setAll("cluster-preferred-endpoint-type", "unknown-endpoint")
	for _, q := range []struct{ kind, cmd string }{{"slots", "SLOTS"}, {"shards", "SHARDS"}} {
		for _, proto := range []int{2, 3} {
			v := rc.query(first, proto, "unknown-endpoint-"+q.kind+"-resp"+strconv.Itoa(proto), q.kind, "CLUSTER", q.cmd)
			top, _ := fsm.Topology{}.Apply(mustParse(t, q.kind, v, asked))
			for _, n := range c.Nodes() {
				if got := mustNode(t, top, ids[n.Addr()]); got.Addr.String() != n.Addr() {
					t.Errorf("%s RESP%d: %v; want %s", q.cmd, proto, got, n.Addr())
				}
			}
		}
	}
	rc.checkMoved("unknown-endpoint", first, full, func(owner *redistest.Server, r topo.Redirect) {
		if r.Host != topo.HostSameAsSender {
			t.Errorf("MOVED: %v", r)
		}
	})
	rc.setAll("cluster-preferred-endpoint-type", "ip")

	// 5. A slot in migration from a to b: CLUSTER NODES shows it on both, a missing key gets ASK,
	// a multi-key command over a present and a missing key gets TRYAGAIN.
	a, b := primaries[0], primaries[1]
	key := ""
	for i := 0; key == ""; i++ {
		k := "{m" + strconv.Itoa(i) + "}"
		if owner, _ := full.Owner(topo.KeySlotString(k)); owner.ID == fsm.NodeID(ids[a.Addr()]) {
			key = k
		}
	}
	slot := strconv.Itoa(int(topo.KeySlotString(key)))
	a.Do(t, "SET", key+"present", "1")
	b.Do(t, "CLUSTER", "SETSLOT", slot, "IMPORTING", ids[a.Addr()])
	a.Do(t, "CLUSTER", "SETSLOT", slot, "MIGRATING", ids[b.Addr()])
	for _, side := range []struct {
		node      *redistest.Server
		name      string
		peer      *redistest.Server
		importing bool
	}{{a, "migrating-nodes", b, false}, {b, "importing-nodes", a, true}} {
		v := rc.query(side.node, 2, side.name, "nodes", "CLUSTER", "NODES")
		r := mustParse(t, "nodes", v, endpointOf(t, side.node))
		want := []fsm.SlotMigration{{Slot: topo.KeySlotString(key), Peer: fsm.NodeID(ids[side.peer.Addr()]), Importing: side.importing}}
		if !slices.Equal(r.Migrations, want) {
			t.Errorf("%s: migrations %v, want %v", side.name, r.Migrations, want)
		}
	}
	v := rc.query(a, 2, "ask", "error", "GET", key+"missing")
	if r, err := topo.ParseRedirect(v); err != nil || r.Kind != topo.RejectionAsk || r.Target.String() != b.Addr() {
		t.Errorf("ASK: %v, %v", r, err)
	}
	v = rc.query(a, 2, "tryagain", "error", "MGET", key+"present", key+"missing")
	if got := topo.ClassifyRejection(v); got != topo.RejectionTryAgain {
		t.Errorf("MGET during migration: %v (%v)", got, v)
	}
	a.Do(t, "CLUSTER", "SETSLOT", slot, "STABLE")
	b.Do(t, "CLUSTER", "SETSLOT", slot, "STABLE")

	// 6. An expanded IPv6 cluster-announce-ip (the incident's review): the node is found by the
	// compressed form.
	announced := replicas[0]
	announced.Do(t, "CONFIG", "SET", "cluster-announce-ip", "0:0:0:0:0:0:0:1")
	waitFor(t, "the IPv6 address to spread", func() bool {
		return strings.Contains(first.Do(t, "CLUSTER", "NODES"), "0:0:0:0:0:0:0:1:"+strconv.Itoa(announced.Port())+"@")
	})
	for _, q := range []struct{ kind, cmd string }{{"nodes", "NODES"}, {"slots", "SLOTS"}, {"shards", "SHARDS"}} {
		v := rc.query(first, 2, "ipv6-"+q.kind, q.kind, "CLUSTER", q.cmd)
		top, _ := fsm.Topology{}.Apply(mustParse(t, q.kind, v, asked))
		n, ok := top.Node(fsm.NodeID(ids[announced.Addr()]))
		if !ok {
			if q.kind == "nodes" {
				t.Fatalf("CLUSTER NODES lost the node:\n%s", top.String())
			}
			continue // CLUSTER SLOTS leaves out a replica others already see as failed
		}
		if n.IP != "::1" || n.Addr.String() != "[::1]:"+strconv.Itoa(announced.Port()) {
			t.Errorf("%s: %v", q.cmd, n)
		}
		for _, spelling := range []string{"[0:0:0:0:0:0:0:1]", "::1", "[0000:0000::0001]"} {
			ep, _ := fsm.ParseEndpoint(spelling + ":" + strconv.Itoa(announced.Port()))
			if got, ok := top.Lookup(ep); !ok || got.ID != n.ID {
				t.Errorf("%s: %s does not find the node", q.cmd, spelling)
			}
		}
	}

	// 7. A failed replica: flagged in CLUSTER NODES and SHARDS, left out of CLUSTER SLOTS.
	failed := replicas[1]
	failed.Kill()
	waitFor(t, "the replica to be flagged fail", func() bool {
		for _, l := range strings.Split(first.Do(t, "CLUSTER", "NODES"), "\n") {
			if strings.HasPrefix(l, ids[failed.Addr()]) {
				return strings.Contains(l, ",fail ") || strings.Contains(l, ",fail,")
			}
		}
		return false
	})
	for _, q := range []struct{ kind, cmd string }{{"nodes", "NODES"}, {"shards", "SHARDS"}, {"slots", "SLOTS"}} {
		v := rc.query(first, 2, "failed-"+q.kind, q.kind, "CLUSTER", q.cmd)
		top, _ := fsm.Topology{}.Apply(mustParse(t, q.kind, v, asked))
		n, ok := top.Node(fsm.NodeID(ids[failed.Addr()]))
		switch {
		case q.kind == "slots" && ok:
			t.Errorf("CLUSTER SLOTS lists the failed replica: %v", n)
		case q.kind != "slots" && (!ok || n.Health != fsm.HealthFailed):
			t.Errorf("%s: failed replica %v, %v", q.cmd, n, ok)
		}
	}

	// 8. A slot deleted on its owner: that node's CLUSTER SLOTS is partial, and with full
	// coverage required it answers CLUSTERDOWN.
	owner := primaries[2]
	var deleted uint16
	for s := range uint16(fsm.SlotCount) {
		if o, _ := full.Owner(s); o.ID == fsm.NodeID(ids[owner.Addr()]) {
			deleted = s
			break
		}
	}
	owner.Do(t, "CLUSTER", "DELSLOTS", strconv.Itoa(int(deleted)))
	v = rc.query(owner, 2, "partial-slots", "slots", "CLUSTER", "SLOTS")
	next, ch := full.Apply(mustParse(t, "slots", v, endpointOf(t, owner)))
	if ch.Verdict != fsm.VerdictPartial || ch.Covered != fsm.SlotCount-1 || !next.Complete() {
		t.Errorf("partial CLUSTER SLOTS: %v", ch.String())
	}
	if o, _ := next.Owner(deleted); o.ID != fsm.NodeID(ids[owner.Addr()]) {
		t.Errorf("the uncovered slot lost its owner: %v", o)
	}
	waitFor(t, "CLUSTERDOWN", func() bool {
		return topo.ClassifyRejection(rc.query(owner, 2, "", "", "GET", "x")) == topo.RejectionClusterDown
	})
	rc.query(owner, 2, "clusterdown", "error", "GET", "x")

	if *capture {
		rc.write()
	}
	t.Logf("done in %v", time.Since(start))
}

// checkMoved sends GET for a key of every primary but from, records one MOVED per owner, and
// checks each with check. The redirect's target, resolved against from, must name the owner.
func (rc *realCluster) checkMoved(prefix string, from *redistest.Server, full fsm.Topology, check func(*redistest.Server, topo.Redirect)) {
	t := rc.t
	t.Helper()
	for i, p := range rc.c.Primaries(t) {
		if p == from {
			continue
		}
		key := ""
		for j := 0; key == ""; j++ {
			k := "k" + strconv.Itoa(j)
			if o, _ := full.Owner(topo.KeySlotString(k)); o.Addr.String() == p.Addr() {
				key = k
			}
		}
		v := rc.query(from, 2, prefix+"-moved-"+strconv.Itoa(i), "error", "GET", key)
		r, err := topo.ParseRedirect(v)
		if err != nil || r.Kind != topo.RejectionMoved || r.Slot != topo.KeySlotString(key) || r.Target.Port != p.Port() {
			t.Fatalf("GET %s on %s: %v (%v, %v)", key, from.Addr(), v, r, err)
		}
		check(p, r)
		if ep, ok := r.Resolve(endpointOf(t, from)); ok {
			if _, found := full.Lookup(ep); !found && r.Host == topo.HostSameAsSender {
				t.Errorf("%v resolves to %v, which names no node", r, ep)
			}
		}
	}
}

// write stores the captured replies and their manifest.
func (rc *realCluster) write() {
	t := rc.t
	dir := filepath.Join("testdata", "cluster", "real")
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var manifest strings.Builder
	manifest.WriteString("# Replies of a real Redis " + redistest.RedisVersion() + " Cluster, captured by TestRealCluster -capture.\n")
	manifest.WriteString("# file kind asked-endpoint\n")
	for _, c := range rc.captures {
		file := c.name + ".resp"
		if err := os.WriteFile(filepath.Join(dir, file), c.raw, 0o644); err != nil {
			t.Fatal(err)
		}
		manifest.WriteString(file + " " + c.kind + " " + c.asked.String() + "\n")
	}
	if err := os.WriteFile(filepath.Join(dir, "manifest.txt"), []byte(manifest.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %d captures to %s", len(rc.captures), dir)
}
