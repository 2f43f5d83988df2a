package client_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/respire-go/respire/client"
	"github.com/respire-go/respire/netio/redistest"
	"github.com/respire-go/respire/netio/topo"
)

// Cluster replica reads on a real 3+3 Cluster (issue 17): reads land on the replicas (counted by
// each node's INFO commandstats, which the client's own traffic cannot fake), writes on the
// primaries; a killed replica moves its shard's reads without an error storm; after a manual
// failover, writes follow the new primary and reads the demoted one.

// calls returns how many times srv executed the command cmd (lower case) since its last
// CONFIG RESETSTAT.
func calls(t *testing.T, srv *redistest.Server, cmd string) int {
	t.Helper()
	for _, line := range strings.Split(srv.Do(t, "INFO", "commandstats"), "\n") {
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_"+cmd+":calls=")
		if !ok {
			continue
		}
		n, _ := strconv.Atoi(rest[:strings.IndexByte(rest, ',')])
		return n
	}
	return 0
}

// replicaOfPrimary returns the running replica whose primary is p.
func replicaOfPrimary(t *testing.T, rc *redistest.Cluster, p *redistest.Server) *redistest.Server {
	t.Helper()
	for _, r := range rc.Replicas(t) {
		if strings.Contains(r.Do(t, "INFO", "replication"), "master_port:"+strconv.Itoa(p.Port())+"\r") {
			return r
		}
	}
	t.Fatalf("no replica of %s", p.Addr())
	return nil
}

// shardKeys returns n keys of the slot of tag, and that slot.
func shardKeys(tag string, n int) ([]string, int) {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("{%s}:%d", tag, i)
	}
	return keys, int(topo.KeySlotString(keys[0]))
}

func resetStats(t *testing.T, rc *redistest.Cluster) {
	t.Helper()
	for _, n := range rc.Nodes() {
		if n.Running() {
			n.Do(t, "CONFIG", "RESETSTAT")
		}
	}
}

// readBack reads key through r until it returns want, for at most 30 seconds: replication is
// asynchronous, and a fresh Cluster leaves its replicas out of CLUSTER SLOTS until gossip
// reports their replication offsets (about ten seconds), so the client learns them at a later
// refresh.
func readBack(t *testing.T, r interface {
	Get(context.Context, string) (string, bool, error)
}, key, want string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		v, _, err := r.Get(context.Background(), key)
		if err == nil && v == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET %s: %q %v, want %q", key, v, err, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestClusterReplicaReal(t *testing.T) {
	rc := redistest.StartCluster(t, redistest.ClusterConfig{})
	for _, sub := range []struct {
		name string
		run  func(*testing.T, *redistest.Cluster)
	}{
		{"ReadsLandOnReplicas", testClusterReplicaReads},
		{"Hedged", testClusterReplicaHedged},     // cluster_replica_hedge_real_test.go
		{"Blocking", testClusterReplicaBlocking}, // cluster_replica_blocking_real_test.go
		{"ReplicaKill", testClusterReplicaKill},
		{"Failover", testClusterReplicaFailover},
	} {
		if !t.Run(sub.name, func(t *testing.T) { sub.run(t, rc) }) {
			return
		}
	}
}

// testClusterReplicaReads: under Replica, every GET runs on the replica of its key's shard and
// none on a primary; SETs run on the primaries; a Primary view reads the primary, and a
// Replica view of a Primary client reads the replica.
func testClusterReplicaReads(t *testing.T, rc *redistest.Cluster) {
	ctx := context.Background()
	c := connectCluster(t, rc, client.Options{ReadFrom: client.Replica, ClusterTopologyRefreshInterval: time.Second})
	var keys []string
	for i := range 30 {
		keys = append(keys, fmt.Sprintf("rr:%d", i))
	}
	for _, k := range keys {
		if err := c.Set(ctx, k, "v-"+k); err != nil {
			t.Fatal(err)
		}
	}
	for _, k := range keys {
		readBack(t, c, k, "v-"+k) // replicated, and every shard's router validated
	}
	resetStats(t, rc)
	for _, k := range keys {
		if v, ok, err := c.Get(ctx, k); err != nil || !ok || v != "v-"+k {
			t.Fatalf("GET %s: %q %v %v", k, v, ok, err)
		}
		if err := c.Set(ctx, k, "w-"+k); err != nil {
			t.Fatal(err)
		}
	}
	primaryGets, replicaGets, primarySets, replicaShards := 0, 0, 0, 0
	for _, p := range rc.Primaries(t) {
		primaryGets += calls(t, p, "get")
		primarySets += calls(t, p, "set")
	}
	for _, r := range rc.Replicas(t) {
		n := calls(t, r, "get")
		replicaGets += n
		if n > 0 {
			replicaShards++
		}
	}
	if primaryGets != 0 || replicaGets != len(keys) || primarySets != len(keys) || replicaShards != 3 {
		t.Fatalf("GET: %d on primaries, %d on replicas (%d shards); SET: %d on primaries; want 0, %d (3), %d",
			primaryGets, replicaGets, replicaShards, primarySets, len(keys), len(keys))
	}

	// Per-view policies, both ways.
	key := keys[0]
	slot := int(topo.KeySlotString(key))
	p := rc.PrimaryOf(t, slot)
	r := replicaOfPrimary(t, rc, p)
	before := calls(t, p, "get")
	if _, _, err := c.WithReadFrom(client.Primary).Get(ctx, key); err != nil {
		t.Fatal(err)
	}
	if got := calls(t, p, "get"); got != before+1 {
		t.Fatalf("a Primary view's GET: %d GETs on the primary, want %d", got, before+1)
	}
	plain := connectCluster(t, rc, client.Options{ClusterTopologyRefreshInterval: time.Second})
	before = calls(t, r, "get")
	readBack(t, plain.WithKeyPrefix("").WithReadFrom(client.Replica), key, "w-"+key)
	if got := calls(t, r, "get"); got <= before {
		t.Fatalf("a Replica view of a Primary client: no GET on the replica %s", r.Addr())
	}
	// A cursor stays on the primaries, and a write through a Replica view runs on the primary.
	if err := plain.WithReadFrom(client.Replica).Set(ctx, key, "x"); err != nil {
		t.Fatal(err)
	}
	if got := calls(t, r, "set"); got > calls(t, p, "set") {
		t.Fatalf("SET through a Replica view: %d on the replica, %d on the primary", got, calls(t, p, "set"))
	}
}

// testClusterReplicaKill: kill -9 of a replica while readers read its shard under
// ReplicaPreferred: reads move to the primary; only reads in flight on the killed replica may
// fail (never retried), and every read after the first second succeeds.
func testClusterReplicaKill(t *testing.T, rc *redistest.Cluster) {
	ctx := context.Background()
	c := connectCluster(t, rc, client.Options{ReadFrom: client.ReplicaPreferred, ReplicaRefreshInterval: 200 * time.Millisecond,
		ClusterTopologyRefreshInterval: time.Second})
	keys, slot := shardKeys("kill", 16)
	for _, k := range keys {
		if err := c.Set(ctx, k, k); err != nil {
			t.Fatal(err)
		}
	}
	for _, k := range keys {
		readBack(t, c, k, k)
	}
	p := rc.PrimaryOf(t, slot)
	victim := replicaOfPrimary(t, rc, p)
	if calls(t, victim, "get") == 0 {
		t.Fatalf("no read reached the replica %s before the kill", victim.Addr())
	}
	var (
		stop              atomic.Bool
		reads, failed     atomic.Int64
		lateFailures      atomic.Int64
		killedAt          atomic.Int64
		wg                sync.WaitGroup
		firstErr, lateErr atomic.Value
	)
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; !stop.Load(); i++ {
				k := keys[i%len(keys)]
				rctx, cancel := context.WithTimeout(ctx, 3*time.Second)
				v, _, err := c.Get(rctx, k)
				cancel()
				reads.Add(1)
				if err == nil && v != k {
					err = fmt.Errorf("GET %s: %q", k, v)
				}
				if err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err)
					if at := killedAt.Load(); at != 0 && time.Since(time.Unix(0, at)) > time.Second {
						lateFailures.Add(1)
						lateErr.CompareAndSwap(nil, err)
					}
				}
			}
		}()
	}
	time.Sleep(300 * time.Millisecond)
	killedAt.Store(time.Now().UnixNano())
	idx := rc.Index(victim)
	victim.Kill()
	time.Sleep(2 * time.Second)
	afterKill := calls(t, p, "get")
	time.Sleep(500 * time.Millisecond)
	stop.Store(true)
	wg.Wait()
	if calls(t, p, "get") <= afterKill {
		t.Fatalf("no read moved to the primary %s after the replica died", p.Addr())
	}
	if lateFailures.Load() > 0 {
		t.Fatalf("%d reads failed more than a second after the kill: %v", lateFailures.Load(), lateErr.Load())
	}
	if f := failed.Load(); f > 8 {
		t.Fatalf("%d of %d reads failed: an error storm (first: %v)", f, reads.Load(), firstErr.Load())
	}
	if e, ok := firstErr.Load().(error); ok && !isUnknownOrConn(e) && !errors.Is(e, context.DeadlineExceeded) {
		t.Fatalf("a read failed with %v, want an unknown outcome or a connection error", e)
	}
	t.Logf("%d reads, %d failed around the kill", reads.Load(), failed.Load())
	rc.Restart(t, idx)
	rc.WaitOK(t)
}

// testClusterReplicaFailover: CLUSTER FAILOVER on the replica of a shard while a client writes
// and reads it under ReplicaPreferred: writes follow the new primary, and reads reach the
// demoted primary (whose connections were opened without READONLY) once the client has the new
// map.
func testClusterReplicaFailover(t *testing.T, rc *redistest.Cluster) {
	ctx := context.Background()
	c := connectCluster(t, rc, client.Options{ReadFrom: client.ReplicaPreferred, ReplicaRefreshInterval: 200 * time.Millisecond,
		ClusterTopologyRefreshInterval: time.Second})
	keys, slot := shardKeys("fo", 8)
	for _, k := range keys {
		if err := c.Set(ctx, k, "1"); err != nil {
			t.Fatal(err)
		}
	}
	for _, k := range keys {
		readBack(t, c, k, "1")
	}
	oldPrimary := rc.PrimaryOf(t, slot)
	promoted := replicaOfPrimary(t, rc, oldPrimary)
	rc.Failover(t, promoted)
	resetStats(t, rc)
	deadline := time.Now().Add(15 * time.Second)
	val := ""
	for round := 2; ; round++ {
		val = strconv.Itoa(round)
		for _, k := range keys {
			if err := c.Set(ctx, k, val); err != nil {
				t.Fatalf("SET after the failover: %v", err)
			}
		}
		for _, k := range keys {
			if _, _, err := c.Get(ctx, k); err != nil {
				t.Fatalf("GET after the failover: %v", err)
			}
		}
		if calls(t, oldPrimary, "get") > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no read reached the demoted primary %s in 15 s", oldPrimary.Addr())
		}
		time.Sleep(100 * time.Millisecond)
	}
	if n := calls(t, promoted, "set"); n == 0 {
		t.Fatalf("no write reached the new primary %s", promoted.Addr())
	}
	readBack(t, c.WithReadFrom(client.Primary), keys[0], val)
}
