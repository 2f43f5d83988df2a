package client_test

import (
	"context"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/respire-go/respire/client"
	"github.com/respire-go/respire/netio/redistest"
)

// BenchmarkTracedCommands measures typed GET and SET with tracing off, with a no-op
// TracerProvider and with the SDK's (every span sampled, exported to a no-op exporter), to show
// what tracing costs per command. Off is the hot path of BenchmarkTypedCommands: 0 allocations.
func BenchmarkTracedCommands(b *testing.B) {
	srv := redistest.Start(b, redistest.Config{})
	for _, mode := range []struct {
		name string
		tp   trace.TracerProvider
	}{
		{"off", nil},
		{"noop", noop.NewTracerProvider()},
		{"sdk", sdktrace.NewTracerProvider(sdktrace.WithSyncer(tracetest.NewNoopExporter()))},
	} {
		c, err := client.Connect(context.Background(), client.Options{
			Endpoints: []client.Endpoint{{Host: "127.0.0.1", Port: srv.Port()}}, TracerProvider: mode.tp})
		if err != nil {
			b.Fatal(err)
		}
		ctx := context.Background()
		if err := c.Set(ctx, "bench:k", "v"); err != nil {
			b.Fatal(err)
		}
		b.Run("tracer="+mode.name+"/Set", func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if err := c.Set(ctx, "bench:k", "v"); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
		b.Run("tracer="+mode.name+"/Get", func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, _, err := c.Get(ctx, "bench:k"); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
		_ = c.Close()
	}
}
