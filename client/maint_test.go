package client_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/respire-go/respire/client"
	"github.com/respire-go/respire/netio/redistest"
	"github.com/respire-go/respire/netio/resp"
)

// maintFake starts a scripted RESP3 server that answers the handshake and then, for
// "SLOW <ms>", sends the pushes notices(...) returns, waits ms milliseconds and replies OK. It
// counts the CLIENT MAINT_NOTIFICATIONS commands it receives.
func maintFake(t *testing.T, notices func() []resp.Value) (*redistest.Fake, *atomic.Int32) {
	var optIns atomic.Int32
	f := redistest.StartFake(t, func(c *redistest.FakeConn, args []string) {
		if len(args) >= 2 && args[0] == "CLIENT" && args[1] == "MAINT_NOTIFICATIONS" {
			optIns.Add(1)
		}
		if c.Standard(args) {
			return
		}
		if args[0] == "SLOW" && len(args) == 2 {
			for _, n := range notices() {
				c.Reply(n)
			}
			d, _ := time.ParseDuration(args[1] + "ms")
			time.Sleep(d)
			c.Reply(resp.SimpleString("OK"))
			return
		}
		c.ErrorReply("ERR unknown command")
	})
	return f, &optIns
}

func maintPush(kind string, seq, secs int64) resp.Value {
	elems := []resp.Value{resp.BulkString(kind), resp.Int(seq)}
	if secs >= 0 {
		elems = append(elems, resp.Int(secs))
	}
	return resp.PushOf(elems...)
}

func maintClient(t *testing.T, f *redistest.Fake, o client.Options) *client.Client {
	t.Helper()
	o.Endpoints = []client.Endpoint{{Host: f.Host(), Port: f.Port()}}
	c, err := client.Connect(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// slow runs SLOW ms and returns how long it took and its error.
func slow(c *client.Client, ms string) (time.Duration, error) {
	start := time.Now()
	_, err := c.Do(context.Background(), "SLOW", ms)
	return time.Since(start), err
}

// TestMaintenanceRelaxesCommandTimeout: a MIGRATING notice that arrives while a command waits
// extends its deadline to MaintenanceRelaxedTimeout from its start, so a reply slower than
// CommandTimeout still arrives. The positive control is the same server and command without
// the opt-in: the notice is ignored and the command times out.
func TestMaintenanceRelaxesCommandTimeout(t *testing.T) {
	f, optIns := maintFake(t, func() []resp.Value { return []resp.Value{maintPush("MIGRATING", 1, 5)} })
	o := client.Options{CommandTimeout: 150 * time.Millisecond, MaintenanceRelaxedTimeout: 5 * time.Second}

	o.MaintenanceNotifications = client.MaintenanceAuto
	c := maintClient(t, f, o)
	took, err := slow(c, "500")
	if err != nil {
		t.Fatalf("relaxed command failed after %v: %v", took, err)
	}
	if took < 450*time.Millisecond || optIns.Load() == 0 {
		t.Fatalf("the reply took %v (opt-ins %d): the slow reply never happened", took, optIns.Load())
	}

	// Positive control: without the opt-in the same reply is too slow.
	before := optIns.Load()
	o.MaintenanceNotifications = client.MaintenanceDisabled
	d := maintClient(t, f, o)
	_, err = slow(d, "500")
	var te *client.TimeoutError
	if !errors.As(err, &te) {
		t.Fatalf("without maintenance notifications: %v, want a *TimeoutError", err)
	}
	if optIns.Load() != before {
		t.Fatal("a Disabled client sent CLIENT MAINT_NOTIFICATIONS")
	}
}

// TestMaintenanceCompletionRestoresTimeout: MIGRATED closes the window, so a command that waits
// after it has its own timeout again.
func TestMaintenanceCompletionRestoresTimeout(t *testing.T) {
	f, _ := maintFake(t, func() []resp.Value {
		return []resp.Value{maintPush("MIGRATING", 1, 5), maintPush("MIGRATED", 2, -1)}
	})
	c := maintClient(t, f, client.Options{CommandTimeout: 150 * time.Millisecond,
		MaintenanceNotifications: client.MaintenanceEnabled, Protocol: client.ProtocolRESP3,
		MaintenanceRelaxedTimeout: 5 * time.Second})
	took, err := slow(c, "600")
	var te *client.TimeoutError
	if !errors.As(err, &te) || took >= 600*time.Millisecond {
		t.Fatalf("after MIGRATED: %v after %v, want a timeout before the reply", err, took)
	}
}

// TestMaintenanceWindowEndsRelaxation: without its completion a window ends after
// MaintenanceWindowTimeout; a command older than its own timeout then times out at once, well
// before the relaxed deadline.
func TestMaintenanceWindowEndsRelaxation(t *testing.T) {
	f, _ := maintFake(t, func() []resp.Value { return []resp.Value{maintPush("FAILING_OVER", 1, 30)} })
	c := maintClient(t, f, client.Options{CommandTimeout: 100 * time.Millisecond,
		MaintenanceNotifications:  client.MaintenanceAuto,
		MaintenanceRelaxedTimeout: 5 * time.Second, MaintenanceWindowTimeout: 300 * time.Millisecond})
	took, err := slow(c, "1500")
	var te *client.TimeoutError
	if !errors.As(err, &te) {
		t.Fatalf("%v, want a *TimeoutError", err)
	}
	if took < 250*time.Millisecond || took > 1200*time.Millisecond {
		t.Fatalf("timed out after %v, want about the window's end (300ms), not the own timeout or the relaxed one", took)
	}
}

// TestMaintenanceHandshakeAgainstRedis70: Redis 7.0 does not know CLIENT MAINT_NOTIFICATIONS.
// Auto connects with the feature off; Enabled fails the setup with the server's rejection.
func TestMaintenanceHandshakeAgainstRedis70(t *testing.T) {
	redistest.Require(t)
	srv := redistest.Start(t, redistest.Config{})
	ep := []client.Endpoint{{Host: "127.0.0.1", Port: srv.Port()}}
	ctx := context.Background()
	c, err := client.Connect(ctx, client.Options{Endpoints: ep, MaintenanceNotifications: client.MaintenanceAuto})
	if err != nil {
		t.Fatalf("Auto against Redis 7.0: %v", err)
	}
	if _, err := c.Do(ctx, "PING"); err != nil {
		t.Fatal(err)
	}
	_ = c.Close()

	policy := &client.ReconnectPolicy{MaxAttempts: 1}
	_, err = client.Connect(ctx, client.Options{Endpoints: ep, MaintenanceNotifications: client.MaintenanceEnabled,
		ReconnectPolicy: policy, ConnectTimeout: 2 * time.Second})
	if err == nil {
		t.Fatal("Enabled against Redis 7.0 connected")
	}
	if got := err.Error(); !strings.Contains(got, "MAINT_NOTIFICATIONS") {
		t.Fatalf("error %q does not name the rejected setup command", got)
	}
}

// TestMaintenanceCompletionEndsKeptCommand: a command that MIGRATING kept alive past its own
// timeout times out as soon as MIGRATED closes the window, not at its relaxed deadline or at
// the reply (engine.Relax.Shrunk). Before the shrink wake-up the call slept until the relaxed
// deadline and the late reply completed it.
func TestMaintenanceCompletionEndsKeptCommand(t *testing.T) {
	f := redistest.StartFake(t, func(c *redistest.FakeConn, args []string) {
		if c.Standard(args) {
			return
		}
		if args[0] == "SLOW" {
			c.Reply(maintPush("MIGRATING", 1, 30))
			time.Sleep(300 * time.Millisecond)
			c.Reply(maintPush("MIGRATED", 2, -1))
			time.Sleep(1500 * time.Millisecond)
			c.Reply(resp.SimpleString("OK"))
			return
		}
		c.ErrorReply("ERR unknown command")
	})
	c := maintClient(t, f, client.Options{CommandTimeout: 100 * time.Millisecond,
		MaintenanceNotifications: client.MaintenanceAuto, MaintenanceRelaxedTimeout: 5 * time.Second})
	took, err := slow(c, "0")
	var te *client.TimeoutError
	if !errors.As(err, &te) {
		t.Fatalf("%v after %v, want a *TimeoutError when MIGRATED closed the window", err, took)
	}
	if took < 250*time.Millisecond || took > 1200*time.Millisecond {
		t.Fatalf("timed out after %v, want about when MIGRATED arrived (300ms)", took)
	}
}
