package client_test

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/respire-go/respire/client"
	"github.com/respire-go/respire/netio/redistest"
)

// BenchmarkTracedCommands measures typed GET and SET with tracing off, with a no-op
// TracerProvider and with the SDK's (every span sampled, exported to a no-op exporter), and with
// the SDK's MeterProvider (db.client.operation.duration and the other per-operation metrics), to
// show what each costs per command. Off is the hot path of BenchmarkTypedCommands: 0
// allocations.
func BenchmarkTracedCommands(b *testing.B) {
	srv := redistest.Start(b, redistest.Config{})
	for _, mode := range []struct {
		name string
		tp   trace.TracerProvider
		mp   metric.MeterProvider
	}{
		{"off", nil, nil},
		{"noop", noop.NewTracerProvider(), nil},
		{"sdk", sdktrace.NewTracerProvider(sdktrace.WithSyncer(tracetest.NewNoopExporter())), nil},
		{"metrics", nil, sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))},
	} {
		c, err := client.Connect(context.Background(), client.Options{
			Endpoints: []client.Endpoint{{Host: "127.0.0.1", Port: srv.Port()}}, TracerProvider: mode.tp,
			MeterProvider: mode.mp})
		if err != nil {
			b.Fatal(err)
		}
		ctx := context.Background()
		if err := c.Set(ctx, "bench:k", "v"); err != nil {
			b.Fatal(err)
		}
		b.Run("mode="+mode.name+"/Set", func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if err := c.Set(ctx, "bench:k", "v"); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
		b.Run("mode="+mode.name+"/Get", func(b *testing.B) {
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
