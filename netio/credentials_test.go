package netio_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/netio"
	"github.com/respire-go/respire/netio/redistest"
)

// TestCredentialsAskedPerAttempt: the provider is asked once per connection attempt, and what it
// returns authenticates that attempt, whatever Handshake holds.
func TestCredentialsAskedPerAttempt(t *testing.T) {
	srv := redistest.Start(t, redistest.Config{Password: "first"})
	var password atomic.Value
	password.Store("first")
	var calls atomic.Int32
	tr := netio.NewTransport(netio.TransportConfig{
		Handshake: netio.HandshakeConfig{Password: "ignored"},
		Credentials: func(ctx context.Context) (string, string, error) {
			calls.Add(1)
			if _, ok := ctx.Deadline(); !ok {
				t.Error("the provider's context has no deadline")
			}
			return "", password.Load().(string), nil
		},
	})
	ep := tcp(t, srv.Addr())
	conn, _ := mustConnect(t, tr, ep)
	if v := do(t, conn, "PING"); string(v.Str) != "PONG" {
		t.Fatalf("PING replied %v", v)
	}
	srv.Do(t, "CONFIG", "SET", "requirepass", "second")
	r := mustFail(t, context.Background(), tr, ep)
	if r.class != fsm.Permanent {
		t.Fatalf("the old password: %v (%v), want a permanent rejection", r.err, r.class)
	}
	password.Store("second")
	mustConnect(t, tr, ep)
	if calls.Load() != 3 {
		t.Fatalf("provider asked %d times for 3 attempts", calls.Load())
	}
}

func TestCredentialProviderFailure(t *testing.T) {
	srv := redistest.Start(t, redistest.Config{})
	boom := errors.New("token service unavailable")
	tr := netio.NewTransport(netio.TransportConfig{
		Credentials: func(context.Context) (string, string, error) { return "", "", boom },
	})
	r := mustFail(t, context.Background(), tr, tcp(t, srv.Addr()))
	var ce *netio.CredentialError
	var conn *netio.ConnectError
	if !errors.As(r.err, &ce) || !errors.Is(r.err, boom) || !errors.As(r.err, &conn) ||
		conn.Stage != netio.StageHandshake || r.class != fsm.Transient {
		t.Fatalf("got %v (%v), want a transient handshake-stage *CredentialError", r.err, r.class)
	}

	// A provider that hangs is bounded by the handshake budget.
	tr = netio.NewTransport(netio.TransportConfig{
		HandshakeTimeout: 100 * time.Millisecond,
		Credentials: func(ctx context.Context) (string, string, error) {
			<-ctx.Done()
			return "", "", ctx.Err()
		},
	})
	start := time.Now()
	r = mustFail(t, context.Background(), tr, tcp(t, srv.Addr()))
	if !errors.As(r.err, &conn) || !conn.TimedOut || time.Since(start) > 5*time.Second {
		t.Fatalf("got %v after %v, want a handshake timeout", r.err, time.Since(start))
	}
}
