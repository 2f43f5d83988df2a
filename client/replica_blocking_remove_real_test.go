package client_test

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/respire-go/respire/client"
	"github.com/respire-go/respire/netio/redistest"
)

// blockedClients returns how many clients a server holds blocked (INFO clients).
func blockedClients(t *testing.T, s *redistest.Server) int {
	t.Helper()
	for _, line := range strings.Split(s.Do(t, "INFO", "clients"), "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "blocked_clients:"); ok {
			n, err := strconv.Atoi(rest)
			if err != nil {
				t.Fatalf("INFO clients: %q", line)
			}
			return n
		}
	}
	t.Fatal("INFO clients has no blocked_clients")
	return 0
}

// TestSentinelReplicaRemovalDrainsBlockingReal: a replica that leaves a Sentinel client's
// replica set (the Sentinels flag it down) while blocking reads run on its dedicated
// connections drains them: a read blocked there past the retired generation's grace still
// returns the entry that the primary's write replicates, on that connection. New blocking reads
// go to the other replica only. Closing the client aborts a read still blocked on the removed
// replica promptly, with an error, and leaves no goroutine behind.
//
// The replica "leaves" by refusing PING (ACL SETUSER default -ping): the Sentinels stop seeing
// valid replies and flag it s_down, while it keeps replicating and serving the blocked reads.
func TestSentinelReplicaRemovalDrainsBlockingReal(t *testing.T) {
	g := redistest.StartSentinelGroup(t, redistest.SentinelConfig{DownAfter: 500 * time.Millisecond, Replicas: 2})
	replicas := g.Nodes()[1:]
	checkNoLeaks(t)
	ctx := ctxT(t)
	// CommandTimeout 300 ms: a retired replica generation drains for 1.3 s.
	c, err := client.Connect(ctx, client.Options{
		Endpoints:              sentinelEndpoints(t, g),
		SentinelPrimaryName:    g.MasterName(),
		ReadFrom:               client.Replica,
		ReplicaRefreshInterval: replicaTestRefresh,
		ConnectTimeout:         time.Second,
		CommandTimeout:         300 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	defer func() {
		if !closed {
			c.Close()
		}
	}()
	if _, err := c.XAdd(ctx, "s", client.XAddOptions{}, "f", "1"); err != nil {
		t.Fatal(err)
	}
	for _, r := range replicas {
		waitReplicaFor(t, 5*time.Second, "the entry replicated", func() bool { return r.Do(t, "XLEN", "s") == "1" })
	}
	eligible := func(want ...*redistest.Server) func() bool {
		return func() bool {
			_, _, err := c.Get(ctx, "k")
			s := c.ReadRoutingSnapshot()
			if err != nil || s == nil || len(s.EligibleEndpoints) != len(want) {
				return false
			}
			for _, w := range want {
				found := false
				for _, e := range s.EligibleEndpoints {
					found = found || e == endpointOf(w)
				}
				if !found {
					return false
				}
			}
			return true
		}
	}
	waitReplicaFor(t, 10*time.Second, "both replicas validated", eligible(replicas...))

	blocked := func() [2]int { return [2]int{blockedClients(t, replicas[0]), blockedClients(t, replicas[1])} }
	waitBlocked := func(total int) [2]int {
		t.Helper()
		var n [2]int
		waitReplicaFor(t, 5*time.Second, "the read blocked on a replica", func() bool {
			n = blocked()
			return n[0]+n[1] == total
		})
		return n
	}

	// The read to drain: blocked on stream "s" for 20 s (past the grace), on replica x.
	drained := make(chan error, 1)
	go func() {
		got, err := c.XReadBlock(ctx, client.XReadArgs{Streams: []client.XStreamOffset{{Key: "s", ID: "$"}}, Block: 20 * time.Second})
		if err == nil && (len(got) != 1 || len(got[0].Entries) != 1 || got[0].Entries[0].Fields[1] != "2") {
			err = errors.New("unexpected reply")
		}
		drained <- err
	}()
	n := waitBlocked(1)
	x, y := 0, 1
	if n[1] == 1 {
		x, y = 1, 0
	}
	// The reads for Close: blocked for ever on stream "t", until one of them runs on x too.
	var aborted []chan error
	for total := 2; blocked()[x] < 2; total++ {
		if total > 10 {
			t.Fatal("no second blocking read landed on the replica to remove")
		}
		ch := make(chan error, 1)
		aborted = append(aborted, ch)
		go func() {
			_, err := c.XReadBlock(ctx, client.XReadArgs{Streams: []client.XStreamOffset{{Key: "t", ID: "$"}}})
			ch <- err
		}()
		waitBlocked(total)
	}

	// Remove x: the Sentinels flag it down and the client's set keeps only y.
	replicas[x].Do(t, "ACL", "SETUSER", "default", "-ping")
	waitReplicaFor(t, 15*time.Second, "the replica left the set", eligible(replicas[y]))
	// Past the retired generation's grace (1.3 s), the reads on x still run.
	time.Sleep(2500 * time.Millisecond)
	select {
	case err := <-drained:
		t.Fatalf("removing the replica ended its blocked read: %v", err)
	default:
	}
	if got := blockedClients(t, replicas[x]); got < 2 {
		t.Fatalf("the removed replica holds %d blocked reads, want 2 still running", got)
	}

	// The primary's write wakes the drained read, on the removed replica's connection.
	onX := xreadCalls(t, replicas[x])
	if _, err := c.XAdd(ctx, "s", client.XAddOptions{}, "f", "2"); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-drained:
		if err != nil {
			t.Fatalf("the read drained on the removed replica: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the read on the removed replica did not wake up")
	}

	// New blocking reads go to y only.
	onY := xreadCalls(t, replicas[y])
	for range 4 {
		got, err := c.XReadBlock(ctx, client.XReadArgs{Streams: []client.XStreamOffset{{Key: "s", ID: "0"}}, Block: time.Second})
		if err != nil || len(got) != 1 || len(got[0].Entries) != 2 {
			t.Fatalf("XReadBlock after the removal: %v %v", got, err)
		}
	}
	if n := xreadCalls(t, replicas[y]) - onY; n != 4 {
		t.Fatalf("the remaining replica ran %d of 4 blocking reads", n)
	}
	if n := xreadCalls(t, replicas[x]) - onX; n != 0 {
		t.Fatalf("the removed replica ran %d new blocking reads", n)
	}
	if n := blockedClients(t, replicas[x]); n != 1 {
		t.Fatalf("the removed replica holds %d blocked reads, want the one for Close", n)
	}

	// Close aborts the reads still blocked (on x and on y) promptly, with an error.
	closeDone := make(chan struct{})
	go func() {
		c.Close()
		close(closeDone)
	}()
	closed = true
	select {
	case <-closeDone:
	case <-time.After(5 * time.Second):
		t.Fatal("Close hung with blocking reads running")
	}
	for _, ch := range aborted {
		select {
		case err := <-ch:
			if err == nil {
				t.Fatal("a read blocked for ever returned no error at Close")
			}
		case <-time.After(5 * time.Second):
			t.Fatal("a blocked read outlived Close")
		}
	}
	waitReplicaFor(t, 5*time.Second, "the removed replica saw its connection close", func() bool {
		return blockedClients(t, replicas[x]) == 0
	})
}
