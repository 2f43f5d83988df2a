package client_test

import (
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/respire-go/respire/client"
	"github.com/respire-go/respire/netio/redistest"
	"github.com/respire-go/respire/netio/resp"
)

// clusterMaintFakes starts a one-shard scripted RESP3 Cluster: a primary and its replica, both
// answering CLUSTER SLOTS with the whole slot range on the primary, the read router's
// validation in their role, and GET as the replica fake of replicaMaintFake does (mode). Only
// the replica answers GET; the primary refuses it. extra (may be nil) sees each command first,
// with the node's role, and reports whether it answered.
func clusterMaintFakes(t *testing.T, mode, gets *atomic.Int32,
	extra func(role string, c *redistest.FakeConn, args []string) bool) (primary, replica *redistest.Fake) {
	var slots atomic.Value
	script := func(role string) func(c *redistest.FakeConn, args []string) {
		return func(c *redistest.FakeConn, args []string) {
			if c.Standard(args) || extra != nil && extra(role, c, args) {
				return
			}
			name := strings.ToUpper(args[0])
			switch {
			case name == "CLUSTER" && len(args) > 1 && strings.ToUpper(args[1]) == "SLOTS":
				c.Reply(slots.Load().(resp.Value))
			case name == "READONLY":
				c.Reply(resp.SimpleString("OK"))
			case name == "ROLE" && role == "master":
				c.Reply(resp.ArrayOf(resp.BulkString("master"), resp.Int(1), resp.ArrayOf()))
			case name == "ROLE":
				c.Reply(resp.ArrayOf(resp.BulkString("slave"), resp.BulkString("127.0.0.1"), resp.Int(6379),
					resp.BulkString("connected"), resp.Int(1)))
			case name == "CONFIG":
				c.Reply(resp.ArrayOf(resp.BulkString("replica-serve-stale-data"), resp.BulkString("yes")))
			case name == "INFO":
				c.Reply(resp.BulkString("# Server\r\nredis_version:7.4.0\r\n"))
			case name == "GET" && role == "slave":
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
				c.ErrorReply("ERR unknown command '" + args[0] + "'")
			}
		}
	}
	primary = redistest.StartFake(t, script("master"))
	replica = redistest.StartFake(t, script("slave"))
	node := func(f *redistest.Fake, id string) resp.Value {
		return resp.ArrayOf(resp.BulkString(f.Host()), resp.Int(int64(f.Port())), resp.BulkString(strings.Repeat(id, 40)))
	}
	slots.Store(resp.ArrayOf(resp.ArrayOf(resp.Int(0), resp.Int(16383), node(primary, "a"), node(replica, "b"))))
	return primary, replica
}

// TestClusterReplicaReadMaintenanceRelaxation: a Cluster replica read's wait asks its
// connection's maintenance relaxation, as a single command's does: a MIGRATING notice on the
// replica node's connection lets a reply slower than CommandTimeout arrive; after MIGRATED the
// read times out before its reply. Every GET ran on the replica (the primary refuses GET).
func TestClusterReplicaReadMaintenanceRelaxation(t *testing.T) {
	var mode, gets atomic.Int32
	primary, _ := clusterMaintFakes(t, &mode, &gets, nil)
	c := maintClient(t, primary, client.Options{
		UseCluster:                true,
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
		t.Fatalf("a relaxed Cluster replica read: %q %v after %v", v, err, took)
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
