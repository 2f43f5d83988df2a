package redistest

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// DefaultClusterNodeTimeout is the cluster-node-timeout used when
// ClusterConfig.NodeTimeout is zero.
const DefaultClusterNodeTimeout = time.Second

const (
	clusterPrimaries = 3
	clusterNodes     = 2 * clusterPrimaries
	clusterSlots     = 16384
	// clusterTimeout bounds cluster creation and WaitOK.
	clusterTimeout = 60 * time.Second
)

// ClusterConfig configures [StartCluster]. The zero value is a cluster
// without a password.
type ClusterConfig struct {
	// Password, when set, is the requirepass and masterauth of every node.
	Password string
	// NodeTimeout is cluster-node-timeout; DefaultClusterNodeTimeout when
	// zero.
	NodeTimeout time.Duration
	// Extra holds raw configuration lines appended to every node's
	// configuration.
	Extra []string
}

// Cluster is a Redis Cluster of three primaries with one replica each,
// started by [StartCluster]. Nodes are [Server] values (with their cluster
// bus on a separate free port) and can be killed, paused and restarted; a
// restarted node keeps its nodes.conf and so its identity.
type Cluster struct {
	cfg   ClusterConfig
	nodes []*Server
}

// StartCluster starts six cluster-enabled redis-server processes on
// 127.0.0.1, creates a cluster of them with
// redis-cli --cluster create ... --cluster-replicas 1 --cluster-yes, and
// returns once every node reports cluster_state:ok with all slots covered,
// sees all the others connected, and every replica is in sync and known as
// one by every node. Everything is
// killed when the test finishes.
func StartCluster(t testing.TB, cfg ClusterConfig) *Cluster {
	t.Helper()
	Require(t)
	if cfg.NodeTimeout <= 0 {
		cfg.NodeTimeout = DefaultClusterNodeTimeout
	}
	c := &Cluster{cfg: cfg}
	extra := []string{fmt.Sprintf("cluster-node-timeout %d", cfg.NodeTimeout.Milliseconds())}
	if cfg.Password != "" {
		extra = append(extra, "masterauth "+quoteConfig(cfg.Password))
	}
	extra = append(extra, cfg.Extra...)
	for range clusterNodes {
		c.nodes = append(c.nodes, startNode(t, Config{Password: cfg.Password, Extra: extra}, roleCluster))
	}

	args := []string{"--cluster", "create"}
	args = append(args, c.Addrs()...)
	args = append(args, "--cluster-replicas", "1", "--cluster-yes")
	if cfg.Password != "" {
		args = append(args, "-a", cfg.Password, "--no-auth-warning")
	}
	ctx, cancel := context.WithTimeout(context.Background(), clusterTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, lookupBinaries().cli, args...)
	cmd.SysProcAttr = sysProcAttr()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("redistest: redis-cli %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	if !strings.Contains(string(out), "All 16384 slots covered") {
		t.Fatalf("redistest: unexpected output of redis-cli --cluster create:\n%s", out)
	}
	c.WaitOK(t)
	return c
}

// Nodes returns the six nodes in creation order. Which of them are
// primaries is up to redis-cli and changes with failovers; see
// [Cluster.Primaries].
func (c *Cluster) Nodes() []*Server { return append([]*Server(nil), c.nodes...) }

// Addrs returns the nodes' addresses ("127.0.0.1:port"), in the order of
// [Cluster.Nodes].
func (c *Cluster) Addrs() []string {
	addrs := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		addrs[i] = n.Addr()
	}
	return addrs
}

// Node returns the i-th node of [Cluster.Nodes].
func (c *Cluster) Node(i int) *Server { return c.nodes[i] }

// Kill kills the i-th node (see [Server.Kill]).
func (c *Cluster) Kill(i int) { c.nodes[i].Kill() }

// Restart restarts the i-th node on its port with its nodes.conf (see
// [Server.Restart]). It does not wait for the cluster to take it back; use
// [Cluster.WaitOK] for that.
func (c *Cluster) Restart(t testing.TB, i int) {
	t.Helper()
	c.nodes[i].Restart(t)
}

// Primaries returns the running nodes whose ROLE is master.
func (c *Cluster) Primaries(t testing.TB) []*Server {
	t.Helper()
	return c.byRole(t, "master")
}

// Replicas returns the running nodes whose ROLE is slave.
func (c *Cluster) Replicas(t testing.TB) []*Server {
	t.Helper()
	return c.byRole(t, "slave")
}

func (c *Cluster) byRole(t testing.TB, role string) []*Server {
	t.Helper()
	var out []*Server
	for _, n := range c.nodes {
		if !n.Running() {
			continue
		}
		r, err := n.command(doTimeout, "ROLE")
		if err != nil {
			t.Fatalf("redistest: ROLE on %s: %v", n.Addr(), err)
		}
		if len(r.elems) > 0 && r.elems[0].String() == role {
			out = append(out, n)
		}
	}
	return out
}

// WaitOK waits, for up to 60 s, until every running node reports
// cluster_state:ok with all 16384 slots ok, lists every running node as
// connected and not failing, assigns no slot to a stopped node, and, if it
// is a replica, has its replication link up and is listed by every running
// node as a replica of that primary. Use it after [Cluster.Restart],
// or after killing a primary to wait for its replica to take over.
func (c *Cluster) WaitOK(t testing.TB) {
	t.Helper()
	if status, ok := waitUntil(clusterTimeout, 50*time.Millisecond, c.healthy); !ok {
		t.Fatalf("redistest: cluster not ok within %v: %s\n%s", clusterTimeout, status, c.diagnostics())
	}
}

// healthy checks the condition documented by WaitOK.
func (c *Cluster) healthy() (bool, string) {
	running := map[string]bool{}
	for _, n := range c.nodes {
		if n.Running() {
			running[n.Addr()] = true
		}
	}
	for _, n := range c.nodes {
		if !running[n.Addr()] {
			continue
		}
		r, err := n.command(pollTimeout, "CLUSTER", "INFO")
		if err != nil {
			return false, fmt.Sprintf("%s: CLUSTER INFO: %v", n.Addr(), err)
		}
		info := parseInfo(r.String())
		if info["cluster_state"] != "ok" || info["cluster_slots_ok"] != strconv.Itoa(clusterSlots) ||
			info["cluster_known_nodes"] != strconv.Itoa(len(c.nodes)) {
			return false, fmt.Sprintf("%s: cluster_state:%s cluster_slots_ok:%s cluster_known_nodes:%s",
				n.Addr(), info["cluster_state"], info["cluster_slots_ok"], info["cluster_known_nodes"])
		}
		r, err = n.command(pollTimeout, "CLUSTER", "NODES")
		if err != nil {
			return false, fmt.Sprintf("%s: CLUSTER NODES: %v", n.Addr(), err)
		}
		seen := 0
		for _, l := range strings.Split(strings.TrimSpace(r.String()), "\n") {
			f := strings.Fields(l)
			if len(f) < 8 {
				return false, fmt.Sprintf("%s: CLUSTER NODES line %q", n.Addr(), l)
			}
			addr := nodeAddr(f[1])
			if !running[addr] {
				if len(f) > 8 {
					return false, fmt.Sprintf("%s still assigns slots to the stopped node %s", n.Addr(), addr)
				}
				continue
			}
			seen++
			flags := f[2]
			if strings.Contains(flags, "fail") || strings.Contains(flags, "handshake") ||
				strings.Contains(flags, "noaddr") || f[7] != "connected" {
				return false, fmt.Sprintf("%s sees %s as %s %s", n.Addr(), addr, flags, f[7])
			}
		}
		if seen != len(running) {
			return false, fmt.Sprintf("%s lists %d of the %d running nodes", n.Addr(), seen, len(running))
		}
		r, err = n.command(pollTimeout, "ROLE")
		if err != nil {
			return false, fmt.Sprintf("%s: ROLE: %v", n.Addr(), err)
		}
		if len(r.elems) >= 4 && r.elems[0].String() == "slave" && r.elems[3].String() != "connected" {
			return false, fmt.Sprintf("replica %s: link state %s", n.Addr(), r.elems[3].String())
		}
	}
	return c.replicasAgreed(running)
}

// replicasAgreed reports whether every running node's CLUSTER NODES lists each running replica
// as a replica of the primary its ROLE names. A replica's ROLE and link are up before gossip
// has told the other nodes (its own primary included, whose CLUSTER REPLICAS is then empty).
func (c *Cluster) replicasAgreed(running map[string]bool) (bool, string) {
	primaryOf := map[string]string{} // replica address -> its primary's address, from ROLE
	for _, n := range c.nodes {
		if !running[n.Addr()] {
			continue
		}
		r, err := n.command(pollTimeout, "ROLE")
		if err != nil {
			return false, fmt.Sprintf("%s: ROLE: %v", n.Addr(), err)
		}
		if len(r.elems) >= 3 && r.elems[0].String() == "slave" {
			primaryOf[n.Addr()] = net.JoinHostPort(r.elems[1].String(), r.elems[2].String())
		}
	}
	for _, n := range c.nodes {
		if !running[n.Addr()] {
			continue
		}
		r, err := n.command(pollTimeout, "CLUSTER", "NODES")
		if err != nil {
			return false, fmt.Sprintf("%s: CLUSTER NODES: %v", n.Addr(), err)
		}
		ids := map[string]string{}      // address -> node id
		flags := map[string][2]string{} // address -> flags, primary id
		for _, l := range strings.Split(strings.TrimSpace(r.String()), "\n") {
			f := strings.Fields(l)
			if len(f) < 8 {
				return false, fmt.Sprintf("%s: CLUSTER NODES line %q", n.Addr(), l)
			}
			addr := nodeAddr(f[1])
			ids[addr] = f[0]
			flags[addr] = [2]string{f[2], f[3]}
		}
		for replica, primary := range primaryOf {
			got := flags[replica]
			if !strings.Contains(got[0], "slave") || got[1] != ids[primary] {
				return false, fmt.Sprintf("%s sees the replica %s of %s as %s of %s", n.Addr(), replica, primary, got[0], got[1])
			}
		}
	}
	return true, ""
}

// nodeAddr extracts "ip:port" from a CLUSTER NODES address field such as
// "127.0.0.1:30001@40001" or "127.0.0.1:30001@40001,hostname".
func nodeAddr(field string) string {
	field, _, _ = strings.Cut(field, ",")
	field, _, _ = strings.Cut(field, "@")
	host, port, err := net.SplitHostPort(field)
	if err != nil {
		return field
	}
	return net.JoinHostPort(host, port)
}

func (c *Cluster) diagnostics() string {
	var b strings.Builder
	for _, n := range c.nodes {
		fmt.Fprintf(&b, "=== node %s (running %v)\n%s\n", n.Addr(), n.Running(), n.LogTail(10))
	}
	return b.String()
}
