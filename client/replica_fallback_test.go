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

// roleFake starts a scripted RESP3 server that answers the read router's validation in role
// ("master" or "slave") and XREAD with refusal when refuse() is set, else one stream entry.
// xreads counts the XREADs it received.
func roleFake(t *testing.T, role string, refusal string, refuse func() bool, xreads *atomic.Int32) *redistest.Fake {
	return redistest.StartFake(t, func(c *redistest.FakeConn, args []string) {
		if c.Standard(args) {
			return
		}
		switch args[0] {
		case "ROLE":
			if role == "master" {
				c.Reply(resp.ArrayOf(resp.BulkString("master"), resp.Int(1), resp.ArrayOf()))
				return
			}
			c.Reply(resp.ArrayOf(resp.BulkString("slave"), resp.BulkString("127.0.0.1"), resp.Int(6379),
				resp.BulkString("connected"), resp.Int(1)))
		case "CONFIG":
			c.Reply(resp.ArrayOf(resp.BulkString("replica-serve-stale-data"), resp.BulkString("yes")))
		case "INFO":
			c.Reply(resp.BulkString("# Server\r\nredis_version:7.4.0\r\n"))
		case "GET":
			c.Reply(resp.BulkString("v"))
		case "XREAD":
			xreads.Add(1)
			if refuse() {
				c.ErrorReply(refusal)
				return
			}
			entry := resp.ArrayOf(resp.BulkString("1-1"), resp.ArrayOf(resp.BulkString("f"), resp.BulkString(role)))
			c.Reply(resp.MapOf(resp.BulkString("s"), resp.ArrayOf(entry)))
		default:
			c.ErrorReply("ERR unknown command")
		}
	})
}

// TestReplicaBlockingReadRoleSwitch: under ReplicaPreferred, a blocking read that the replica
// refuses with LOADING runs once more on the primary (typed and through Do); under
// PrimaryPreferred, the primary's MASTERDOWN sends it to the replica; under Replica the
// refusal is the answer and the primary never sees the read. Each refused read reached each
// server once: nothing is retried on the same role, and no read switches twice.
func TestReplicaBlockingReadRoleSwitch(t *testing.T) {
	var replicaRefuses, primaryRefuses atomic.Bool
	var onReplica, onPrimary atomic.Int32
	replica := roleFake(t, "slave", "LOADING Redis is loading the dataset in memory", replicaRefuses.Load, &onReplica)
	primary := roleFake(t, "master", "MASTERDOWN Link with MASTER is down", primaryRefuses.Load, &onPrimary)
	c, err := client.Connect(ctxT(t), client.Options{
		Endpoints:              []client.Endpoint{{Host: primary.Host(), Port: primary.Port()}},
		ReplicaEndpoints:       []client.Endpoint{{Host: replica.Host(), Port: replica.Port()}},
		ReadFrom:               client.ReplicaPreferred,
		ReplicaRefreshInterval: time.Hour,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	ctx := ctxT(t)
	waitReplicaFor(t, 5*time.Second, "the replica validated", func() bool {
		s := c.ReadRoutingSnapshot()
		_, _, err := c.Get(ctx, "k")
		return err == nil && s != nil && len(s.EligibleEndpoints) == 1 && s.EligibleEndpoints[0].Port == replica.Port()
	})
	args := client.XReadArgs{Streams: []client.XStreamOffset{{Key: "s", ID: "0"}}, Block: time.Second}
	from := func(streams []client.XStream) string {
		if len(streams) != 1 || len(streams[0].Entries) != 1 {
			return ""
		}
		return streams[0].Entries[0].Values()["f"]
	}
	counts := func() (int32, int32) { return onReplica.Swap(0), onPrimary.Swap(0) }

	// ReplicaPreferred: the replica is loading; the primary answers.
	replicaRefuses.Store(true)
	got, err := c.XReadBlock(ctx, args)
	if err != nil || from(got) != "master" {
		t.Fatalf("ReplicaPreferred over a loading replica: %v %v, want the primary's entry", got, err)
	}
	if r, p := counts(); r != 1 || p != 1 {
		t.Fatalf("XREADs: %d on the replica, %d on the primary; want 1 and 1", r, p)
	}
	if _, err := c.Do(ctx, "XREAD", "BLOCK", "1000", "STREAMS", "s", "0"); err != nil {
		t.Fatalf("Do XREAD BLOCK over a loading replica: %v", err)
	}
	if r, p := counts(); r != 1 || p != 1 {
		t.Fatalf("Do: %d XREADs on the replica, %d on the primary; want 1 and 1", r, p)
	}

	// Replica: no switch; the refusal is the answer.
	_, err = c.WithReadFrom(client.Replica).XReadBlock(ctx, args)
	var se *client.ServerError
	if !asServerError(err, &se) || se.Code != "LOADING" {
		t.Fatalf("Replica over a loading replica: %v, want its LOADING", err)
	}
	if r, p := counts(); r != 1 || p != 0 {
		t.Fatalf("Replica: %d XREADs on the replica, %d on the primary; want 1 and 0", r, p)
	}

	// PrimaryPreferred: the primary's link is down; the replica answers.
	replicaRefuses.Store(false)
	primaryRefuses.Store(true)
	got, err = c.WithReadFrom(client.PrimaryPreferred).XReadBlock(ctx, args)
	if err != nil || from(got) != "slave" {
		t.Fatalf("PrimaryPreferred over a refusing primary: %v %v, want the replica's entry", got, err)
	}
	if r, p := counts(); r != 1 || p != 1 {
		t.Fatalf("PrimaryPreferred: %d XREADs on the replica, %d on the primary; want 1 and 1", r, p)
	}

	// Both refuse: one switch, and the second refusal is the answer.
	replicaRefuses.Store(true)
	if _, err = c.XReadBlock(ctx, args); !asServerError(err, &se) {
		t.Fatalf("both refusing: %v, want a *ServerError", err)
	}
	if r, p := counts(); r != 1 || p != 1 {
		t.Fatalf("both refusing: %d XREADs on the replica, %d on the primary; want 1 and 1", r, p)
	}
}

func asServerError(err error, se **client.ServerError) bool { return errors.As(err, se) }
