package client_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/respire-go/respire/client"
	"github.com/respire-go/respire/netio/redistest"
)

// xreadCalls returns how many XREAD commands a server executed (INFO commandstats).
func xreadCalls(t *testing.T, s *redistest.Server) int {
	t.Helper()
	for _, line := range strings.Split(s.Do(t, "INFO", "commandstats"), "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_xread:calls="); ok {
			n, _ := strconv.Atoi(rest[:strings.IndexByte(rest, ',')])
			return n
		}
	}
	return 0
}

// roleCalls returns how many ROLE commands a server executed.
func roleCalls(t *testing.T, s *redistest.Server) int {
	t.Helper()
	for _, line := range strings.Split(s.Do(t, "INFO", "commandstats"), "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_role:calls="); ok {
			n, _ := strconv.Atoi(rest[:strings.IndexByte(rest, ',')])
			return n
		}
	}
	return 0
}

// TestReplicaBlockingReadsReal: under Replica, XREAD BLOCK (typed and through Do) runs on a
// dedicated connection of a replica, never the primary's; a read blocked on a replica wakes up
// when the primary's write replicates. A promoted replica's connection fails its ROLE check, so
// the read selects the other replica with nothing sent. Cancelling a blocked replica read
// returns the context's error. Under the Primary view, XREAD BLOCK stays on the primary.
func TestReplicaBlockingReadsReal(t *testing.T) {
	primary, replicas := startReplicaSet(t)
	c := replicaClient(t, primary, replicas, client.Replica)
	ctx := ctxT(t)
	if _, err := c.XAdd(ctx, "s", client.XAddOptions{}, "f", "1"); err != nil {
		t.Fatal(err)
	}
	for _, r := range replicas {
		waitReplicaFor(t, 5*time.Second, "the entry replicated", func() bool { return r.Do(t, "XLEN", "s") == "1" })
	}
	waitReplicaFor(t, 5*time.Second, "both replicas validated", func() bool {
		_, _, err := c.Get(ctx, "k")
		s := c.ReadRoutingSnapshot()
		return err == nil && s != nil && len(s.EligibleEndpoints) == 2
	})

	base := xreadCalls(t, primary)
	onReplicas := func() int { return xreadCalls(t, replicas[0]) + xreadCalls(t, replicas[1]) }
	before := onReplicas()
	args := client.XReadArgs{Streams: []client.XStreamOffset{{Key: "s", ID: "0"}}, Block: time.Second}
	for range 4 {
		got, err := c.XReadBlock(ctx, args)
		if err != nil || len(got) != 1 || len(got[0].Entries) != 1 {
			t.Fatalf("XReadBlock: %v %v", got, err)
		}
	}
	if _, err := c.Do(ctx, "XREAD", "BLOCK", "1000", "STREAMS", "s", "0"); err != nil {
		t.Fatalf("Do XREAD BLOCK: %v", err)
	}
	if n := onReplicas() - before; n != 5 {
		t.Fatalf("the replicas ran %d of 5 blocking reads", n)
	}
	if n := xreadCalls(t, primary) - base; n != 0 {
		t.Fatalf("%d blocking Replica reads reached the primary", n)
	}

	// A read blocked on a replica wakes up with the primary's write.
	woke := make(chan error, 1)
	go func() {
		got, err := c.XReadBlock(ctx, client.XReadArgs{Streams: []client.XStreamOffset{{Key: "s", ID: "$"}}, Block: 10 * time.Second})
		if err == nil && (len(got) != 1 || len(got[0].Entries) != 1 || got[0].Entries[0].ID == "") {
			err = errors.New("unexpected reply")
		}
		woke <- err
	}()
	waitReplicaFor(t, 5*time.Second, "the read blocked on a replica", func() bool {
		return strings.Contains(replicas[0].Do(t, "INFO", "clients"), "blocked_clients:1") ||
			strings.Contains(replicas[1].Do(t, "INFO", "clients"), "blocked_clients:1")
	})
	if _, err := c.XAdd(ctx, "s", client.XAddOptions{}, "f", "2"); err != nil {
		t.Fatal(err)
	}
	if err := <-woke; err != nil {
		t.Fatalf("the blocked replica read: %v", err)
	}

	// Cancelling a blocked replica read returns the context's error.
	cctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	var err error
	_, err = c.XReadBlock(cctx, client.XReadArgs{Streams: []client.XStreamOffset{{Key: "s", ID: "$"}}})
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a cancelled blocked read: %v, want the context's error", err)
	}

	// A promoted replica fails the ROLE check of its connection: every read goes to the other.
	// The second client validates once an hour, so its router still counts the promoted node as
	// a replica: the check on the rented connection is what keeps the reads off it.
	slow, err := client.Connect(ctx, client.Options{
		Endpoints:              []client.Endpoint{endpointOf(primary)},
		ReplicaEndpoints:       []client.Endpoint{endpointOf(replicas[0]), endpointOf(replicas[1])},
		ReadFrom:               client.Replica,
		ReplicaRefreshInterval: time.Hour,
		ConnectTimeout:         time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	waitReplicaFor(t, 5*time.Second, "both replicas validated", func() bool {
		_, _, err := slow.Get(ctx, "k")
		s := slow.ReadRoutingSnapshot()
		return err == nil && s != nil && len(s.EligibleEndpoints) == 2
	})
	replicas[0].Do(t, "REPLICAOF", "NO", "ONE")
	before0, before1 := xreadCalls(t, replicas[0]), xreadCalls(t, replicas[1])
	roles0 := roleCalls(t, replicas[0])
	for range 6 {
		if _, err := slow.XReadBlock(ctx, args); err != nil {
			t.Fatalf("XReadBlock with a promoted replica: %v", err)
		}
	}
	if n := xreadCalls(t, replicas[0]) - before0; n != 0 {
		t.Errorf("the promoted replica ran %d blocking Replica reads", n)
	}
	if n := xreadCalls(t, replicas[1]) - before1; n != 6 {
		t.Errorf("the other replica ran %d of 6 blocking reads", n)
	}
	if roleCalls(t, replicas[0]) == roles0 {
		t.Error("no blocking read met the promoted replica's ROLE check: the test proved nothing")
	}

	// The Primary view keeps blocking reads on the primary.
	base = xreadCalls(t, primary)
	if _, err := c.WithReadFrom(client.Primary).XReadBlock(ctx, args); err != nil {
		t.Fatal(err)
	}
	if n := xreadCalls(t, primary) - base; n != 1 {
		t.Fatalf("the primary ran %d of 1 Primary blocking read", n)
	}
}
