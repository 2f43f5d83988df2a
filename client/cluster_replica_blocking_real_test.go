package client_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/respire-go/respire/client"
	"github.com/respire-go/respire/netio/redistest"
)

// testClusterReplicaBlocking: under Replica, XREAD BLOCK (typed and through Do) of a slot runs
// on a dedicated connection of that slot's replica, checked with ROLE first, never on the
// primary; a read blocked on the replica wakes up with the primary's write; a blocking read has
// no response timeout (CommandTimeout is shorter than its block); cancelling a read blocked
// indefinitely returns the context's error and discards the replica's connection (the server
// unblocks it); the Primary view keeps blocking reads on the primary.
func testClusterReplicaBlocking(t *testing.T, rc *redistest.Cluster) {
	ctx := ctxT(t)
	keys, slot := shardKeys("blk", 2)
	stream, probe := keys[0], keys[1]
	p := rc.PrimaryOf(t, slot)
	r := replicaOfPrimary(t, rc, p)
	c := connectCluster(t, rc, client.Options{ReadFrom: client.Replica, CommandTimeout: 300 * time.Millisecond,
		ClusterTopologyRefreshInterval: time.Second})
	if _, err := c.XAdd(ctx, stream, client.XAddOptions{}, "f", "1"); err != nil {
		t.Fatal(err)
	}
	if err := c.Set(ctx, probe, "1"); err != nil {
		t.Fatal(err)
	}
	readBack(t, c, probe, "1") // the replica validated, and has the entry (replication keeps the order)

	onPrimary, onReplica, roles := xreadCalls(t, p), xreadCalls(t, r), roleCalls(t, r)
	args := client.XReadArgs{Streams: []client.XStreamOffset{{Key: stream, ID: "0"}}, Block: time.Second}
	for range 4 {
		got, err := c.XReadBlock(ctx, args)
		if err != nil || len(got) != 1 || len(got[0].Entries) != 1 {
			t.Fatalf("XReadBlock: %v %v", got, err)
		}
	}
	if _, err := c.Do(ctx, "XREAD", "BLOCK", "1000", "STREAMS", stream, "0"); err != nil {
		t.Fatalf("Do XREAD BLOCK: %v", err)
	}
	if n := xreadCalls(t, r) - onReplica; n != 5 {
		t.Fatalf("the replica ran %d of 5 blocking reads", n)
	}
	if n := xreadCalls(t, p) - onPrimary; n != 0 {
		t.Fatalf("%d blocking Replica reads reached the primary", n)
	}
	if n := roleCalls(t, r) - roles; n < 5 {
		t.Fatalf("%d ROLE checks on the replica for 5 rented connections", n)
	}

	// No response timeout: a block longer than CommandTimeout ends with the block, empty.
	got, err := c.XReadBlock(ctx, client.XReadArgs{Streams: []client.XStreamOffset{{Key: stream, ID: "$"}}, Block: time.Second})
	if err != nil || got != nil {
		t.Fatalf("a 1 s block under a 300 ms CommandTimeout: %v %v", got, err)
	}

	// A read blocked on the replica wakes up with the primary's write.
	woke := make(chan error, 1)
	go func() {
		got, err := c.XReadBlock(ctx, client.XReadArgs{Streams: []client.XStreamOffset{{Key: stream, ID: "$"}}, Block: 10 * time.Second})
		if err == nil && (len(got) != 1 || len(got[0].Entries) != 1) {
			err = errors.New("unexpected reply")
		}
		woke <- err
	}()
	blocked := func(n string) func() bool {
		return func() bool { return strings.Contains(r.Do(t, "INFO", "clients"), "blocked_clients:"+n+"\r") }
	}
	waitReplicaFor(t, 5*time.Second, "the read blocked on the replica", blocked("1"))
	if _, err := c.XAdd(ctx, stream, client.XAddOptions{}, "f", "2"); err != nil {
		t.Fatal(err)
	}
	if err := <-woke; err != nil {
		t.Fatalf("the blocked replica read: %v", err)
	}

	// Cancelling a read blocked for ever: the context's error, and the connection is discarded.
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := c.XReadBlock(cctx, client.XReadArgs{Streams: []client.XStreamOffset{{Key: stream, ID: "$"}}})
		done <- err
	}()
	waitReplicaFor(t, 5*time.Second, "the indefinite read blocked on the replica", blocked("1"))
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("a cancelled blocked read: %v, want the context's error", err)
	}
	waitReplicaFor(t, 5*time.Second, "the cancelled read's connection closed", blocked("0"))

	// The Primary view keeps blocking reads on the primary.
	onPrimary = xreadCalls(t, p)
	if _, err := c.WithReadFrom(client.Primary).XReadBlock(ctx, args); err != nil {
		t.Fatal(err)
	}
	if n := xreadCalls(t, p) - onPrimary; n != 1 {
		t.Fatalf("the primary ran %d of 1 Primary blocking read", n)
	}
}
