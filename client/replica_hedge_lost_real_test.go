package client_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/respire-go/respire/client"
)

// TestReplicaHedgedReadLostOriginalWhileHedgeWaits: a hedged read whose original attempt was
// sent to a replica and lost with its connection, while the hedge still waits for a connection
// to the primary (the primary's proxy accepts and never answers), waits for the hedge; when its
// caller's context ends, the read ends with an unknown outcome: the original may have run, so
// the read is never reported as one that did not leave (a bare context error). The test checks
// that the fault happened: the replica executed the original, the router sent a hedge, the
// primary never ran it, and the read ended by its context, not by a settlement. It is the
// real-server form of the scenario replica-hedge-leave-after-lost-original; before that fix,
// leaving the read looked at the original attempt only while it was pending.
func TestReplicaHedgedReadLostOriginalWhileHedgeWaits(t *testing.T) {
	primary, replicas := startReplicaSet(t)
	viaPrimary := startDelayProxy(t, primary, 0)
	viaReplica := startDelayProxy(t, replicas[0], 0)
	// The command timeout also bounds the handshake the hedge waits for: it must outlast the
	// read's context, so that the hedge still waits when the caller leaves.
	const budget, wait = 10 * time.Second, 800 * time.Millisecond
	c, err := client.Connect(ctxT(t), client.Options{
		Endpoints:              []client.Endpoint{viaPrimary.endpoint()},
		ReplicaEndpoints:       []client.Endpoint{viaReplica.endpoint()},
		ReadFrom:               client.ReplicaPreferred, // the replica first, then the primary: the hedge goes there
		ReplicaRefreshInterval: 10 * time.Second,
		CommandTimeout:         budget,
		HedgedReads:            &client.HedgedReadOptions{Delay: 5 * time.Millisecond, MaximumExtraLoadPercent: 100},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := ctxT(t)
	if err := c.Set(ctx, "k", "v"); err != nil {
		t.Fatal(err)
	}
	waitReplicaFor(t, 20*time.Second, "a read served by the replica", func() bool {
		before := getCalls(t, replicas[0])
		v, ok, err := c.Get(ctx, "k")
		return err == nil && ok && v == "v" && getCalls(t, replicas[0]) > before
	})

	// The replica answers late; the primary's connection is cut, and its replacement hangs.
	viaReplica.setDelay(2 * time.Second) // past the cut below
	viaPrimary.hold.Store(true)
	viaPrimary.cut()
	onReplica, onPrimary, hedges := getCalls(t, replicas[0]), getCalls(t, primary), c.HedgeStats().Sent
	done := make(chan error, 1)
	start := time.Now()
	go func() {
		readCtx, cancel := context.WithTimeout(ctx, wait)
		defer cancel()
		_, _, err := c.Get(readCtx, "k")
		done <- err
	}()
	waitReplicaFor(t, wait/2, "the original read executed by the replica", func() bool {
		return getCalls(t, replicas[0]) > onReplica
	})
	waitReplicaFor(t, wait/2, "a hedge sent", func() bool { return c.HedgeStats().Sent > hedges })
	viaReplica.cut() // the original attempt's connection is lost, its reply with it

	select {
	case err = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the read did not end")
	}
	took := time.Since(start)
	var uo *client.UnknownOutcomeError
	if !errors.As(err, &uo) || !errors.Is(err, context.DeadlineExceeded) || uo.Stage != client.StageAwaitingReply {
		t.Fatalf("hedged read whose sent original was lost, left by its context: %v (%T), want an unknown outcome (awaiting reply) wrapping the context's end", err, err)
	}
	if took < wait-50*time.Millisecond || took > wait+time.Second {
		t.Fatalf("the read ended after %v, want its context's %v: it did not wait for the hedge", took, wait)
	}
	if n := getCalls(t, primary); n != onPrimary {
		t.Fatalf("the primary ran %d GETs, want none: the hedge should still be waiting for its connection", n-onPrimary)
	}
}
