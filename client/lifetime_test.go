package client_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/respire-go/respire/client"
	"github.com/respire-go/respire/netio/redistest"
)

// syncBuffer is a log sink safe for concurrent writers.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// clientIDs returns the ids of the server's connections named name (CLIENT LIST).
func clientIDs(t *testing.T, srv *redistest.Server, name string) []string {
	t.Helper()
	var ids []string
	for _, line := range strings.Split(srv.Do(t, "CLIENT", "LIST"), "\n") {
		if !strings.Contains(line, " name="+name+" ") {
			continue
		}
		for _, f := range strings.Fields(line) {
			if id, ok := strings.CutPrefix(f, "id="); ok {
				ids = append(ids, id)
			}
		}
	}
	return ids
}

// TestLifetimeRecyclingRealServer: with a 200 ms lifetime the server sees the client's
// connections rotate (CLIENT LIST) while a concurrent workload runs without a single error; every
// recycle is observed (ConnectionRecycled logged at Information level) and none is a
// disconnection.
func TestLifetimeRecyclingRealServer(t *testing.T) {
	redistest.Require(t)
	checkNoLeaks(t)
	srv := redistest.Start(t, redistest.Config{})
	logs := &syncBuffer{}
	var recycled, disconnected atomic.Int64
	const name = "lifetime-test"
	c, err := client.Connect(ctxT(t), client.Options{
		Endpoints: []client.Endpoint{endpointOf(srv)}, Connections: 2, ClientName: name,
		ConnectionMaxLifetime: 200 * time.Millisecond, ConnectionMaxLifetimeJitter: 50 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo})),
		OnConnectionStateChange: func(ch client.ConnectionStateChange) {
			switch {
			case ch.Recycle == client.RecyclePublished:
				recycled.Add(1)
			case ch.SourceState == client.SourceDisconnected:
				disconnected.Add(1)
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	ctx := ctxT(t)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var ops atomic.Int64
	errs := make(chan error, 8)
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			key := fmt.Sprintf("lifetime:%d", w)
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := c.Incr(ctx, key); err != nil {
					errs <- err
					return
				}
				ops.Add(1)
			}
		}()
	}
	seen := map[string]bool{}
	maxAtOnce := 0
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		ids := clientIDs(t, srv, name)
		maxAtOnce = max(maxAtOnce, len(ids))
		for _, id := range ids {
			seen[id] = true
		}
		time.Sleep(20 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	close(errs)
	t.Logf("%d INCRs, %d distinct connections in CLIENT LIST, at most %d at once", ops.Load(), len(seen), maxAtOnce)
	for err := range errs {
		t.Fatalf("a command failed while connections rotated: %v", err)
	}
	// Two slots, each replaced every 200-250 ms for 2 s: about 16 replacements.
	if len(seen) < 10 {
		t.Fatalf("CLIENT LIST showed %d distinct connections in 2 s, want the connections to rotate", len(seen))
	}
	// At most a draining old connection beside each slot's new one.
	if maxAtOnce > 4 {
		t.Fatalf("%d connections at once for 2 slots", maxAtOnce)
	}
	if ops.Load() < 100 {
		t.Fatalf("only %d operations ran", ops.Load())
	}
	// Every INCR was applied exactly once: the counters add up.
	var sum int64
	for w := 0; w < 8; w++ {
		v, ok, err := c.Get(ctx, fmt.Sprintf("lifetime:%d", w))
		if err != nil || !ok {
			t.Fatalf("GET: %v %v", ok, err)
		}
		var n int64
		fmt.Sscan(v, &n)
		sum += n
	}
	if sum != ops.Load() {
		t.Fatalf("counters sum to %d, but %d INCRs succeeded", sum, ops.Load())
	}
	c.Close()
	if recycled.Load() < 8 || disconnected.Load() != 0 {
		t.Fatalf("observed %d recycles and %d disconnections", recycled.Load(), disconnected.Load())
	}
	if out := logs.String(); !strings.Contains(out, "event=ConnectionRecycled") || !strings.Contains(out, "level=INFO") {
		t.Fatalf("no ConnectionRecycled information event logged:\n%s", out)
	}
}

// TestLifetimeDisabledKeepsConnections: without a lifetime the connections never change.
func TestLifetimeDisabledKeepsConnections(t *testing.T) {
	redistest.Require(t)
	srv := redistest.Start(t, redistest.Config{})
	const name = "lifetime-off"
	c, err := client.Connect(ctxT(t), client.Options{Endpoints: []client.Endpoint{endpointOf(srv)}, Connections: 2, ClientName: name})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	before := strings.Join(clientIDs(t, srv, name), ",")
	for i := 0; i < 20; i++ {
		must(t, c.Ping(context.Background()))
		time.Sleep(10 * time.Millisecond)
	}
	if after := strings.Join(clientIDs(t, srv, name), ","); after != before || before == "" {
		t.Fatalf("connections changed without a lifetime: %q -> %q", before, after)
	}
}
