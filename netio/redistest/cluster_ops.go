package redistest

import (
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Operations on a running Cluster for tests that change its topology under a client: manual
// failover, slot migration with redis-cli, and removing a node and adding a new one at another
// port.

// NodeID returns the cluster node ID of the i-th node (CLUSTER MYID).
func (c *Cluster) NodeID(t testing.TB, i int) string {
	t.Helper()
	r, err := c.nodes[i].command(doTimeout, "CLUSTER", "MYID")
	if err != nil {
		t.Fatalf("redistest: CLUSTER MYID on %s: %v", c.nodes[i].Addr(), err)
	}
	return r.String()
}

// Index returns the index in Nodes of s, or -1.
func (c *Cluster) Index(s *Server) int {
	for i, n := range c.nodes {
		if n == s {
			return i
		}
	}
	return -1
}

// Failover runs CLUSTER FAILOVER on the replica s (a coordinated, lossless manual failover:
// the primary stops writes until the replica has caught up) and waits until s is a primary
// and the Cluster is ok again.
func (c *Cluster) Failover(t testing.TB, s *Server) {
	t.Helper()
	if _, err := s.command(doTimeout, "CLUSTER", "FAILOVER"); err != nil {
		t.Fatalf("redistest: CLUSTER FAILOVER on %s: %v", s.Addr(), err)
	}
	if _, ok := waitUntil(clusterTimeout, 50*time.Millisecond, func() (bool, string) {
		r, err := s.command(pollTimeout, "ROLE")
		if err != nil {
			return false, err.Error()
		}
		return len(r.elems) > 0 && r.elems[0].String() == "master", "not a primary yet"
	}); !ok {
		t.Fatalf("redistest: %s did not become a primary", s.Addr())
	}
	c.WaitOK(t)
}

// Reshard moves slots slots from the primary from to the primary to with
// redis-cli --cluster reshard, key by key (MIGRATE), and waits until the Cluster is ok.
func (c *Cluster) Reshard(t testing.TB, from, to *Server, slots int) {
	t.Helper()
	args := []string{"--cluster", "reshard", from.Addr(),
		"--cluster-from", c.NodeID(t, c.Index(from)), "--cluster-to", c.NodeID(t, c.Index(to)),
		"--cluster-slots", strconv.Itoa(slots), "--cluster-yes", "--cluster-pipeline", "100"}
	c.cli(t, args...)
	c.WaitOK(t)
}

// RemoveNode removes the i-th node from the Cluster with redis-cli --cluster del-node, which
// makes every other node forget it, and kills it. The node must serve no slot (a replica, or a
// primary whose slots were resharded away). It leaves Nodes.
func (c *Cluster) RemoveNode(t testing.TB, i int) {
	t.Helper()
	id := c.NodeID(t, i)
	var via *Server
	for j, n := range c.nodes {
		if j != i && n.Running() {
			via = n
			break
		}
	}
	c.cli(t, "--cluster", "del-node", via.Addr(), id)
	// Depending on the version, redis-cli shuts the node down or only makes the others forget
	// it; either way it is gone for good.
	c.nodes[i].Kill()
	c.nodes = append(c.nodes[:i:i], c.nodes[i+1:]...)
	c.WaitOK(t)
}

// AddPrimary starts a new cluster-enabled node on a fresh port, adds it to the Cluster as a
// primary without slots (redis-cli --cluster add-node), waits until every node knows it, and
// returns it. Move slots to it with Reshard.
func (c *Cluster) AddPrimary(t testing.TB) *Server {
	t.Helper()
	extra := []string{fmt.Sprintf("cluster-node-timeout %d", c.cfg.NodeTimeout.Milliseconds())}
	if c.cfg.Password != "" {
		extra = append(extra, "masterauth "+quoteConfig(c.cfg.Password))
	}
	extra = append(extra, c.cfg.Extra...)
	n := startNode(t, Config{Password: c.cfg.Password, Extra: extra}, roleCluster)
	var via *Server
	for _, m := range c.nodes {
		if m.Running() {
			via = m
			break
		}
	}
	c.cli(t, "--cluster", "add-node", n.Addr(), via.Addr())
	c.nodes = append(c.nodes, n)
	c.WaitOK(t)
	return n
}

// cli runs redis-cli with args (and the password) and fails the test on error.
func (c *Cluster) cli(t testing.TB, args ...string) string {
	t.Helper()
	if c.cfg.Password != "" {
		args = append(args, "-a", c.cfg.Password, "--no-auth-warning")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*clusterTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, lookupBinaries().cli, args...)
	cmd.SysProcAttr = sysProcAttr()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("redistest: redis-cli %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// PrimaryOf returns the running primary that serves slot, as the first running node that
// answers CLUSTER SLOTS sees it, or nil.
func (c *Cluster) PrimaryOf(t testing.TB, slot int) *Server {
	t.Helper()
	for _, n := range c.nodes {
		if !n.Running() {
			continue
		}
		r, err := n.command(doTimeout, "CLUSTER", "SLOTS")
		if err != nil {
			continue
		}
		for _, e := range r.elems {
			if len(e.elems) < 3 {
				continue
			}
			lo, _ := strconv.Atoi(e.elems[0].String())
			hi, _ := strconv.Atoi(e.elems[1].String())
			if slot < lo || slot > hi {
				continue
			}
			port, _ := strconv.Atoi(e.elems[2].elems[1].String())
			for _, m := range c.nodes {
				if m.Port() == port && m.Running() {
					return m
				}
			}
		}
		return nil
	}
	return nil
}

// SlotOwners returns, for every slot, the running primary that serves it in the view of the
// first running node that answers CLUSTER SLOTS (nil for an uncovered slot).
func (c *Cluster) SlotOwners(t testing.TB) *[16384]*Server {
	t.Helper()
	var out [16384]*Server
	for _, n := range c.nodes {
		if !n.Running() {
			continue
		}
		r, err := n.command(doTimeout, "CLUSTER", "SLOTS")
		if err != nil {
			continue
		}
		for _, e := range r.elems {
			if len(e.elems) < 3 {
				continue
			}
			lo, _ := strconv.Atoi(e.elems[0].String())
			hi, _ := strconv.Atoi(e.elems[1].String())
			port, _ := strconv.Atoi(e.elems[2].elems[1].String())
			for _, m := range c.nodes {
				if m.Port() == port && m.Running() {
					for s := lo; s <= hi && s < len(out); s++ {
						out[s] = m
					}
				}
			}
		}
		return &out
	}
	t.Fatalf("redistest: no running node answers CLUSTER SLOTS")
	return nil
}

// MoveSlot moves one slot, which must hold no key, from the primary serving it to the primary
// to, with CLUSTER SETSLOT on both and on every other running node, and waits until the Cluster
// is ok.
func (c *Cluster) MoveSlot(t testing.TB, slot int, to *Server) {
	t.Helper()
	from := c.PrimaryOf(t, slot)
	if from == nil || from == to {
		t.Fatalf("redistest: slot %d has no primary other than %s", slot, to.Addr())
	}
	s := strconv.Itoa(slot)
	toID, fromID := c.NodeID(t, c.Index(to)), c.NodeID(t, c.Index(from))
	steps := []struct {
		on   *Server
		args []string
	}{
		{to, []string{"CLUSTER", "SETSLOT", s, "IMPORTING", fromID}},
		{from, []string{"CLUSTER", "SETSLOT", s, "MIGRATING", toID}},
		{to, []string{"CLUSTER", "SETSLOT", s, "NODE", toID}},
		{from, []string{"CLUSTER", "SETSLOT", s, "NODE", toID}},
	}
	for _, st := range steps {
		if r, err := st.on.command(doTimeout, st.args...); err != nil || r.isError() {
			t.Fatalf("redistest: %s on %s: %v %s", strings.Join(st.args, " "), st.on.Addr(), err, r.String())
		}
	}
	for _, n := range c.nodes {
		if n.Running() && n != to && n != from {
			_, _ = n.command(doTimeout, "CLUSTER", "SETSLOT", s, "NODE", toID)
		}
	}
	c.WaitOK(t)
}
