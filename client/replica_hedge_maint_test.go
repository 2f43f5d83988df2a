package client_test

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/respire-go/respire/client"
	"github.com/respire-go/respire/netio/redistest"
	"github.com/respire-go/respire/netio/resp"
)

// hedgeMaintFake starts a scripted RESP3 replica, linked as replicaMaintFake's is, whose GET
// follows the current mode: 0 replies at once; 1 sends MIGRATING and replies 500 ms later; 2
// sends MIGRATING and MIGRATED and replies 600 ms later; 3 sends MIGRATING, MIGRATED 300 ms
// later, and replies 300 ms after that; 4 replies 1 s later, with no notice. gets counts the GETs received, served those answered.
func hedgeMaintFake(t *testing.T, mode, gets, served *atomic.Int32) *redistest.Fake {
	return redistest.StartFake(t, func(c *redistest.FakeConn, args []string) {
		if c.Standard(args) {
			return
		}
		switch args[0] {
		case "ROLE":
			c.Reply(resp.ArrayOf(resp.BulkString("slave"), resp.BulkString("127.0.0.1"), resp.Int(6379),
				resp.BulkString("connected"), resp.Int(1)))
		case "CONFIG":
			c.Reply(resp.ArrayOf(resp.BulkString("replica-serve-stale-data"), resp.BulkString("yes")))
		case "INFO":
			c.Reply(resp.BulkString("# Server\r\nredis_version:7.4.0\r\n"))
		case "GET":
			n := int64(gets.Add(1))
			switch mode.Load() {
			case 1:
				c.Reply(maintPush("MIGRATING", n, 5))
				time.Sleep(500 * time.Millisecond)
			case 2:
				c.Reply(maintPush("MIGRATING", n, 5))
				c.Reply(maintPush("MIGRATED", n, -1))
				time.Sleep(600 * time.Millisecond)
			case 3:
				c.Reply(maintPush("MIGRATING", n, 5))
				time.Sleep(300 * time.Millisecond)
				c.Reply(maintPush("MIGRATED", n, -1))
				time.Sleep(300 * time.Millisecond)
			case 4:
				time.Sleep(time.Second)
			}
			c.Reply(resp.BulkString("v"))
			served.Add(1)
		default:
			c.ErrorReply("ERR unknown command")
		}
	})
}

// TestHedgedReplicaReadMaintenanceRelaxation: a hedged read's wait asks the maintenance
// relaxation of the connections its attempts went to, by the rule a single command's wait
// follows (HedgedReads on; the only replica leaves no hedge target, so the original attempt is
// the one in flight).
//
//   - A MIGRATING notice on the replica's connection lets a reply slower than CommandTimeout
//     complete the read. Before the fix the read timed out at CommandTimeout.
//   - After MIGRATED the read has its own timeout again and times out before the reply.
//   - A MIGRATED that arrives while the window keeps the read alive past its own timeout ends
//     it at once, before the reply that would otherwise have completed it.
//
// Every read took the hedged path (HedgeStats counts it watched), and the replica ran every GET.
func TestHedgedReplicaReadMaintenanceRelaxation(t *testing.T) {
	var mode, gets, served atomic.Int32
	replica := hedgeMaintFake(t, &mode, &gets, &served)
	primary, _ := maintFake(t, func() []resp.Value { return nil })
	c := maintClient(t, primary, client.Options{
		ReplicaEndpoints:          []client.Endpoint{{Host: replica.Host(), Port: replica.Port()}},
		ReadFrom:                  client.Replica,
		ReplicaRefreshInterval:    time.Hour,
		CommandTimeout:            150 * time.Millisecond,
		MaintenanceNotifications:  client.MaintenanceAuto,
		MaintenanceRelaxedTimeout: 5 * time.Second,
		HedgedReads:               &client.HedgedReadOptions{Delay: 10 * time.Millisecond, MaximumExtraLoadPercent: 100},
	})
	ctx := ctxT(t)
	waitReplicaFor(t, 5*time.Second, "the replica validated", func() bool {
		v, _, err := c.Get(ctx, "k")
		return err == nil && v == "v"
	})

	// read runs one GET in mode m, once the replica answered every earlier one (a timed-out
	// read's GET still holds the connection until its reply), and checks that the replica ran
	// it on the hedged path.
	read := func(m int32) (string, time.Duration, error) {
		t.Helper()
		waitReplicaFor(t, 5*time.Second, "the replica answered the earlier GETs", func() bool { return served.Load() == gets.Load() })
		mode.Store(m)
		before, watched := gets.Load(), c.HedgeStats().Watched
		start := time.Now()
		v, _, err := c.Get(ctx, "k")
		took := time.Since(start)
		if n := gets.Load() - before; n != 1 {
			t.Fatalf("mode %d: %d GETs reached the replica, want 1", m, n)
		}
		if w := c.HedgeStats().Watched - watched; w != 1 {
			t.Fatalf("mode %d: %d reads watched for a hedge, want 1: the read did not take the hedged path", m, w)
		}
		return v, took, err
	}
	var te *client.TimeoutError

	v, took, err := read(1)
	if err != nil || v != "v" {
		t.Fatalf("a relaxed hedged read: %q %v after %v", v, err, took)
	}
	if took < 450*time.Millisecond {
		t.Fatalf("the read took %v: the slow reply never happened", took)
	}

	_, took, err = read(2)
	if !errors.As(err, &te) || took >= 600*time.Millisecond {
		t.Fatalf("after MIGRATED: %v after %v, want a timeout before the reply", err, took)
	}

	_, took, err = read(3)
	if !errors.As(err, &te) || took >= 600*time.Millisecond {
		t.Fatalf("MIGRATED during the relaxed wait: %v after %v, want a timeout before the reply", err, took)
	}
	if took < 250*time.Millisecond {
		t.Fatalf("the read timed out after %v, before MIGRATED: the window never kept it alive", took)
	}
}

// TestHedgedReadRelaxedByEitherAttempt: the relaxation that keeps a hedged read alive may be the
// hedge's connection's as well as the original attempt's. Of two replicas, plain answers a GET
// after 1 s with no notice, and relaxed sends MIGRATING and answers after 500 ms. The router
// rotates the original attempt between them, so of two reads one starts on each, and each is
// hedged to the other 10 ms later. Both complete with relaxed's reply, past CommandTimeout:
// the one that started on plain lives only by its hedge's window, and that hedge wins.
func TestHedgedReadRelaxedByEitherAttempt(t *testing.T) {
	var plainMode, plainGets, plainServed, relaxedMode, relaxedGets, relaxedServed atomic.Int32
	plain := hedgeMaintFake(t, &plainMode, &plainGets, &plainServed)
	relaxed := hedgeMaintFake(t, &relaxedMode, &relaxedGets, &relaxedServed)
	primary, _ := maintFake(t, func() []resp.Value { return nil })
	c := maintClient(t, primary, client.Options{
		ReplicaEndpoints: []client.Endpoint{
			{Host: plain.Host(), Port: plain.Port()}, {Host: relaxed.Host(), Port: relaxed.Port()}},
		ReadFrom:                  client.Replica,
		ReplicaRefreshInterval:    time.Hour,
		CommandTimeout:            150 * time.Millisecond,
		MaintenanceNotifications:  client.MaintenanceAuto,
		MaintenanceRelaxedTimeout: 5 * time.Second,
		HedgedReads:               &client.HedgedReadOptions{Delay: 10 * time.Millisecond, MaximumExtraLoadPercent: 100},
	})
	ctx := ctxT(t)
	waitReplicaFor(t, 5*time.Second, "both replicas validated", func() bool {
		v, _, err := c.Get(ctx, "k")
		s := c.ReadRoutingSnapshot()
		return err == nil && v == "v" && s != nil && len(s.EligibleEndpoints) == 2
	})

	plainMode.Store(4)
	relaxedMode.Store(1)
	stats := c.HedgeStats()
	for i := range 2 {
		waitReplicaFor(t, 5*time.Second, "the replicas answered the earlier GETs", func() bool {
			return plainServed.Load() == plainGets.Load() && relaxedServed.Load() == relaxedGets.Load()
		})
		pg, rg := plainGets.Load(), relaxedGets.Load()
		start := time.Now()
		v, _, err := c.Get(ctx, "k")
		took := time.Since(start)
		if err != nil || v != "v" {
			t.Fatalf("read %d: %q %v after %v, want relaxed's reply", i, v, err, took)
		}
		if took < 450*time.Millisecond || took >= 900*time.Millisecond {
			t.Fatalf("read %d took %v, want relaxed's slow reply (500 ms), not plain's", i, took)
		}
		if plainGets.Load() != pg+1 || relaxedGets.Load() != rg+1 {
			t.Fatalf("read %d: %d GETs on plain, %d on relaxed, want one each (an original and its hedge)",
				i, plainGets.Load()-pg, relaxedGets.Load()-rg)
		}
	}
	now := c.HedgeStats()
	if now.Sent-stats.Sent != 2 || now.Won-stats.Won != 1 {
		t.Fatalf("hedges: %d sent, %d won, want 2 sent and 1 won (the read that started on plain)",
			now.Sent-stats.Sent, now.Won-stats.Won)
	}
}

// TestClusterHedgedReplicaReadMaintenanceRelaxation: a Cluster client's hedged read waits by
// the same rule: a MIGRATING notice on the replica node's connection lets a reply slower than
// CommandTimeout complete it; after MIGRATED it times out before its reply. Both reads took the
// hedged path (the shard's router counts them watched), and every GET ran on the replica.
func TestClusterHedgedReplicaReadMaintenanceRelaxation(t *testing.T) {
	var mode, gets atomic.Int32
	primary, _ := clusterMaintFakes(t, &mode, &gets, nil)
	c := maintClient(t, primary, client.Options{
		UseCluster:                true,
		ReadFrom:                  client.Replica,
		ReplicaRefreshInterval:    time.Hour,
		CommandTimeout:            150 * time.Millisecond,
		MaintenanceNotifications:  client.MaintenanceAuto,
		MaintenanceRelaxedTimeout: 5 * time.Second,
		HedgedReads:               &client.HedgedReadOptions{Delay: 10 * time.Millisecond, MaximumExtraLoadPercent: 100},
	})
	ctx := ctxT(t)
	waitReplicaFor(t, 5*time.Second, "the replica validated", func() bool {
		v, _, err := c.Get(ctx, "k")
		return err == nil && v == "v"
	})

	mode.Store(1)
	before, watched := gets.Load(), c.HedgeStats().Watched
	start := time.Now()
	v, _, err := c.Get(ctx, "k")
	took := time.Since(start)
	if err != nil || v != "v" {
		t.Fatalf("a relaxed Cluster hedged read: %q %v after %v", v, err, took)
	}
	if took < 450*time.Millisecond || gets.Load() != before+1 {
		t.Fatalf("the read took %v (%d GETs on the replica): the slow reply never happened", took, gets.Load()-before)
	}

	mode.Store(2)
	start = time.Now()
	_, _, err = c.Get(ctx, "k")
	took = time.Since(start)
	var te *client.TimeoutError
	if !errors.As(err, &te) || took >= 600*time.Millisecond {
		t.Fatalf("after MIGRATED: %v after %v, want a timeout before the reply", err, took)
	}
	if gets.Load() != before+2 {
		t.Fatalf("%d GETs reached the replica, want 2", gets.Load()-before)
	}
	if w := c.HedgeStats().Watched - watched; w != 2 {
		t.Fatalf("%d reads watched for a hedge, want 2: the reads did not take the hedged path", w)
	}
}
