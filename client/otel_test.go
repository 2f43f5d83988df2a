package client_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/respire-go/respire/client"
	"github.com/respire-go/respire/netio/redistest"
)

// attrsOf indexes attributes by key.
func attrsOf(kvs []attribute.KeyValue) map[string]attribute.Value {
	m := make(map[string]attribute.Value, len(kvs))
	for _, kv := range kvs {
		m[string(kv.Key)] = kv.Value
	}
	return m
}

// spanNamed returns the only span called name.
func spanNamed(t *testing.T, spans tracetest.SpanStubs, name string) tracetest.SpanStub {
	t.Helper()
	var found []tracetest.SpanStub
	for _, s := range spans {
		if s.Name == name {
			found = append(found, s)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d spans named %q, want 1 (spans: %v)", len(found), name, spanNames(spans))
	}
	return found[0]
}

func spanNames(spans tracetest.SpanStubs) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name)
	}
	return out
}

// checkDBAttrs checks the database semantic-convention attributes every span carries.
func checkDBAttrs(t *testing.T, s tracetest.SpanStub, op string, port int) {
	t.Helper()
	a := attrsOf(s.Attributes)
	want := map[string]any{"db.system.name": "redis", "db.operation.name": op, "db.namespace": "0",
		"server.address": "127.0.0.1", "server.port": int64(port)}
	for k, v := range want {
		got, ok := a[k]
		if !ok || got.AsInterface() != v {
			t.Errorf("span %s: %s = %v (set %v), want %v", s.Name, k, got.AsInterface(), ok, v)
		}
	}
	if s.SpanKind != trace.SpanKindClient {
		t.Errorf("span %s: kind %v, want client", s.Name, s.SpanKind)
	}
}

// noUserData fails if any attribute or event of the spans holds the marker, which the test put
// in every key and value it sent.
func noUserData(t *testing.T, spans tracetest.SpanStubs, marker string) {
	t.Helper()
	for _, s := range spans {
		all := slices.Clone(s.Attributes)
		for _, e := range s.Events {
			all = append(all, e.Attributes...)
		}
		for _, kv := range all {
			if strings.Contains(kv.Value.String(), marker) {
				t.Errorf("span %s: attribute %s holds user data", s.Name, kv.Key)
			}
		}
		if strings.Contains(s.Status.Description, marker) {
			t.Errorf("span %s: status holds user data", s.Name)
		}
	}
}

// TestTracingSpans: with a TracerProvider, a command, a failed command, a pipeline and a
// transaction each get a client span with the database semantic conventions' attributes, as
// children of the caller's span; the pipeline's commands are events; keys and values appear
// nowhere.
func TestTracingSpans(t *testing.T) {
	redistest.Require(t)
	srv := redistest.Start(t, redistest.Config{})
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	ctx := context.Background()
	c, err := client.Connect(ctx, client.Options{Endpoints: []client.Endpoint{{Host: "127.0.0.1", Port: srv.Port()}},
		Connections: 1, TracerProvider: tp})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, parent := tp.Tracer("test").Start(ctx, "parent")
	if err := c.Set(ctx, "secretmark:k", "secretmark-v"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.LPush(ctx, "secretmark:k", "secretmark-x"); err == nil {
		t.Fatal("LPUSH on a string succeeded")
	}
	var b client.Batch
	b.Incr("secretmark:n")
	b.LPush("secretmark:k", "secretmark-y")
	if err := c.Pipeline(ctx, &b); err == nil {
		t.Fatal("the pipeline's LPUSH succeeded")
	}
	b.Incr("secretmark:n")
	b.Incr("secretmark:n")
	if err := c.Atomic(ctx, &b); err != nil {
		t.Fatal(err)
	}
	parent.End()
	spans := exp.GetSpans()

	set := spanNamed(t, spans, "SET")
	checkDBAttrs(t, set, "SET", srv.Port())
	if set.Parent.SpanID() != parent.SpanContext().SpanID() {
		t.Errorf("SET's parent is %v, want the caller's span", set.Parent.SpanID())
	}
	if set.Status.Code != codes.Unset {
		t.Errorf("SET status %v", set.Status)
	}
	if _, ok := attrsOf(set.Attributes)["db.query.text"]; ok {
		t.Error("db.query.text recorded without ObserveArguments")
	}

	lpush := spanNamed(t, spans, "LPUSH")
	checkDBAttrs(t, lpush, "LPUSH", srv.Port())
	la := attrsOf(lpush.Attributes)
	if lpush.Status.Code != codes.Error || la["error.type"].AsString() != "WRONGTYPE" ||
		la["db.response.status_code"].AsString() != "WRONGTYPE" {
		t.Errorf("failed LPUSH: status %v, attributes %v", lpush.Status, lpush.Attributes)
	}

	batch := spanNamed(t, spans, "BATCH")
	checkDBAttrs(t, batch, "BATCH", srv.Port())
	if n := attrsOf(batch.Attributes)["db.operation.batch.size"].AsInt64(); n != 2 {
		t.Errorf("batch size %d", n)
	}
	if len(batch.Events) != 2 {
		t.Fatalf("batch events %v", batch.Events)
	}
	e0, e1 := attrsOf(batch.Events[0].Attributes), attrsOf(batch.Events[1].Attributes)
	if e0["db.operation.name"].AsString() != "INCR" || e0["error.type"].Type() != attribute.EMPTY ||
		e1["db.operation.name"].AsString() != "LPUSH" || e1["error.type"].AsString() != "WRONGTYPE" {
		t.Errorf("batch events %v / %v", batch.Events[0].Attributes, batch.Events[1].Attributes)
	}
	if batch.Status.Code != codes.Error {
		t.Errorf("batch status %v", batch.Status)
	}

	tx := spanNamed(t, spans, "MULTI")
	checkDBAttrs(t, tx, "MULTI", srv.Port())
	if tx.Status.Code != codes.Unset || len(tx.Events) != 2 {
		t.Errorf("transaction status %v, events %d", tx.Status, len(tx.Events))
	}
	noUserData(t, spans, "secretmark")
}

// TestTracingConnectionFailure: a command that fails because the server is gone gets an error
// span whose error.type says how (the outcome is unknown or the connection failed), and no
// error text.
func TestTracingConnectionFailure(t *testing.T) {
	redistest.Require(t)
	srv := redistest.Start(t, redistest.Config{})
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	ctx := context.Background()
	c, err := client.Connect(ctx, client.Options{Endpoints: []client.Endpoint{{Host: "127.0.0.1", Port: srv.Port()}},
		Connections: 1, TracerProvider: tp, CommandTimeout: 300 * 1e6})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	srv.Kill()
	if _, _, err := c.Get(ctx, "secretmark:gone"); err == nil {
		t.Fatal("GET succeeded with the server killed")
	}
	get := spanNamed(t, exp.GetSpans(), "GET")
	typ := attrsOf(get.Attributes)["error.type"].AsString()
	if get.Status.Code != codes.Error || !slices.Contains([]string{"connection", "unknown_outcome", "timeout"}, typ) {
		t.Errorf("GET after the server died: status %v, error.type %q", get.Status, typ)
	}
	if get.Status.Description != typ {
		t.Errorf("status description %q, want the error type only", get.Status.Description)
	}
}

// TestTracingArguments: with ObserveArguments, db.query.text holds the command as sent, each
// argument cut at MaxObservedArgBytes; a credential never appears, even then.
func TestTracingArguments(t *testing.T) {
	redistest.Require(t)
	srv := redistest.Start(t, redistest.Config{})
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	ctx := context.Background()
	c, err := client.Connect(ctx, client.Options{Endpoints: []client.Endpoint{{Host: "127.0.0.1", Port: srv.Port()}},
		Connections: 1, TracerProvider: tp, ObserveArguments: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	long := strings.Repeat("v", client.MaxObservedArgBytes+50)
	if err := c.Set(ctx, "k", long); err != nil {
		t.Fatal(err)
	}
	err = c.WithDedicated(ctx, func(d *client.DedicatedConn) error {
		_, err := d.Do(ctx, "AUTH", "someone", "hunter2-password")
		return err
	})
	if err == nil {
		t.Fatal("AUTH of an unknown user succeeded")
	}
	spans := exp.GetSpans()
	q := attrsOf(spanNamed(t, spans, "SET").Attributes)["db.query.text"].AsString()
	if want := "SET k " + long[:client.MaxObservedArgBytes] + "..."; q != want {
		t.Errorf("db.query.text %q, want %q", q, want)
	}
	auth := spanNamed(t, spans, "AUTH")
	if q := attrsOf(auth.Attributes)["db.query.text"].AsString(); q != "AUTH ? ?" {
		t.Errorf("AUTH db.query.text %q, want the arguments hidden", q)
	}
	noUserData(t, spans, "hunter2")
}

// TestOperationMetrics: with a MeterProvider, db.client.operation.duration records every
// command and batch with respire's explicit buckets and the semantic-convention attributes, and
// db.client.connection.count follows the open connections down to zero at Close.
func TestOperationMetrics(t *testing.T) {
	redistest.Require(t)
	srv := redistest.Start(t, redistest.Config{})
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	ctx := context.Background()
	c, err := client.Connect(ctx, client.Options{Endpoints: []client.Endpoint{{Host: "127.0.0.1", Port: srv.Port()}},
		Connections: 2, MeterProvider: mp})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Set(ctx, "k", "v"); err != nil {
		t.Fatal(err)
	}
	if err := c.Set(ctx, "k", "v"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.LPush(ctx, "k", "x"); err == nil {
		t.Fatal("LPUSH on a string succeeded")
	}
	var b client.Batch
	b.Get("k")
	b.Get("k")
	if err := c.Pipeline(ctx, &b); err != nil {
		t.Fatal(err)
	}
	collect := func() map[string]metricdata.Metrics {
		var rm metricdata.ResourceMetrics
		if err := reader.Collect(ctx, &rm); err != nil {
			t.Fatal(err)
		}
		out := map[string]metricdata.Metrics{}
		for _, sm := range rm.ScopeMetrics {
			if sm.Scope.Name != client.InstrumentationScope {
				t.Errorf("scope %q", sm.Scope.Name)
			}
			for _, m := range sm.Metrics {
				out[m.Name] = m
			}
		}
		return out
	}
	ms := collect()
	dur, ok := ms[client.MetricOperationDuration]
	if !ok || dur.Unit != "s" {
		t.Fatalf("%s: recorded %v, unit %q", client.MetricOperationDuration, ok, dur.Unit)
	}
	points := map[string]metricdata.HistogramDataPoint[float64]{}
	for _, p := range dur.Data.(metricdata.Histogram[float64]).DataPoints {
		op, _ := p.Attributes.Value("db.operation.name")
		points[op.AsString()] = p
		if !slices.Equal(p.Bounds, client.OperationDurationBuckets) {
			t.Errorf("%s bounds %v", op.AsString(), p.Bounds)
		}
	}
	set := points["SET"]
	if set.Count != 2 {
		t.Errorf("SET count %d, want 2", set.Count)
	}
	want := attribute.NewSet(attribute.String("db.system.name", "redis"), attribute.String("db.operation.name", "SET"),
		attribute.String("db.namespace", "0"), attribute.String("server.address", "127.0.0.1"),
		attribute.Int("server.port", srv.Port()))
	if !set.Attributes.Equals(&want) {
		t.Errorf("SET attributes %v", set.Attributes.ToSlice())
	}
	lpush := points["LPUSH"]
	if v, _ := lpush.Attributes.Value("error.type"); lpush.Count != 1 || v.AsString() != "WRONGTYPE" {
		t.Errorf("LPUSH point %v", lpush.Attributes.ToSlice())
	}
	if points["BATCH GET"].Count != 1 {
		t.Errorf("no BATCH GET point: %v", points)
	}

	count := func(ms map[string]metricdata.Metrics) int64 {
		m, ok := ms[client.MetricConnectionCount]
		if !ok || m.Unit != "{connection}" {
			t.Fatalf("%s: recorded %v, unit %q", client.MetricConnectionCount, ok, m.Unit)
		}
		sum := m.Data.(metricdata.Sum[int64])
		if sum.IsMonotonic {
			t.Errorf("%s is monotonic", client.MetricConnectionCount)
		}
		var n int64
		for _, p := range sum.DataPoints {
			st, _ := p.Attributes.Value("db.client.connection.state")
			pool, _ := p.Attributes.Value("db.client.connection.pool.name")
			if st.AsString() != "used" || pool.AsString() != c.Endpoint().String() {
				t.Errorf("connection count attributes %v", p.Attributes.ToSlice())
			}
			n += p.Value
		}
		return n
	}
	if n := count(ms); n != 2 {
		t.Errorf("open connections %d, want 2", n)
	}

	pending := func() int64 {
		m, ok := collect()[client.MetricPendingRequests]
		if !ok || m.Unit != "{request}" {
			t.Fatalf("%s: recorded %v, unit %q", client.MetricPendingRequests, ok, m.Unit)
		}
		var n int64
		for _, p := range m.Data.(metricdata.Sum[int64]).DataPoints {
			n += p.Value
		}
		return n
	}
	if n := pending(); n != 0 {
		t.Errorf("pending requests %d with nothing in flight", n)
	}
	bctx, cancel := context.WithCancel(ctx)
	blocked := make(chan struct{})
	go func() {
		defer close(blocked)
		_, _, _, _ = c.BLPop(bctx, 0, "pending:list")
	}()
	deadline := time.Now().Add(5 * time.Second)
	for pending() != 1 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := pending(); n != 1 {
		t.Errorf("pending requests %d while a BLPOP blocks, want 1", n)
	}
	cancel()
	<-blocked
	if n := pending(); n != 0 {
		t.Errorf("pending requests %d after the BLPOP ended", n)
	}
	_ = c.Close()
	if n := count(collect()); n != 0 {
		t.Errorf("open connections after Close %d, want 0", n)
	}
}
