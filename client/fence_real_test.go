package client_test

import (
	"context"
	"errors"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/respire-go/respire/client"
	"github.com/respire-go/respire/netio"
	"github.com/respire-go/respire/netio/redistest"
)

// killCalls returns how many CLIENT KILL commands the server has executed.
func killCalls(t *testing.T, srv *redistest.Server) int {
	t.Helper()
	m := regexp.MustCompile(`cmdstat_client\|kill:calls=(\d+)`).FindStringSubmatch(srv.Do(t, "INFO", "commandstats"))
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// TestSettleFencesALatentWrite is the real-server fence: the server is stopped (SIGSTOP) with a
// SET in its socket buffer, the client's connection dies (its idle-read bound), and the SET's
// outcome is unknown. Settle cannot return while the server is stopped; once it runs again, the
// fence (CLIENT KILL ID on the dead connection's peer) is answered, Settle returns, and what the
// server holds then is final: it never changes afterwards.
func TestSettleFencesALatentWrite(t *testing.T) {
	redistest.Require(t)
	checkNoLeaks(t)
	srv := redistest.Start(t, redistest.Config{})
	ctx := ctxT(t)
	c, err := client.Connect(ctx, client.Options{Endpoints: []client.Endpoint{endpointOf(srv)}, EnableFences: true,
		ConnectionIdleReadTimeout: 200 * time.Millisecond, CommandTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Set(ctx, "fenced", "before"); err != nil {
		t.Fatal(err)
	}
	kills := killCalls(t, srv)

	srv.Pause()
	paused := true
	defer func() {
		if paused {
			srv.Resume()
		}
	}()
	err = c.Set(ctx, "fenced", "latent")
	// The fault happened: the SET was written, then its connection died, so its outcome is
	// unknown (not a timeout on a live connection, not a definite failure).
	var uo *client.UnknownOutcomeError
	var ioe *netio.IOError
	if !errors.As(err, &uo) || !errors.Is(err, client.ErrUnknownOutcome) || !errors.As(err, &ioe) {
		t.Fatalf("want an unknown outcome from a dead connection, got %v", err)
	}

	settled := make(chan error, 1)
	go func() { settled <- c.Settle(ctx, err) }()
	select {
	case err := <-settled:
		t.Fatalf("Settle returned %v while the server was stopped: no fence can be acknowledged then", err)
	case <-time.After(500 * time.Millisecond):
	}
	// A Settle bounded by its context returns with the context's error, and the obligation stays.
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	var se *client.SettleError
	if err := c.Settle(short, err); !errors.As(err, &se) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Settle past its deadline: %v", err)
	}
	cancel()

	srv.Resume()
	paused = false
	select {
	case err := <-settled:
		if err != nil {
			t.Fatalf("Settle: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Settle did not return after the server resumed")
	}
	if got := killCalls(t, srv) - kills; got < 1 {
		t.Fatalf("Settle returned but the server ran %d CLIENT KILL", got)
	}
	// The outcome agrees with the server's state, and the state is final.
	after := srv.Do(t, "GET", "fenced")
	if after != "latent" && after != "before" {
		t.Fatalf("GET after Settle: %q", after)
	}
	time.Sleep(300 * time.Millisecond)
	if again := srv.Do(t, "GET", "fenced"); again != after {
		t.Fatalf("the settled SET changed the value after Settle: %q then %q", after, again)
	}
	got, _, err := c.Get(ctx, "fenced")
	if err != nil || got != after {
		t.Fatalf("client GET after Settle: %q %v, server %q", got, err, after)
	}
	// Settling again is harmless and immediate.
	if err := c.Settle(ctx, err2(uo)); err != nil {
		t.Fatalf("second Settle: %v", err)
	}
	// The fence's decisions replay from the journal alone: the kill of the dead connection's id
	// on its peer, and the acknowledged waiters.
	c.Close()
	effects, complete := client.ReplayJournal(c)
	kill := regexp.MustCompile(`(?m)^kill conn=fence#\d+ owed=\d+ id=\d+ peer=127\.0\.0\.1:` + strconv.Itoa(srv.Port()) + `$`)
	if !complete || !kill.MatchString(effects) || !strings.Contains(effects, "outcome=granted") {
		t.Fatalf("replayed fence effects (journal complete %v):\n%s", complete, effects)
	}
}

func err2(uo *client.UnknownOutcomeError) error { return uo }

// TestSettleErrors: Settle refuses what it cannot settle with typed errors.
func TestSettleErrors(t *testing.T) {
	redistest.Require(t)
	checkNoLeaks(t)
	srv := redistest.Start(t, redistest.Config{})
	ctx := ctxT(t)
	if err := (&client.Client{}).Settle(ctx, nil); !errors.Is(err, client.ErrNotUnknownOutcome) {
		t.Fatalf("nil: %v", err)
	}
	// Without EnableFences, a connection has no identity: nothing can be fenced.
	c, err := client.Connect(ctx, client.Options{Endpoints: []client.Endpoint{endpointOf(srv)},
		ConnectionIdleReadTimeout: 200 * time.Millisecond, CommandTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Settle(ctx, errors.New("boom")); !errors.Is(err, client.ErrNotUnknownOutcome) {
		t.Fatalf("a definite error: %v", err)
	}
	srv.Pause()
	err = c.Set(ctx, "k", "v")
	srv.Resume()
	if !errors.Is(err, client.ErrUnknownOutcome) {
		t.Fatalf("want an unknown outcome, got %v", err)
	}
	if err := c.Settle(ctx, err); !errors.Is(err, client.ErrNoIdentity) {
		t.Fatalf("unidentified connection: %v", err)
	}
	// A reply lost to a timeout on a live connection names no failed connection.
	c2, err := client.Connect(ctx, client.Options{Endpoints: []client.Endpoint{endpointOf(srv)}, EnableFences: true,
		CommandTimeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	srv.Pause()
	err = c2.Set(ctx, "k", "v")
	srv.Resume()
	if !errors.Is(err, client.ErrUnknownOutcome) {
		t.Fatalf("want an unknown outcome, got %v", err)
	}
	if err := c2.Settle(ctx, err); !errors.Is(err, client.ErrNoIdentity) {
		t.Fatalf("timeout on a live connection: %v", err)
	}
}
