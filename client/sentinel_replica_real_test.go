package client_test

import (
	"slices"
	"testing"
	"time"

	"github.com/respire-go/respire/client"
	"github.com/respire-go/respire/netio/redistest"
)

// TestSentinelReplicaReadsReal: a Sentinel client under Replica reads from the replicas that
// SENTINEL REPLICAS names, in turn, and never from the primary. A killed replica's reads go to
// the other once the Sentinels flag it down, and it takes reads again when it is back. After a
// failover the set follows the Sentinels: the promoted replica stops taking reads and the old
// primary, now a replica, takes them.
func TestSentinelReplicaReadsReal(t *testing.T) {
	g := redistest.StartSentinelGroup(t, redistest.SentinelConfig{DownAfter: 500 * time.Millisecond, Replicas: 2})
	nodes := g.Nodes()
	primary, replicas := nodes[0], nodes[1:]
	c, err := client.Connect(ctxT(t), client.Options{
		Endpoints:              sentinelEndpoints(t, g),
		SentinelPrimaryName:    g.MasterName(),
		ReadFrom:               client.Replica,
		ReplicaRefreshInterval: replicaTestRefresh,
		ConnectTimeout:         time.Second,
		CommandTimeout:         2 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := ctxT(t)
	if err := c.Set(ctx, "k", "v"); err != nil {
		t.Fatal(err)
	}
	eligible := func(want ...*redistest.Server) func() bool {
		var eps []client.Endpoint
		for _, s := range want {
			eps = append(eps, endpointOf(s))
		}
		slices.SortFunc(eps, client.CompareEndpointsForTest)
		return func() bool {
			_, _, err := c.Get(ctx, "k")
			s := c.ReadRoutingSnapshot()
			if err != nil || s == nil {
				return false
			}
			got := slices.Clone(s.EligibleEndpoints)
			slices.SortFunc(got, client.CompareEndpointsForTest)
			return slices.Equal(got, eps)
		}
	}

	// Reads spread over both replicas and never reach the primary.
	waitReplicaFor(t, 10*time.Second, "both replicas take reads", eligible(replicas...))
	base := []int{getCalls(t, primary), getCalls(t, replicas[0]), getCalls(t, replicas[1])}
	for range 40 {
		v, ok, err := c.Get(ctx, "k")
		if err != nil || !ok || v != "v" {
			t.Fatalf("Get: %q %v %v", v, ok, err)
		}
	}
	if n := getCalls(t, primary) - base[0]; n != 0 {
		t.Fatalf("%d Replica reads reached the primary", n)
	}
	for i, r := range replicas {
		if n := getCalls(t, r) - base[i+1]; n < 10 {
			t.Errorf("replica %s took %d of 40 reads, want them shared", r.Addr(), n)
		}
	}

	// A killed replica: once the Sentinels see it down, the other takes every read.
	replicas[0].Kill()
	waitReplicaFor(t, 15*time.Second, "the killed replica left the set", eligible(replicas[1]))
	before := getCalls(t, replicas[1])
	for range 10 {
		if _, _, err := c.Get(ctx, "k"); err != nil {
			t.Fatalf("Get with one replica down: %v", err)
		}
	}
	if n := getCalls(t, replicas[1]) - before; n != 10 {
		t.Fatalf("the remaining replica took %d of 10 reads", n)
	}
	replicas[0].Restart(t)
	waitReplicaFor(t, 20*time.Second, "the restarted replica is back", eligible(replicas...))

	// A failover: the promoted replica leaves the set and the old primary joins it.
	if got := g.Sentinels()[0].Do(t, "SENTINEL", "FAILOVER", g.MasterName()); got != "OK" {
		t.Fatalf("SENTINEL FAILOVER: %s", got)
	}
	promoted := g.WaitForFailover(t, primary.Addr())
	var others []*redistest.Server
	for _, n := range nodes {
		if n != promoted {
			others = append(others, n)
		}
	}
	waitReplicaFor(t, 20*time.Second, "the set follows the failover", eligible(others...))
	base = []int{getCalls(t, promoted), getCalls(t, primary)}
	waitReplicaFor(t, 10*time.Second, "the old primary, now a replica, takes reads", func() bool {
		if _, _, err := c.Get(ctx, "k"); err != nil {
			t.Fatalf("Get after the failover: %v", err)
		}
		return getCalls(t, primary) > base[1]
	})
	if n := getCalls(t, promoted) - base[0]; n != 0 {
		t.Errorf("%d Replica reads reached the promoted primary %s", n, promoted.Addr())
	}
}

// TestSentinelReplicaViewReal: a Sentinel client whose default policy is Primary reads from the
// primary until a view asks for replicas; that view's first read starts the Sentinel source,
// which skips the first Sentinel when it is down. With every Sentinel down, the replicas it
// knows keep taking reads.
func TestSentinelReplicaViewReal(t *testing.T) {
	g := redistest.StartSentinelGroup(t, redistest.SentinelConfig{})
	nodes := g.Nodes()
	c, err := client.Connect(ctxT(t), client.Options{
		Endpoints:              sentinelEndpoints(t, g),
		SentinelPrimaryName:    g.MasterName(),
		ReplicaRefreshInterval: replicaTestRefresh,
		ConnectTimeout:         time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := ctxT(t)
	base := getCalls(t, nodes[0])
	for range 5 {
		if _, _, err := c.Get(ctx, "k"); err != nil {
			t.Fatal(err)
		}
	}
	if n := getCalls(t, nodes[0]) - base; n != 5 {
		t.Fatalf("the primary took %d of 5 Primary reads", n)
	}
	if s := c.ReadRoutingSnapshot(); s != nil {
		t.Fatalf("a snapshot before any replica read: %+v", s)
	}
	sentinels := g.Sentinels()
	sentinels[0].Kill()
	view := c.WithReadFrom(client.Replica)
	waitReplicaFor(t, 10*time.Second, "the view reads the replica", func() bool {
		before := getCalls(t, nodes[1])
		_, _, err := view.Get(ctx, "k")
		return err == nil && getCalls(t, nodes[1]) == before+1
	})
	for _, s := range sentinels[1:] {
		s.Kill()
	}
	before := getCalls(t, nodes[1])
	// Two refresh intervals: the source asks the dead Sentinels at least once meanwhile.
	for end := time.Now().Add(2 * replicaTestRefresh); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if _, _, err := view.Get(ctx, "k"); err != nil {
			t.Fatalf("a replica read with every Sentinel down: %v", err)
		}
	}
	if getCalls(t, nodes[1]) == before {
		t.Fatal("no read reached the replica with every Sentinel down")
	}
	if n := getCalls(t, nodes[0]) - base; n != 5 {
		t.Fatalf("the primary took %d reads, want only the 5 Primary ones", n)
	}
}

// TestSentinelReplicaLearnedSentinelsReal: a client configured with one Sentinel learns the
// others (SENTINEL SENTINELS) and asks them for the replicas too: with the configured Sentinel
// dead, a killed replica still leaves the replica set once the other Sentinels see it down.
func TestSentinelReplicaLearnedSentinelsReal(t *testing.T) {
	g := redistest.StartSentinelGroup(t, redistest.SentinelConfig{DownAfter: 500 * time.Millisecond, Replicas: 2})
	replicas := g.Nodes()[1:]
	c, err := client.Connect(ctxT(t), client.Options{
		Endpoints:              sentinelEndpoints(t, g)[:1],
		SentinelPrimaryName:    g.MasterName(),
		ReadFrom:               client.Replica,
		ReplicaRefreshInterval: replicaTestRefresh,
		ConnectTimeout:         time.Second,
		CommandTimeout:         2 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := ctxT(t)
	set := func(want ...*redistest.Server) func() bool {
		var eps []client.Endpoint
		for _, s := range want {
			eps = append(eps, endpointOf(s))
		}
		slices.SortFunc(eps, client.CompareEndpointsForTest)
		return func() bool {
			_, _, _ = c.Get(ctx, "k") // the first read starts the source
			return slices.Equal(client.ReplicaSet(c), eps)
		}
	}
	waitReplicaFor(t, 10*time.Second, "both replicas in the set", set(replicas...))
	g.Sentinels()[0].Kill()
	replicas[0].Kill()
	waitReplicaFor(t, 20*time.Second, "the killed replica left the set, reported by a learned Sentinel", set(replicas[1]))
}
