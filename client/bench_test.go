package client_test

import (
	"context"
	"testing"

	"github.com/respire-go/respire/client"
	"github.com/respire-go/respire/netio/redistest"
)

// benchClient connects a client to a fresh server for a benchmark.
func benchClient(b *testing.B) *client.Client {
	b.Helper()
	srv := redistest.Start(b, redistest.Config{})
	c, err := client.Connect(context.Background(), client.Options{Endpoints: []client.Endpoint{{Host: "127.0.0.1", Port: srv.Port()}}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = c.Close() })
	return c
}

// BenchmarkTypedCommands measures the hot path of typed commands on a healthy shared
// connection: parallel callers, allocations per operation reported. Every reply is checked
// against its command's shape on the connection's reader.
func BenchmarkTypedCommands(b *testing.B) {
	c := benchClient(b)
	ctx := context.Background()
	if err := c.Set(ctx, "bench:k", "v"); err != nil {
		b.Fatal(err)
	}
	b.Run("Set", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if err := c.Set(ctx, "bench:k", "v"); err != nil {
					b.Fatal(err)
				}
			}
		})
	})
	b.Run("Get", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, _, err := c.Get(ctx, "bench:k"); err != nil {
					b.Fatal(err)
				}
			}
		})
	})
	b.Run("Incr", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := c.Incr(ctx, "bench:n"); err != nil {
					b.Fatal(err)
				}
			}
		})
	})
}

// BenchmarkDo measures a raw command: encoding, classification from the encoded bytes (the
// command table), the round trip and the cloned reply.
func BenchmarkDo(b *testing.B) {
	c := benchClient(b)
	ctx := context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := c.Do(ctx, "SET", []byte("bench:raw"), 42); err != nil {
				b.Fatal(err)
			}
		}
	})
}
