package bench

import (
	"context"
	"net"
	"strconv"
	"testing"

	"github.com/redis/go-redis/extra/redisotel/v9"
	goredis "github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/respire-go/respire/client"
)

// The cost of tracing, side by side: each client's GET and SET with tracing off, with a no-op
// TracerProvider (instrumented, but nothing recorded), and with the SDK's provider sampling
// every span into a no-op exporter (every span built and ended).
//
// go-redis is instrumented with redisotel, without the statement (respire records no arguments
// by default either). rueidisotel is a module of its own that the module proxy this project
// uses does not serve, so rueidis is traced by tracedRueidis below: a hand-written wrapper of
// rueidis.Client that does what rueidisotel's Do does (a client span per command with the
// database attributes, the error status), and no more.

// tracers are the tracing modes compared.
var tracers = []struct {
	name string
	tp   func() trace.TracerProvider // nil: tracing off
}{
	{"off", nil},
	{"noop", func() trace.TracerProvider { return noop.NewTracerProvider() }},
	{"sdk", func() trace.TracerProvider {
		return sdktrace.NewTracerProvider(sdktrace.WithSyncer(tracetest.NewNoopExporter()))
	}},
}

func openTraced(b *testing.B, kind string, tp trace.TracerProvider) target {
	b.Helper()
	host, port, err := net.SplitHostPort(benchAddr)
	if err != nil {
		b.Fatal(err)
	}
	p, _ := strconv.Atoi(port)
	var t target
	switch kind {
	case "respire":
		c, err := client.Connect(context.Background(), client.Options{Endpoints: []client.Endpoint{{Host: host, Port: p}},
			TracerProvider: tp})
		if err != nil {
			b.Fatal(err)
		}
		t = respireTarget{c}
	case "go-redis":
		c := goredis.NewClient(&goredis.Options{Addr: benchAddr})
		if tp != nil {
			if err := redisotel.InstrumentTracing(c, redisotel.WithTracerProvider(tp), redisotel.WithDBStatement(false)); err != nil {
				b.Fatal(err)
			}
		}
		t = goredisTarget{c}
	case "rueidis":
		c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{benchAddr}})
		if err != nil {
			b.Fatal(err)
		}
		if tp != nil {
			c = tracedRueidis{Client: c, tracer: tp.Tracer("bench/rueidis"),
				attrs: []attribute.KeyValue{attribute.String("db.system.name", "redis"),
					attribute.String("server.address", host), attribute.Int("server.port", p)}}
		}
		t = rueidisTarget{c}
	}
	b.Cleanup(t.close)
	return t
}

// BenchmarkTracing measures GET and SET at 1 and 16 callers for each client and tracing mode.
func BenchmarkTracing(b *testing.B) {
	if benchAddr == "" {
		b.Fatal("RESPIRE_BENCH_ADDR is not set: run bench/run.sh, which starts its own redis-server")
	}
	openAll(b) // seeds the keys
	ops := []struct {
		name string
		op   func(t target, caller int) func() error
	}{
		{"GET", func(t target, caller int) func() error {
			ctx, i := context.Background(), caller*131
			return func() error { i++; return t.get(ctx, keys[i%keyCount]) }
		}},
		{"SET", func(t target, caller int) func() error {
			ctx, i := context.Background(), caller*131
			return func() error { i++; return t.set(ctx, keys[i%keyCount], value) }
		}},
	}
	for _, o := range ops {
		b.Run(o.name, func(b *testing.B) {
			for _, callers := range []int{1, 16} {
				b.Run("callers="+strconv.Itoa(callers), func(b *testing.B) {
					for _, tr := range tracers {
						b.Run("tracer="+tr.name, func(b *testing.B) {
							for _, kind := range []string{"respire", "go-redis", "rueidis"} {
								var tp trace.TracerProvider
								if tr.tp != nil {
									tp = tr.tp()
								}
								t := openTraced(b, kind, tp)
								b.Run("client="+kind, func(b *testing.B) {
									measure(b, callers, func(caller int) func() error { return o.op(t, caller) })
								})
							}
						})
					}
				})
			}
		})
	}
}

// tracedRueidis gives every Do a client span, as rueidisotel does.
type tracedRueidis struct {
	rueidis.Client
	tracer trace.Tracer
	attrs  []attribute.KeyValue
}

func (t tracedRueidis) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	name := cmd.Commands()[0]
	ctx, span := t.tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(t.attrs...), trace.WithAttributes(attribute.String("db.operation.name", name)))
	res := t.Client.Do(ctx, cmd)
	if err := res.Error(); err != nil && !rueidis.IsRedisNil(err) {
		span.SetStatus(codes.Error, "error")
	}
	span.End()
	return res
}
