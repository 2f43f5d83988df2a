package client_test

import (
	"context"
	"strconv"
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

// BenchmarkBatch measures explicit batches of 100 commands on a shared connection, reusing
// the Batch: one op is one batch of 100 (futures come in blocks of 32; values are the
// allocations left).
func BenchmarkBatch(b *testing.B) {
	c := benchClient(b)
	ctx := context.Background()
	keys := make([]string, 100)
	for i := range keys {
		keys[i] = "bench:batch:" + strconv.Itoa(i)
	}
	b.Run("Pipeline100Get", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			var batch client.Batch
			for pb.Next() {
				for _, k := range keys {
					batch.Get(k)
				}
				if err := c.Pipeline(ctx, &batch); err != nil {
					b.Fatal(err)
				}
			}
		})
	})
	b.Run("Pipeline100Set", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			var batch client.Batch
			for pb.Next() {
				for _, k := range keys {
					batch.Set(k, "v")
				}
				if err := c.Pipeline(ctx, &batch); err != nil {
					b.Fatal(err)
				}
			}
		})
	})
	b.Run("Atomic100Set", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			var batch client.Batch
			for pb.Next() {
				for _, k := range keys {
					batch.Set(k, "v")
				}
				if err := c.Atomic(ctx, &batch); err != nil {
					b.Fatal(err)
				}
			}
		})
	})
}
