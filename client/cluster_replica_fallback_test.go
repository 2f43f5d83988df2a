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

// TestClusterReplicaBlockingReadRoleSwitch: on a Cluster client under ReplicaPreferred, a
// blocking read that the slot's replica refuses with LOADING runs once more on the slot's
// primary, and the replica cools down; under Replica the refusal is the answer and the primary
// never sees the read.
func TestClusterReplicaBlockingReadRoleSwitch(t *testing.T) {
	var mode, gets, onReplica, onPrimary atomic.Int32
	xread := func(role string, c *redistest.FakeConn, args []string) bool {
		if args[0] != "XREAD" {
			return false
		}
		if role == "slave" {
			onReplica.Add(1)
			c.ErrorReply("LOADING Redis is loading the dataset in memory")
			return true
		}
		onPrimary.Add(1)
		entry := resp.ArrayOf(resp.BulkString("1-1"), resp.ArrayOf(resp.BulkString("f"), resp.BulkString(role)))
		c.Reply(resp.MapOf(resp.BulkString(args[len(args)-2]), resp.ArrayOf(entry)))
		return true
	}
	primary, _ := clusterMaintFakes(t, &mode, &gets, xread)
	c := maintClient(t, primary, client.Options{UseCluster: true, ReadFrom: client.ReplicaPreferred,
		ReplicaRefreshInterval: time.Hour})
	ctx := ctxT(t)
	waitReplicaFor(t, 5*time.Second, "the replica validated", func() bool {
		before := gets.Load()
		_, _, err := c.WithReadFrom(client.Replica).Get(ctx, "k")
		return err == nil && gets.Load() == before+1
	})
	args := client.XReadArgs{Streams: []client.XStreamOffset{{Key: "s", ID: "0"}}, Block: time.Second}
	_, err := c.WithReadFrom(client.Replica).XReadBlock(ctx, args)
	var se *client.ServerError
	if !errors.As(err, &se) || se.Code != "LOADING" {
		t.Fatalf("Replica over a loading replica: %v, want its LOADING", err)
	}
	if r, p := onReplica.Swap(0), onPrimary.Swap(0); r != 1 || p != 0 {
		t.Fatalf("Replica: %d XREADs on the replica, %d on the primary; want 1 and 0", r, p)
	}
	got, err := c.XReadBlock(ctx, args)
	if err != nil || len(got) != 1 || len(got[0].Entries) != 1 || got[0].Entries[0].Values()["f"] != "master" {
		t.Fatalf("ReplicaPreferred over a loading replica: %v %v, want the primary's entry", got, err)
	}
	if r, p := onReplica.Swap(0), onPrimary.Swap(0); r != 1 || p != 1 {
		t.Fatalf("XREADs: %d on the replica, %d on the primary; want 1 and 1", r, p)
	}
	// The replica that refused cooled down: a Replica read finds no server now.
	if _, err = c.WithReadFrom(client.Replica).XReadBlock(ctx, args); !errors.Is(err, client.ErrNoReadServer) {
		t.Fatalf("Replica right after the refusal: %v, want ErrNoReadServer (the replica cools down)", err)
	}
}
