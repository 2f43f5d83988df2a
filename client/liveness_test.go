package client_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/respire-go/respire/client"
	"github.com/respire-go/respire/netio"
	"github.com/respire-go/respire/netio/redistest"
)

// clientID returns the server-side id of the connection that runs the next command.
func clientID(t *testing.T, c *client.Client) int64 {
	t.Helper()
	v, err := c.Do(context.Background(), "CLIENT", "ID")
	if err != nil {
		t.Fatalf("CLIENT ID: %v", err)
	}
	return v.Int
}

// TestIdleReadTimeoutAgainstPausedServer: a server stopped with SIGSTOP keeps its socket and
// answers nothing. With ConnectionIdleReadTimeout the connection is aborted within the bound (long
// before CommandTimeout), the command's outcome is unknown, the loss is observed, and after the
// server resumes commands succeed on a new connection.
func TestIdleReadTimeoutAgainstPausedServer(t *testing.T) {
	redistest.Require(t)
	checkNoLeaks(t)
	srv := redistest.Start(t, redistest.Config{})
	const bound = 300 * time.Millisecond
	var mu sync.Mutex
	var lost []error
	c, err := client.Connect(ctxT(t), client.Options{
		Endpoints: []client.Endpoint{endpointOf(srv)}, CommandTimeout: 5 * time.Second,
		ConnectionIdleReadTimeout: bound,
		OnConnectionStateChange: func(ch client.ConnectionStateChange) {
			if ch.SourceState == client.SourceDisconnected && ch.Err != nil {
				mu.Lock()
				lost = append(lost, ch.Err)
				mu.Unlock()
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	before := clientID(t, c)

	srv.Pause()
	start := time.Now()
	_, err = c.Incr(context.Background(), "paused-counter")
	elapsed := time.Since(start)
	srv.Resume()
	var ue *client.UnknownOutcomeError
	if !errors.As(err, &ue) || !errors.Is(err, client.ErrUnknownOutcome) {
		t.Fatalf("INCR against a paused server: %v, want an unknown outcome", err)
	}
	var le *netio.LivenessError
	if !errors.As(err, &le) || le.Op != "read" {
		t.Fatalf("the failure does not name the idle-read bound: %v", err)
	}
	if elapsed < bound || elapsed > bound+time.Second {
		t.Fatalf("aborted after %v, want within about %v (CommandTimeout is 5s)", elapsed, bound)
	}
	ctx := ctxT(t)
	must(t, c.Set(ctx, "after-resume", "ok"))
	if after := clientID(t, c); after == before {
		t.Fatalf("commands after the resume still use connection %d", before)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(lost) == 0 || !errors.As(lost[0], &le) {
		t.Fatalf("the loss was not observed with the liveness error: %v", lost)
	}
}

// TestWithoutIdleReadTimeoutCommandsOnlyTimeOut: the same pause without the bound ends the command
// by CommandTimeout, and the connection survives: after the resume it serves again.
func TestWithoutIdleReadTimeoutCommandsOnlyTimeOut(t *testing.T) {
	redistest.Require(t)
	srv := redistest.Start(t, redistest.Config{})
	c, err := client.Connect(ctxT(t), client.Options{Endpoints: []client.Endpoint{endpointOf(srv)},
		CommandTimeout: 400 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	before := clientID(t, c)
	srv.Pause()
	_, err = c.Incr(context.Background(), "paused-counter")
	srv.Resume()
	var te *client.TimeoutError
	if !errors.As(err, &te) || te.Diagnostics.Stage != client.StageAwaitingReply {
		t.Fatalf("INCR against a paused server: %v, want a command timeout awaiting the reply", err)
	}
	if after := clientID(t, c); after != before {
		t.Fatalf("the connection changed (%d -> %d) without a liveness bound", before, after)
	}
}

// TestWriteStallTimeoutAgainstPausedServer: a large SET to a stopped server fills the socket
// buffers; GatheredWriteStallTimeout aborts the connection (the idle-read bound is off), the SET's
// outcome is unknown, and after the resume commands succeed on a new connection.
func TestWriteStallTimeoutAgainstPausedServer(t *testing.T) {
	redistest.Require(t)
	srv := redistest.Start(t, redistest.Config{})
	const bound = 300 * time.Millisecond
	c, err := client.Connect(ctxT(t), client.Options{Endpoints: []client.Endpoint{endpointOf(srv)},
		CommandTimeout: 20 * time.Second, GatheredWriteStallTimeout: bound})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	before := clientID(t, c)
	srv.Pause()
	start := time.Now()
	err = c.Set(context.Background(), "big", strings.Repeat("v", 64<<20))
	elapsed := time.Since(start)
	srv.Resume()
	var le *netio.LivenessError
	if !errors.Is(err, client.ErrUnknownOutcome) || !errors.As(err, &le) || le.Op != "write" {
		t.Fatalf("SET to a paused server: %v, want an unknown outcome from the write bound", err)
	}
	// The error alone proves which bound fired: the 20 s command timeout would have given a
	// *TimeoutError, not the write bound's *LivenessError. Elapsed time is only logged: a wall-
	// clock bound flakes under the race detector on a loaded machine.
	t.Logf("the write bound fired after %v", elapsed)
	must(t, c.Set(ctxT(t), "small", "ok"))
	if after := clientID(t, c); after == before {
		t.Fatal("the stalled connection was not replaced")
	}
}
