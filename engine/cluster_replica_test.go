package engine

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/netio/resp"
	"github.com/respire-go/respire/netio/topo"
)

// addReplica gives the primary at addr a replica and returns the replica's address.
func (fc *fakeCluster) addReplica(primary string) string {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	i := len(fc.replicaOf) + 1
	addr := fmt.Sprintf("10.0.1.%d:7000", i)
	fc.nodes[addr] = &fakeNode{addr: addr, id: strings.Repeat(fmt.Sprint(i%10), 40), port: 7000}
	fc.replicaOf[addr] = primary
	return addr
}

// replicasOf returns the replicas of the primary at addr, by address (fc.mu held).
func (fc *fakeCluster) replicasOf(addr string) []*fakeNode {
	var out []*fakeNode
	for r, p := range fc.replicaOf {
		if p == addr {
			out = append(out, fc.nodes[r])
		}
	}
	slices.SortFunc(out, func(a, b *fakeNode) int { return strings.Compare(a.addr, b.addr) })
	return out
}

// serveReplica answers what a replica serves differently, and the router's probes and
// validations on every node (fc.mu held).
func (fc *fakeCluster) serveReplica(c *fakeClusterConn, name string, args [][]byte) (resp.Value, bool) {
	primary, replica := fc.replicaOf[c.addr]
	switch name {
	case "READONLY":
		c.readOnly = true
		return resp.SimpleString("OK"), true
	case "PING":
		return resp.SimpleString("PONG"), true
	case "ROLE":
		if replica {
			host, _, _ := strings.Cut(primary, ":")
			return resp.ArrayOf(resp.BulkString("slave"), resp.BulkString(host), resp.Int(7000),
				resp.BulkString("connected"), resp.Int(1)), true
		}
		return resp.ArrayOf(resp.BulkString("master"), resp.Int(1), resp.ArrayOf()), true
	case "CONFIG":
		return resp.ArrayOf(resp.BulkString("replica-serve-stale-data"), resp.BulkString("yes")), true
	case "INFO":
		return resp.BulkString("# Server\r\nredis_version:7.0.0\r\n"), true
	}
	if !replica || len(args) < 2 {
		return resp.Value{}, false
	}
	slot := int(topo.KeySlotString(string(args[1])))
	if fc.owner[slot] == primary && c.readOnly && name == "GET" {
		return fc.apply(name, args), true
	}
	return resp.ErrorValue(fmt.Sprintf("MOVED %d %s", slot, fc.owner[slot])), true
}

// newReplicaHarness returns a harness over three primaries with one replica each, its topology
// discovered, and the replica reads of its engine under cfg.
func newReplicaHarness(t *testing.T) (*clusterHarness, *ClusterReads) {
	h := newClusterHarness(t, 3)
	for _, p := range slices.Clone(h.fc.order) {
		h.fc.addReplica(p)
	}
	h.do("SET", "warm", "1")
	cr, err := NewClusterReads(h.eng, ClusterReadConfig{Router: fsm.RouterConfig{RefreshInterval: time.Second},
		SettleWait: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cr.Close)
	return h, cr
}

// selectRead runs Select while the test pumps the loop (the engine runs in stepper mode).
func (h *clusterHarness) selectRead(cr *ClusterReads, slot int, policy fsm.ReadFrom) (ReadPick, error) {
	h.t.Helper()
	type result struct {
		p   ReadPick
		err error
	}
	done := make(chan result, 1)
	go func() {
		p, err := cr.Select(context.Background(), slot, policy)
		done <- result{p, err}
	}()
	for i := 0; i < 2000; i++ {
		h.eng.RunPending()
		select {
		case r := <-done:
			return r.p, r.err
		default:
		}
		time.Sleep(time.Millisecond)
	}
	h.t.Fatal("Select never returned")
	return ReadPick{}, nil
}

// submitRead sends cmd with SubmitRead and pumps the loop until it completes.
func (h *clusterHarness) submitRead(num uint32, args ...string) *Command {
	h.t.Helper()
	frame := resp.AppendCommand(nil, args...)
	done := make(chan struct{}, 1)
	cmd := &Command{Name: strings.ToUpper(args[0]), Frame: frame, Done: func(*Command) { done <- struct{}{} }}
	h.eng.SubmitRead(cmd, num)
	for i := 0; i < 100; i++ {
		h.eng.RunPending()
		select {
		case <-done:
			return cmd
		default:
		}
	}
	h.t.Fatalf("%v never completed", args)
	return nil
}

// TestClusterReplicaReadsLandOnReplicas: a Replica read of a slot is picked among that slot's
// shard's replicas, once they answered ROLE, and runs on the replica over a READONLY
// connection; the primaries' connections are opened without READONLY.
func TestClusterReplicaReadsLandOnReplicas(t *testing.T) {
	h, cr := newReplicaHarness(t)
	h.do("SET", "k", "v")
	slot := int(topo.KeySlotString("k"))
	owner := h.fc.owner[slot]
	p, err := h.selectRead(cr, slot, fsm.ReadReplica)
	if err != nil {
		t.Fatal(err)
	}
	h.fc.mu.Lock()
	want := h.fc.replicasOf(owner)[0].addr
	h.fc.mu.Unlock()
	if !p.Replica || p.Endpoint.String() != want {
		t.Fatalf("pick %+v, want the replica %s of %s", p, want, owner)
	}
	n := h.sentCount()
	cmd := h.submitRead(p.Node, "GET", "k")
	if replyText(cmd) != "v" {
		t.Fatalf("GET on the replica: %s", replyText(cmd))
	}
	if sent := h.sentSince(n); sent[len(sent)-1] != want+" GET k" {
		t.Fatalf("sent %q, want the GET to %s", sent, want)
	}
	// The first read on each connection repeats READONLY (see deliverRead); later ones go
	// alone.
	for range 6 {
		h.submitRead(p.Node, "GET", "k")
	}
	readOnly, gets := 0, 0
	for _, s := range h.sentSince(n) {
		switch s {
		case want + " READONLY":
			readOnly++
		case want + " GET k":
			gets++
		default:
			t.Fatalf("sent %q elsewhere", s)
		}
	}
	if gets != 7 || readOnly > h.cfg.Slots {
		t.Fatalf("%d GETs and %d READONLY for %d connections", gets, readOnly, h.cfg.Slots)
	}
	if cr.Shards() != 3 {
		t.Fatalf("%d shard routers, want 3", cr.Shards())
	}
	h.tr.mu.Lock()
	defer h.tr.mu.Unlock()
	for _, c := range h.tr.conns {
		_, replica := h.fc.replicaOf[c.addr]
		if c.opened != replica {
			t.Fatalf("connection to %s: opened with READONLY %v", c.addr, c.opened)
		}
	}
}

// TestClusterReplicaPreferredBeforeValidation: ReplicaPreferred on a fresh router whose replicas
// have not answered ROLE (their dials never end, so no validation can) takes the primary at once
// rather than wait for them.
//
// It used to be the first step of TestClusterReplicaPoliciesAndPrimary, on replicas that answer
// at once: whether their validation had ended before the selection ran depended on the
// scheduling of the selecting goroutine against the pumped loop, and under load it had (the
// replica was picked, 1 run in 300 under -race).
func TestClusterReplicaPreferredBeforeValidation(t *testing.T) {
	h, cr := newReplicaHarness(t)
	h.fc.mu.Lock()
	for r := range h.fc.replicaOf {
		h.fc.hang[r] = true
	}
	h.fc.mu.Unlock()
	slot := int(topo.KeySlotString("k"))
	owner := h.fc.owner[slot]
	p, err := h.selectRead(cr, slot, fsm.ReadReplicaPreferred)
	if err != nil || p.Replica || p.Endpoint.String() != owner {
		t.Fatalf("ReplicaPreferred before validation: %+v %v, want the primary %s", p, err, owner)
	}
	h.tr.mu.Lock()
	defer h.tr.mu.Unlock()
	dialed := 0
	for _, d := range h.tr.dials {
		if _, replica := h.fc.replicaOf[d]; replica {
			dialed++
		}
	}
	if dialed == 0 {
		t.Fatal("no replica was dialed: the router did not try to validate one")
	}
}

// TestClusterReplicaPoliciesAndPrimary: Replica takes a validated replica; PrimaryPreferred takes
// the primary; a failed replica cools down and Replica then finds no candidate, with nothing
// sent, while ReplicaPreferred falls back to the primary.
func TestClusterReplicaPoliciesAndPrimary(t *testing.T) {
	h, cr := newReplicaHarness(t)
	slot := int(topo.KeySlotString("k"))
	p, err := h.selectRead(cr, slot, fsm.ReadReplica)
	if err != nil || !p.Replica {
		t.Fatalf("Replica: %+v %v", p, err)
	}
	if p, err = h.selectRead(cr, slot, fsm.ReadPrimaryPreferred); err != nil || p.Replica {
		t.Fatalf("PrimaryPreferred: %+v %v", p, err)
	}
	rp, _ := h.selectRead(cr, slot, fsm.ReadReplica)
	cr.Failed(rp)
	n := h.sentCount()
	_, err = cr.Select(context.Background(), slot, fsm.ReadReplica)
	var rr *ReadRefusal
	if !asReadRefusal(err, &rr) || rr.Reason != fsm.NoCandidate {
		t.Fatalf("Replica after its only replica failed: %v", err)
	}
	if p, err = h.selectRead(cr, slot, fsm.ReadReplicaPreferred); err != nil || p.Replica {
		t.Fatalf("ReplicaPreferred after the replica failed: %+v %v, want the primary", p, err)
	}
	if sent := h.sentSince(n); len(sent) != 0 {
		t.Fatalf("selection sent %q", sent)
	}
}

func asReadRefusal(err error, rr **ReadRefusal) bool {
	r, ok := err.(*ReadRefusal)
	*rr = r
	return ok
}

// TestClusterReplicaMovedComesBack: a MOVED from a replica (it no longer serves the slot)
// completes the read with the MOVED reply instead of following it: the read is never sent to
// another node by the engine, and the map learns the move (a Moved event reaches the loop).
func TestClusterReplicaMovedComesBack(t *testing.T) {
	h, cr := newReplicaHarness(t)
	h.do("SET", "k", "v")
	slot := int(topo.KeySlotString("k"))
	p, err := h.selectRead(cr, slot, fsm.ReadReplica)
	if err != nil {
		t.Fatal(err)
	}
	h.fc.mu.Lock()
	h.fc.always[p.Endpoint.String()] = fmt.Sprintf("MOVED %d %s", slot, h.fc.owner[slot])
	h.fc.mu.Unlock()
	n, events := h.sentCount(), len(h.events)
	cmd := h.submitRead(p.Node, "GET", "k")
	if !cmd.Reply.IsError() || topo.ClassifyRejection(cmd.Reply) != topo.RejectionMoved {
		t.Fatalf("reply %s, want the MOVED", replyText(cmd))
	}
	if sent := h.sentSince(n); len(sent) != 2 || sent[1] != p.Endpoint.String()+" GET k" {
		t.Fatalf("sent %q, want READONLY and the one GET to the replica", sent)
	}
	moved := false
	for _, ev := range h.events[events:] {
		moved = moved || ev.Kind == fsm.Moved
	}
	if !moved {
		t.Fatal("the MOVED did not reach the machine")
	}
}

// TestClusterReplicaFailoverNewRouter: after a failover (the replica is promoted and the old
// primary becomes its replica), the next read reconciles the routers with the new map: the
// shard's router is new, and its replica is the old primary.
func TestClusterReplicaFailoverNewRouter(t *testing.T) {
	h, cr := newReplicaHarness(t)
	slot := int(topo.KeySlotString("k"))
	oldPrimary := h.fc.owner[slot]
	p, err := h.selectRead(cr, slot, fsm.ReadReplica)
	if err != nil {
		t.Fatal(err)
	}
	promoted := p.Endpoint.String()
	h.fc.mu.Lock()
	for s := range h.fc.owner {
		if h.fc.owner[s] == oldPrimary {
			h.fc.owner[s] = promoted
		}
	}
	delete(h.fc.replicaOf, promoted)
	h.fc.replicaOf[oldPrimary] = promoted
	h.fc.mu.Unlock()
	h.do("SET", "k", "v2")    // MOVED to the promoted node, and a refresh learns the new map
	for i := 0; i < 20; i++ { // the debounced refresh
		h.rt.mu.Lock()
		h.rt.now += time.Second
		h.rt.mu.Unlock()
		h.rt.fireAll()
		h.eng.RunPending()
	}
	if got := h.eng.ClusterMap(); got == nil || h.eng.ClusterMap().Owner(slot) < 0 ||
		endpointOf(got.Nodes[got.Owner(slot)].Addr).String() != promoted {
		t.Fatalf("the map did not follow the failover")
	}
	p, err = h.selectRead(cr, slot, fsm.ReadReplica)
	if err != nil || p.Endpoint.String() != oldPrimary {
		t.Fatalf("Replica after the failover: %+v %v, want the old primary %s", p, err, oldPrimary)
	}
	// Its connection was opened while it was a primary, without READONLY: the read sends it
	// first, and the demoted primary serves the read instead of answering MOVED.
	n := h.sentCount()
	if cmd := h.submitRead(p.Node, "GET", "k"); replyText(cmd) != "v2" {
		t.Fatalf("GET on the demoted primary: %s", replyText(cmd))
	}
	if sent := h.sentSince(n); len(sent) != 2 || sent[0] != oldPrimary+" READONLY" {
		t.Fatalf("sent %q, want READONLY then GET to %s", sent, oldPrimary)
	}
}

// TestSubmitNodeWithdraws: a node-pinned command that waits for its node's connection has a
// waiter its caller can withdraw: Abandon posts a Withdrew for it, and the command is never
// sent. (Before, SubmitNode routed without a waiter id, so no Withdrew reached the machine.)
func TestSubmitNodeWithdraws(t *testing.T) {
	h, _ := newReplicaHarness(t)
	// Replicas are never dialed before a read needs them: a command pinned to one waits for
	// the loop. Each pinning function gets a replica of its own.
	var nums []uint32
	for _, n := range h.eng.ClusterMap().Nodes {
		if n.Role == fsm.RoleReplica {
			nums = append(nums, n.Num)
		}
	}
	for i, pin := range []func(*Command, uint32){h.eng.SubmitNode, h.eng.SubmitRead} {
		cmd := &Command{Name: "GET", Frame: resp.AppendCommand(nil, "GET", "k"), Done: func(*Command) {}}
		pin(cmd, nums[i])
		if cmd.waiter == 0 {
			t.Fatal("the pinned command has no waiter its caller can withdraw")
		}
		w := cmd.waiter
		n, events := h.sentCount(), len(h.events)
		if a := h.eng.Abandon(cmd); a.Verdict != VerdictFailed || !a.Owned {
			t.Fatalf("abandon: %+v", a)
		}
		for i := 0; i < 10; i++ {
			h.eng.RunPending()
		}
		withdrew := false
		for _, ev := range h.events[events:] {
			withdrew = withdrew || ev.Kind == fsm.Withdrew && ev.Waiter == w
		}
		if !withdrew {
			t.Fatal("no Withdrew reached the machine")
		}
		for _, s := range h.sentSince(n) {
			if strings.HasSuffix(s, " GET k") {
				t.Fatalf("the abandoned command was sent: %q", s)
			}
		}
	}
}

// TestClusterReplicaNoneKnownAsksForARefresh: a read whose shard has no known replica gets
// ErrNoClusterReplicas, and asks the machine for a refresh (a Moved event, debounced there);
// reads within the next five seconds do not ask again, a read after them does.
func TestClusterReplicaNoneKnownAsksForARefresh(t *testing.T) {
	h := newClusterHarness(t, 3)
	cr, err := NewClusterReads(h.eng, ClusterReadConfig{Router: fsm.RouterConfig{RefreshInterval: time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	defer cr.Close()
	slot := int(topo.KeySlotString("k"))
	// Before the first topology there is no map at all: the read takes its ordinary path.
	if _, err := cr.Select(context.Background(), slot, fsm.ReadReplica); err != ErrNoClusterReplicas {
		t.Fatalf("Select before any topology: %v, want ErrNoClusterReplicas", err)
	}
	h.do("SET", "warm", "1")
	asks := func() int {
		events := len(h.events)
		if _, err := cr.Select(context.Background(), slot, fsm.ReadReplicaPreferred); err != ErrNoClusterReplicas {
			t.Fatalf("Select: %v, want ErrNoClusterReplicas", err)
		}
		h.eng.RunPending()
		n := 0
		for _, ev := range h.events[events:] {
			if ev.Kind == fsm.Moved && ev.Slot == slot {
				n++
			}
		}
		return n
	}
	if n := asks(); n != 1 {
		t.Fatalf("first read: %d refresh requests, want 1", n)
	}
	if n := asks(); n != 0 {
		t.Fatalf("second read at once: %d refresh requests, want 0", n)
	}
	h.rt.mu.Lock()
	h.rt.now += fsm.ClusterMovedDebounce
	h.rt.mu.Unlock()
	if n := asks(); n != 1 {
		t.Fatalf("a read after the debounce: %d refresh requests, want 1", n)
	}
}

// TestClusterReplicaCloseEndsTheWait: a Replica read waiting for a new router's first
// validations (its replicas cannot be reached) returns as soon as the reads close, not after
// SettleWait.
func TestClusterReplicaCloseEndsTheWait(t *testing.T) {
	h, cr := newReplicaHarness(t)
	h.fc.mu.Lock()
	for r := range h.fc.replicaOf {
		h.fc.hang[r] = true // ROLE never answers: the first validations never end
	}
	h.fc.mu.Unlock()
	done := make(chan error, 1)
	go func() {
		_, err := cr.Select(context.Background(), int(topo.KeySlotString("k")), fsm.ReadReplica)
		done <- err
	}()
	for i := 0; i < 20; i++ {
		h.eng.RunPending()
		time.Sleep(time.Millisecond)
	}
	select {
	case err := <-done:
		t.Fatalf("Select returned before Close: %v", err)
	default:
	}
	cr.Close()
	select {
	case err := <-done:
		var rr *ReadRefusal
		if !asReadRefusal(err, &rr) {
			t.Fatalf("Select after Close: %v, want a *ReadRefusal", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Select still waits after Close")
	}
}
