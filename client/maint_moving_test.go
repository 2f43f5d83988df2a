package client_test

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/respire-go/respire/client"
	"github.com/respire-go/respire/netio/redistest"
	"github.com/respire-go/respire/netio/resp"
)

// whoFake answers WHO with its name; on MOVE it pushes MOVING toward target (a null: no
// endpoint) with the given grace, then answers OK; on HANG it pushes the same notice and never
// answers, nor anything sent after it on that connection, as a server busy with HANG would not
// (answering a later command would hand its reply to HANG).
func whoFake(t *testing.T, name string, target func() resp.Value, grace int64) (*redistest.Fake, *atomic.Int32) {
	var hangs atomic.Int32
	var hung sync.Map // *redistest.FakeConn -> true once it received HANG
	return redistest.StartFake(t, func(c *redistest.FakeConn, args []string) {
		if _, ok := hung.Load(c); ok {
			return
		}
		if c.Standard(args) {
			return
		}
		switch args[0] {
		case "WHO":
			c.Reply(resp.BulkString(name))
		case "MOVE":
			c.Push(resp.BulkString("MOVING"), resp.Int(1), resp.Int(grace), target())
			c.Reply(resp.SimpleString("OK"))
		case "HANG":
			hangs.Add(1)
			hung.Store(c, true)
			c.Push(resp.BulkString("MOVING"), resp.Int(1), resp.Int(grace), target())
		default:
			c.ErrorReply("ERR unknown command")
		}
	}), &hangs
}

func who(t *testing.T, c *client.Client) string {
	t.Helper()
	v, err := c.Do(context.Background(), "WHO")
	if err != nil {
		t.Fatal(err)
	}
	return string(v.Str)
}

// TestMovingHandsOffToTheAnnouncedEndpoint: A announces MOVING while a command (HANG) waits on
// it. New commands then go to the announced endpoint B; HANG, which A had accepted, is not
// resent there and fails with an unknown outcome when the 1 s grace ends, long before its own
// 10 s timeout. The positive control is the
// same client before the notice: commands go to the old endpoint.
func TestMovingHandsOffToTheAnnouncedEndpoint(t *testing.T) {
	b, replayed := whoFake(t, "B", resp.NullValue, 1)
	a, _ := whoFake(t, "A", func() resp.Value { return resp.BulkString("127.0.0.1:" + strconv.Itoa(b.Port())) }, 1)
	c := maintClient(t, a, client.Options{CommandTimeout: 10 * time.Second,
		MaintenanceNotifications: client.MaintenanceAuto, MaintenanceRelaxedTimeout: 10 * time.Second})
	if got := who(t, c); got != "A" {
		t.Fatalf("before MOVING: %s", got)
	}
	hung := make(chan error, 1)
	var hungTook time.Duration
	go func() {
		start := time.Now()
		_, err := c.Do(context.Background(), "HANG")
		hungTook = time.Since(start)
		hung <- err
	}()
	// A WHO written on A before the client read the MOVING push stays behind HANG there and
	// ends with an unknown outcome at the grace; the next ones go to B.
	deadline := time.Now().Add(3 * time.Second)
	for {
		v, err := c.Do(context.Background(), "WHO")
		var early *client.UnknownOutcomeError
		if err != nil && !errors.As(err, &early) {
			t.Fatal(err)
		}
		if err == nil && string(v.Str) == "B" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("commands still go to A 3s after MOVING")
		}
		time.Sleep(20 * time.Millisecond)
	}
	select {
	case err := <-hung:
		var ue *client.UnknownOutcomeError
		if !errors.As(err, &ue) {
			t.Fatalf("the accepted command ended with %v, want an unknown outcome", err)
		}
		if hungTook > 5*time.Second {
			t.Fatalf("the old socket closed after %v: the 1s grace was not the drain budget", hungTook)
		}
		if replayed.Load() != 0 {
			t.Fatal("the accepted command was sent again to the new endpoint")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the old connection still holds its accepted command 5s after a 1s grace")
	}
}

// TestMovingWithoutEndpointReconnectsToTheConfiguredHost: a null MOVING endpoint dials the
// configured endpoint again (a fresh connection to the same fake here), and commands carry on.
func TestMovingWithoutEndpointReconnectsToTheConfiguredHost(t *testing.T) {
	a, _ := whoFake(t, "A", resp.NullValue, 1)
	c := maintClient(t, a, client.Options{MaintenanceNotifications: client.MaintenanceAuto})
	if got := who(t, c); got != "A" {
		t.Fatalf("before MOVING: %s", got)
	}
	before := len(a.Conns())
	if _, err := c.Do(context.Background(), "MOVE"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(3 * time.Second)
	for len(a.Conns()) <= before {
		if time.Now().After(deadline) {
			t.Fatal("no new connection to the configured endpoint after MOVING")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if got := who(t, c); got != "A" {
		t.Fatalf("after MOVING: %s", got)
	}
}

// TestMovingGraceWarns: when the grace closes an old connection that still owes a reply, the
// client logs one warning naming the connection, never the command or its arguments. A handoff
// whose old connection drained in time logs nothing (the control, MOVE answered at once).
func TestMovingGraceWarns(t *testing.T) {
	b, _ := whoFake(t, "B", resp.NullValue, 1)
	a, _ := whoFake(t, "A", func() resp.Value { return resp.BulkString("127.0.0.1:" + strconv.Itoa(b.Port())) }, 1)
	var logs syncBuffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	c := maintClient(t, a, client.Options{CommandTimeout: 10 * time.Second, Logger: logger,
		MaintenanceNotifications: client.MaintenanceAuto, MaintenanceRelaxedTimeout: 10 * time.Second})
	if _, err := c.Do(context.Background(), "MOVE"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond) // the first handoff's grace ends; its old socket had drained
	if strings.Contains(logs.String(), "grace ended") {
		t.Fatalf("a drained handoff warned: %s", logs.String())
	}
	// B announces MOVING (to the configured endpoint) while HANG waits: the grace closes the
	// socket that owes it.
	_, err := c.Do(context.Background(), "HANG", "secret-key")
	var ue *client.UnknownOutcomeError
	if !errors.As(err, &ue) {
		t.Fatalf("HANG ended with %v, want an unknown outcome at the grace", err)
	}
	out := logs.String()
	if strings.Count(out, "grace ended") != 1 || strings.Contains(out, "secret-key") || strings.Contains(out, "HANG") {
		t.Fatalf("log %q: want one warning naming no command or argument", out)
	}
}
