package client_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/respire-go/respire/client"
	"github.com/respire-go/respire/netio/redistest"
)

// deadEndpoint returns the endpoint of a server that was started and killed: nothing listens.
func deadEndpoint(t *testing.T) client.Endpoint {
	srv := redistest.Start(t, redistest.Config{})
	srv.Kill()
	return endpointOf(srv)
}

func TestConnectAnyFallsBackToTheSecondCandidate(t *testing.T) {
	redistest.Require(t)
	checkNoLeaks(t)
	down := deadEndpoint(t)
	up := redistest.Start(t, redistest.Config{Password: "second-pw"})
	ctx := ctxT(t)
	var firstDials atomic.Int64
	c, err := client.ConnectAny(ctx,
		client.Options{Endpoints: []client.Endpoint{down}, ClientName: "first", Dialer: countingDialer(&firstDials)},
		client.Options{Endpoints: []client.Endpoint{endpointOf(up)}, ClientName: "second", Password: "second-pw", Database: 2},
	)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.Endpoint() != endpointOf(up) || firstDials.Load() != 1 {
		t.Fatalf("want the second candidate after one attempt on the first: %v, %d dials", c.Endpoint(), firstDials.Load())
	}
	// The winner keeps its full options.
	v, err := c.Do(ctx, "CLIENT", "INFO")
	if err != nil || !strings.Contains(string(v.Str), " name=second ") || !strings.Contains(string(v.Str), " db=2 ") {
		t.Fatalf("CLIENT INFO: %v %v", v, err)
	}
	// The first candidate is preferred when it is up.
	c2, err := client.ConnectAny(ctx,
		client.Options{Endpoints: []client.Endpoint{endpointOf(up)}, Password: "second-pw"},
		client.Options{Endpoints: []client.Endpoint{down}})
	if err != nil || c2.Endpoint() != endpointOf(up) {
		t.Fatalf("first candidate: %v", err)
	}
	c2.Close()
}

func TestConnectAnyAllFail(t *testing.T) {
	redistest.Require(t)
	checkNoLeaks(t)
	down := deadEndpoint(t)
	hookFailure := errors.New("tunnel refused")
	hooked := client.Endpoint{Host: "192.0.2.10", Port: 6400}
	_, err := client.ConnectAny(ctxT(t),
		client.Options{Endpoints: []client.Endpoint{hooked},
			Dialer: func(context.Context, client.Endpoint) (net.Conn, error) { return nil, hookFailure }},
		client.Options{Endpoints: []client.Endpoint{down}},
	)
	var ce *client.ConnectionError
	if !errors.As(err, &ce) || ce.Endpoint != (client.Endpoint{}) {
		t.Fatalf("want a *ConnectionError without an endpoint, got %T %v", err, err)
	}
	msg := err.Error()
	t.Logf("all failed: %s", msg)
	if !strings.Contains(msg, hooked.String()) || !strings.Contains(msg, down.String()) || !strings.Contains(msg, "all 2 candidates failed") {
		t.Fatalf("the message must list every attempted endpoint: %s", msg)
	}
	// Each attempt's error is reachable.
	var op *net.OpError
	if !errors.Is(err, hookFailure) || !errors.Is(err, syscall.ECONNREFUSED) || !errors.As(err, &op) {
		t.Fatalf("the attempts' errors are not reachable: %v", err)
	}
}

func TestConnectAnyCancellation(t *testing.T) {
	checkNoLeaks(t)
	ctx, cancel := context.WithCancel(context.Background())
	var secondDials atomic.Int64
	hang := func(ctx context.Context, _ client.Endpoint) (net.Conn, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	time.AfterFunc(50*time.Millisecond, cancel)
	start := time.Now()
	_, err := client.ConnectAny(ctx,
		client.Options{Endpoints: []client.Endpoint{{Host: "192.0.2.1", Port: 6379}}, ConnectTimeout: time.Hour, Dialer: hang},
		client.Options{Endpoints: []client.Endpoint{{Host: "192.0.2.2", Port: 6379}}, Dialer: countingDialer(&secondDials)},
	)
	if !errors.Is(err, context.Canceled) || secondDials.Load() != 0 {
		t.Fatalf("want the context's error and no further candidate: %v (%d dials)", err, secondDials.Load())
	}
	if time.Since(start) > 5*time.Second {
		t.Fatal("cancellation was not prompt")
	}
	// A context that already ended tries nothing.
	if _, err := client.ConnectAny(ctx, client.Options{Endpoints: []client.Endpoint{{Host: "192.0.2.2", Port: 6379}},
		Dialer: countingDialer(&secondDials)}); !errors.Is(err, context.Canceled) || secondDials.Load() != 0 {
		t.Fatalf("ended context: %v", err)
	}
}

func TestConnectAnyValidatesEveryCandidateFirst(t *testing.T) {
	var dials atomic.Int64
	good := client.Options{Endpoints: []client.Endpoint{{Host: "192.0.2.1", Port: 6379}}, Dialer: countingDialer(&dials)}
	_, err := client.ConnectAny(ctxT(t), good, client.Options{Endpoints: good.Endpoints, Database: -1})
	var ce *client.ConfigError
	if !errors.As(err, &ce) || ce.Option != "candidates[1].Database" || dials.Load() != 0 {
		t.Fatalf("want a *ConfigError on candidates[1].Database before any dial: %v (%d dials)", err, dials.Load())
	}
	if _, err := client.ConnectAny(ctxT(t)); !errors.As(err, &ce) || ce.Option != "candidates" {
		t.Fatalf("no candidates: %v", err)
	}
}
