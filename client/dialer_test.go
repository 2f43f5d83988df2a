package client_test

import (
	"context"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/respire-go/respire/client"
	"github.com/respire-go/respire/netio/redistest"
)

// TestDialerReceivesEveryPhysicalConnection: the custom dialer opens the initial connections and
// every replacement, receives the configured destination each time, and gets a context bounded
// by ConnectTimeout.
func TestDialerReceivesEveryPhysicalConnection(t *testing.T) {
	redistest.Require(t)
	srv := redistest.Start(t, redistest.Config{})
	logical := client.Endpoint{Host: "cache.internal", Port: 6379} // only the dialer resolves it
	var mu sync.Mutex
	var got []client.Endpoint
	var deadlines []time.Duration
	dialer := func(ctx context.Context, ep client.Endpoint) (net.Conn, error) {
		dl, ok := ctx.Deadline()
		mu.Lock()
		got = append(got, ep)
		if ok {
			deadlines = append(deadlines, time.Until(dl))
		}
		mu.Unlock()
		var d net.Dialer
		return d.DialContext(ctx, "tcp", srv.Addr())
	}
	ctx := ctxT(t)
	c, err := client.Connect(ctx, client.Options{Endpoints: []client.Endpoint{logical}, Connections: 2,
		ClientName: "dialed", ConnectTimeout: 2 * time.Second, Dialer: dialer})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	must(t, c.Ping(ctx))
	srv.Do(t, "CLIENT", "KILL", "TYPE", "normal")
	waitUntil(t, "replacements", func() bool { return c.Ping(ctx) == nil && len(clientIDs(t, srv, "dialed")) == 2 })
	mu.Lock()
	defer mu.Unlock()
	if len(got) < 4 {
		t.Fatalf("the dialer opened %d connections, want the 2 initial ones and their replacements", len(got))
	}
	for i, ep := range got {
		if ep != logical {
			t.Fatalf("dial %d received %v, want %v", i, ep, logical)
		}
	}
	if len(deadlines) != len(got) {
		t.Fatal("a dial context without a deadline")
	}
	for _, d := range deadlines {
		if d <= 0 || d > 2*time.Second {
			t.Fatalf("dial context deadline %v away, want within ConnectTimeout", d)
		}
	}
}

// lateConn records whether it was closed.
type lateConn struct {
	net.Conn
	closed atomic.Bool
}

func (c *lateConn) Close() error {
	c.closed.Store(true)
	return c.Conn.Close()
}

// TestDialerLateConnectionIsClosed: a dialer that ignores its context and returns a connection
// after ConnectTimeout expired has that connection closed, and the attempt fails as a connect
// timeout.
func TestDialerLateConnectionIsClosed(t *testing.T) {
	redistest.Require(t)
	srv := redistest.Start(t, redistest.Config{})
	late := make(chan *lateConn, 1)
	dialer := func(ctx context.Context, _ client.Endpoint) (net.Conn, error) {
		<-ctx.Done()
		nc, err := net.Dial("tcp", srv.Addr())
		if err != nil {
			return nil, err
		}
		lc := &lateConn{Conn: nc}
		late <- lc
		return lc, nil
	}
	_, err := client.Connect(ctxT(t), client.Options{Endpoints: []client.Endpoint{endpointOf(srv)},
		ConnectTimeout: 100 * time.Millisecond, Dialer: dialer})
	var te *client.TimeoutError
	if !errors.As(err, &te) || te.Diagnostics.Stage != client.StageConnecting {
		t.Fatalf("Connect with a late dialer: %v, want a connect timeout", err)
	}
	select {
	case lc := <-late:
		waitUntil(t, "the late connection to close", lc.closed.Load)
	case <-time.After(5 * time.Second):
		t.Fatal("the dialer never returned")
	}
}
