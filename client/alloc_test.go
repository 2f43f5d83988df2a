//go:build !race

// The race detector allocates on every synchronised access, so this file is left out of race
// builds; the benchmarks (bench_test.go) report the same figure.

package client_test

import (
	"context"
	"testing"

	"github.com/respire-go/respire/client"
	"github.com/respire-go/respire/netio/redistest"
)

// TestTypedHotPathAllocates nothing: a typed GET, SET or INCR on a healthy shared connection
// makes no allocation, whichever executor the generated method reaches it through.
func TestTypedHotPathAllocatesNothing(t *testing.T) {
	ctx := context.Background()
	c := allocClient(t)
	if err := c.Set(ctx, "alloc:k", "v"); err != nil {
		t.Fatal(err)
	}
	for name, fn := range map[string]func(){
		"Set":  func() { _ = c.Set(ctx, "alloc:k", "v") },
		"Get":  func() { _, _, _ = c.Get(ctx, "alloc:k") },
		"Incr": func() { _, _ = c.Incr(ctx, "alloc:n") },
	} {
		fn() // warm the pool
		if n := testing.AllocsPerRun(200, fn); n != 0 {
			t.Errorf("%s: %v allocations per call, want 0", name, n)
		}
	}
}

// TestListRepliesAllocateOncePerValue: a typed MGET of 10 keys allocates its result slice, one
// string per value and one element cursor for the whole reply, not one cursor per element.
func TestListRepliesAllocateOncePerValue(t *testing.T) {
	ctx := context.Background()
	c := allocClient(t)
	keys := make([]string, 10)
	for i := range keys {
		keys[i] = "alloc:m" + string(rune('0'+i))
		if err := c.Set(ctx, keys[i], "value"); err != nil {
			t.Fatal(err)
		}
	}
	mget := func() {
		vs, err := c.MGet(ctx, keys...)
		if err != nil || len(vs) != len(keys) || vs[9].Value != "value" {
			t.Fatalf("MGET: %v %v", vs, err)
		}
	}
	mget() // warm the pool
	if n := testing.AllocsPerRun(200, mget); n > float64(len(keys)+2) {
		t.Errorf("MGET of %d keys: %v allocations per call, want at most %d", len(keys), n, len(keys)+2)
	}
}

// allocClient returns a client of one connection to a redis-server of its own, closed with the test.
func allocClient(t *testing.T) *client.Client {
	t.Helper()
	redistest.Require(t)
	srv := redistest.Start(t, redistest.Config{})
	c, err := client.Connect(context.Background(), client.Options{Endpoints: []client.Endpoint{{Host: "127.0.0.1", Port: srv.Port()}}, Connections: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}
