package client_test

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/respire-go/respire/client"
	"github.com/respire-go/respire/netio/redistest"
	"github.com/respire-go/respire/netio/resp"
)

// liveHeap returns the live heap after two collections.
func liveHeap() int64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

// largeValueClient starts a server holding a value of size bytes under "big" and a client on
// one connection that has already used that connection.
func largeValueClient(tb testing.TB, size int) (*client.Client, context.Context) {
	tb.Helper()
	redistest.Require(tb)
	srv := redistest.Start(tb, redistest.Config{})
	ctx, cancel := context.WithCancel(context.Background())
	tb.Cleanup(cancel)
	// The test is about memory, not time: a 64 MiB reply under the race detector on a busy
	// machine may take longer than the default 10 s command timeout.
	c, err := client.Connect(ctx, client.Options{Endpoints: []client.Endpoint{{Host: "127.0.0.1", Port: srv.Port()}},
		CommandTimeout: time.Minute})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = c.Close() })
	if err := c.Set(ctx, "big", strings.Repeat("v", size)); err != nil {
		tb.Fatal(err)
	}
	if err := c.Ping(ctx); err != nil {
		tb.Fatal(err)
	}
	return c, ctx
}

const largeValueSize = 64 << 20

// TestLargeReplyMemoryIsReturned reads one 64 MiB value and checks, with runtime.ReadMemStats
// after GC, that the client gives the memory back once the value is dropped: the connection's
// read buffer and the reply storage shrink to a small bound. Before the fix the client kept about
// 130 MiB (a 128 MiB read buffer and a 64 MiB reply arena) for its whole life.
func TestLargeReplyMemoryIsReturned(t *testing.T) {
	c, ctx := largeValueClient(t, largeValueSize)
	base := liveHeap()
	v, found, err := c.Get(ctx, "big")
	if err != nil || !found || len(v) != largeValueSize {
		t.Fatalf("GET big: %d bytes, found=%v, %v", len(v), found, err)
	}
	held := liveHeap() - base
	runtime.KeepAlive(v)
	v = ""
	// The connection goes on with small commands, as a service would.
	for range 10 {
		if err := c.Ping(ctx); err != nil {
			t.Fatal(err)
		}
	}
	retained := liveHeap() - base
	t.Logf("value %d B: held %d B while the value lived, retained %d B after", largeValueSize, held, retained)
	// While the caller holds the string, the client itself holds at most a small bound more.
	if held > largeValueSize+largeValueSize/8 {
		t.Errorf("held %d B for a %d B value: the client keeps the reply's storage besides the caller's copy", held, largeValueSize)
	}
	if retained > 4<<20 {
		t.Errorf("the client retains %d B after one %d B reply: buffers did not shrink", retained, largeValueSize)
	}
}

// BenchmarkLargeGetMemory reads one 64 MiB value per op from a real server. B/op includes the
// returned string (one copy of the value). held-B is the live heap right after GET returned,
// while the value is held; retained-B is what the client keeps once the value is dropped (both
// measured after GC, relative to the heap before the first large reply).
func BenchmarkLargeGetMemory(b *testing.B) {
	c, ctx := largeValueClient(b, largeValueSize)
	var held, retained int64
	base := liveHeap() // before the first large reply
	b.ReportAllocs()
	b.SetBytes(largeValueSize)
	for b.Loop() {
		v, _, err := c.Get(ctx, "big")
		if err != nil || len(v) != largeValueSize {
			b.Fatal(len(v), err)
		}
		b.StopTimer()
		held = liveHeap() - base
		runtime.KeepAlive(v)
		v = ""
		if err := c.Ping(ctx); err != nil {
			b.Fatal(err)
		}
		retained = liveHeap() - base
		b.StartTimer()
	}
	b.ReportMetric(float64(held), "held-B")
	b.ReportMetric(float64(retained), "retained-B")
}

// TestDoHandsOverLargeReplies checks that Do gives the caller a large reply's storage instead of
// copying it: reading a 64 MiB value through Do allocates at most about twice its size (the
// storage growing as the bytes arrive), where a copy would add a third, and nothing stays with
// the client once the caller drops the value.
func TestDoHandsOverLargeReplies(t *testing.T) {
	c, ctx := largeValueClient(t, largeValueSize)
	base := liveHeap()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	v, err := c.Do(ctx, "GET", "big")
	runtime.ReadMemStats(&after)
	if err != nil || len(v.Str) != largeValueSize || v.Str[0] != 'v' {
		t.Fatalf("Do GET big: %d bytes, %v", len(v.Str), err)
	}
	allocated := int64(after.TotalAlloc - before.TotalAlloc)
	held := liveHeap() - base
	runtime.KeepAlive(v)
	v = resp.Value{}
	if err := c.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	retained := liveHeap() - base
	t.Logf("allocated %d B, held %d B, retained %d B", allocated, held, retained)
	if allocated > 2*largeValueSize+1<<20 {
		t.Errorf("Do allocated %d B for a %d B value: the reply was copied", allocated, largeValueSize)
	}
	if held > largeValueSize+1<<20 {
		t.Errorf("held %d B while the caller holds a %d B reply", held, largeValueSize)
	}
	if retained > 4<<20 {
		t.Errorf("the client retains %d B after the caller dropped the reply", retained)
	}
}
