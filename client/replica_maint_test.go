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

// replicaMaintFake starts a scripted RESP3 replica: it answers the router's validation as a
// linked replica, and GET with the notices and delay of the current mode (0: at once; 1:
// MIGRATING, then 500 ms; 2: MIGRATING and MIGRATED, then 600 ms). gets counts the GETs.
func replicaMaintFake(t *testing.T, mode *atomic.Int32, gets *atomic.Int32) *redistest.Fake {
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
			gets.Add(1)
			delay := time.Duration(0)
			switch mode.Load() {
			case 1:
				c.Reply(maintPush("MIGRATING", 1, 5))
				delay = 500 * time.Millisecond
			case 2:
				c.Reply(maintPush("MIGRATING", 2, 5))
				c.Reply(maintPush("MIGRATED", 3, -1))
				delay = 600 * time.Millisecond
			}
			time.Sleep(delay)
			c.Reply(resp.BulkString("v"))
		default:
			c.ErrorReply("ERR unknown command")
		}
	})
}

// TestReplicaReadMaintenanceRelaxation: a replica read's wait asks its connection's
// maintenance relaxation, as a single command's does. A MIGRATING notice on the replica's
// connection lets a reply slower than CommandTimeout arrive; after MIGRATED the read has its own
// timeout again and times out before the reply. The replica ran every GET (the primary, a fake
// that knows no GET, would refuse it).
func TestReplicaReadMaintenanceRelaxation(t *testing.T) {
	var mode, gets atomic.Int32
	replica := replicaMaintFake(t, &mode, &gets)
	primary, _ := maintFake(t, func() []resp.Value { return nil })
	c := maintClient(t, primary, client.Options{
		ReplicaEndpoints:          []client.Endpoint{{Host: replica.Host(), Port: replica.Port()}},
		ReadFrom:                  client.Replica,
		ReplicaRefreshInterval:    time.Hour,
		CommandTimeout:            150 * time.Millisecond,
		MaintenanceNotifications:  client.MaintenanceAuto,
		MaintenanceRelaxedTimeout: 5 * time.Second,
	})
	ctx := ctxT(t)
	waitReplicaFor(t, 5*time.Second, "the replica validated", func() bool {
		v, _, err := c.Get(ctx, "k")
		return err == nil && v == "v"
	})

	mode.Store(1)
	before := gets.Load()
	start := time.Now()
	v, _, err := c.Get(ctx, "k")
	took := time.Since(start)
	if err != nil || v != "v" {
		t.Fatalf("a relaxed replica read: %q %v after %v", v, err, took)
	}
	if took < 450*time.Millisecond || gets.Load() != before+1 {
		t.Fatalf("the read took %v (%d GETs on the replica): the slow reply never happened", took, gets.Load()-before)
	}

	mode.Store(2)
	before = gets.Load()
	start = time.Now()
	_, _, err = c.Get(ctx, "k")
	took = time.Since(start)
	var te *client.TimeoutError
	if !errors.As(err, &te) || took >= 600*time.Millisecond {
		t.Fatalf("after MIGRATED: %v after %v, want a timeout before the reply", err, took)
	}
	if gets.Load() != before+1 {
		t.Fatalf("%d GETs reached the replica, want 1", gets.Load()-before)
	}
}
