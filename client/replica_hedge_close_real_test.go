package client_test

import (
	"errors"
	"testing"
	"time"

	"github.com/respire-go/respire/client"
)

// TestReplicaHedgedReadClosedAfterSend: a hedged read whose bytes reached a replica, cut short
// by Close before any reply, ends with an *UnknownOutcomeError wrapping ErrClosed: it may have
// run, so it is never reported as a definite failure (before, Close reported a bare ErrClosed).
func TestReplicaHedgedReadClosedAfterSend(t *testing.T) {
	primary, replicas := startReplicaSet(t)
	slow := []*delayProxy{startDelayProxy(t, replicas[0], 1500*time.Millisecond), startDelayProxy(t, replicas[1], 1500*time.Millisecond)}
	c, err := client.Connect(ctxT(t), client.Options{
		Endpoints:              []client.Endpoint{endpointOf(primary)},
		ReplicaEndpoints:       []client.Endpoint{slow[0].endpoint(), slow[1].endpoint()},
		ReadFrom:               client.Replica,
		ReplicaRefreshInterval: 10 * time.Second,
		CommandTimeout:         20 * time.Second,
		HedgedReads:            &client.HedgedReadOptions{Delay: 5 * time.Millisecond, MaximumExtraLoadPercent: 100},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t)
	if err := c.Set(ctx, "k", "v"); err != nil {
		t.Fatal(err)
	}
	waitReplicaFor(t, 20*time.Second, "a replica validated", func() bool {
		_, _, err := c.Get(ctx, "k")
		return err == nil
	})
	before := []int{getCalls(t, replicas[0]), getCalls(t, replicas[1])}
	done := make(chan error, 1)
	go func() {
		_, _, err := c.Get(ctx, "k")
		done <- err
	}()
	// The read has reached a replica (the proxies delay only what the servers send back).
	waitReplicaFor(t, 10*time.Second, "the read reached a replica", func() bool {
		return getCalls(t, replicas[0]) != before[0] || getCalls(t, replicas[1]) != before[1]
	})
	_ = c.Close()
	select {
	case err = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the read did not end after Close")
	}
	var uo *client.UnknownOutcomeError
	if !errors.As(err, &uo) || !errors.Is(err, client.ErrClosed) {
		t.Fatalf("read cut short by Close after it reached a replica: %v (%T); want an unknown outcome wrapping ErrClosed", err, err)
	}
}
