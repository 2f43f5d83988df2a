package client

import (
	"context"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/errors"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/respire-go/respire/engine"
)

// InstrumentationScope is the OpenTelemetry instrumentation scope of respire's spans and
// metrics.
const InstrumentationScope = engine.MeterName

// Names of the OpenTelemetry instruments respire records besides the recovery ones (which the
// engine records: docs/observability.md lists them all).
const (
	// MetricOperationDuration is db.client.operation.duration: the duration of each command,
	// batch and transaction, in seconds.
	MetricOperationDuration = "db.client.operation.duration"
	// MetricConnectionCount is db.client.connection.count: the open physical connections.
	MetricConnectionCount = "db.client.connection.count"
	// MetricPendingRequests is db.client.connection.pending_requests: the commands and batches
	// sent and not answered yet, those waiting for a connection included.
	MetricPendingRequests = "db.client.connection.pending_requests"
)

// OperationDurationBuckets are the explicit bucket boundaries (seconds) of
// db.client.operation.duration: from 100 µs, where a Redis command on a local network lands, to
// 10 s, the top of the semantic conventions' advice.
var OperationDurationBuckets = []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
	0.1, 0.25, 0.5, 1, 2.5, 5, 10}

// EventConnectionWait is the span event of a command that found no ready connection and waited
// for the connection attempt in progress, with that attempt's respire.reconnect.attempt,
// respire.reconnect.delay (seconds, when one was scheduled), respire.reconnect.exhausted,
// respire.connection.source and respire.connection.state.
const EventConnectionWait = "respire.connection.wait"

// maxBatchEvents bounds the span events of a batch: one per command, for the first ones.
const maxBatchEvents = 128

// Attribute keys of the database semantic conventions, and respire's own.
const (
	attrDBSystem      = attribute.Key("db.system.name")
	attrDBOperation   = attribute.Key("db.operation.name")
	attrDBNamespace   = attribute.Key("db.namespace")
	attrDBQueryText   = attribute.Key("db.query.text")
	attrDBStatusCode  = attribute.Key("db.response.status_code")
	attrDBBatchSize   = attribute.Key("db.operation.batch.size")
	attrServerAddress = attribute.Key("server.address")
	attrServerPort    = attribute.Key("server.port")
	attrErrorType     = attribute.Key("error.type")
	attrConnState     = attribute.Key("db.client.connection.state")
	attrPoolName      = attribute.Key("db.client.connection.pool.name")
	attrBatchIndex    = attribute.Key("respire.batch.index")

	attrConnSource         = attribute.Key("respire.connection.source")
	attrConnSourceState    = attribute.Key("respire.connection.state")
	attrReconnectAttempt   = attribute.Key("respire.reconnect.attempt")
	attrReconnectDelay     = attribute.Key("respire.reconnect.delay")
	attrReconnectExhausted = attribute.Key("respire.reconnect.exhausted")
)

var systemRedis = attrDBSystem.String("redis")

// otelHooks returns the hooks of Options.TracerProvider and Options.MeterProvider, outermost
// first: tracing, then the operation metrics. None without a provider.
func otelHooks(o *Options) ([]Hook, error) {
	var hooks []Hook
	ns := attrDBNamespace.String(strconv.Itoa(o.Database))
	if o.TracerProvider != nil {
		t := &tracing{
			tracer: o.TracerProvider.Tracer(InstrumentationScope, trace.WithInstrumentationVersion(Version)),
			ns:     ns,
		}
		hooks = append(hooks, Hook{Command: t.command, Batch: t.batch})
	}
	if o.MeterProvider != nil {
		m, err := newOperationMetrics(o.MeterProvider, ns, o.Endpoints[0])
		if err != nil {
			return nil, err
		}
		hooks = append(hooks, Hook{Command: m.command, Batch: m.batch, Dial: m.dial})
	}
	return hooks, nil
}

// tracing makes the spans of Options.TracerProvider.
type tracing struct {
	tracer trace.Tracer
	ns     attribute.KeyValue
	// starts caches the start options of command spans by command name (every command span of
	// a client starts with the client's endpoint), at most maxCachedStarts names: building them
	// per command would cost allocations.
	starts  sync.Map // string -> []trace.SpanStartOption
	nstarts atomic.Int32
}

// maxCachedStarts bounds tracing.starts: the command table has a few hundred names, and raw
// commands of modules could add any number.
const maxCachedStarts = 1024

// startOptions returns the start options of a span for command name at ep.
func (t *tracing) startOptions(name string, ep Endpoint) []trace.SpanStartOption {
	if v, ok := t.starts.Load(name); ok {
		return v.([]trace.SpanStartOption)
	}
	opts := []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(systemRedis, attrDBOperation.String(name), t.ns,
			attrServerAddress.String(ep.Host), attrServerPort.Int(ep.Port))}
	if t.nstarts.Load() < maxCachedStarts {
		if _, loaded := t.starts.LoadOrStore(name, opts); !loaded {
			t.nstarts.Add(1)
		}
	}
	return opts
}

func (t *tracing) command(next CommandFunc) CommandFunc {
	return func(ctx context.Context, ci *CommandInfo) error {
		ep := ci.Endpoint() // the client's: the cached options hold it
		ctx, span := t.tracer.Start(ctx, ci.Name(), t.startOptions(ci.Name(), ep)...)
		err := next(ctx, ci)
		if ep2 := ci.Endpoint(); ep2 != ep {
			// A Cluster node answered: the span names it.
			span.SetAttributes(attrServerAddress.String(ep2.Host), attrServerPort.Int(ep2.Port))
		}
		if args := ci.Args(); args != nil {
			span.SetAttributes(attrDBQueryText.String(strings.Join(args, " ")))
		}
		if ci.WaitedForConnection() {
			span.AddEvent(EventConnectionWait, trace.WithAttributes(recoveryAttrs(ci)...))
		}
		endSpan(span, err)
		return err
	}
}

func (t *tracing) batch(next BatchFunc) BatchFunc {
	return func(ctx context.Context, bi *BatchInfo) error {
		ep, op := bi.Endpoint(), batchOperation(bi)
		ctx, span := t.tracer.Start(ctx, op, trace.WithSpanKind(trace.SpanKindClient),
			trace.WithAttributes(systemRedis, attrDBOperation.String(op), t.ns, attrDBBatchSize.Int(bi.Len()),
				attrServerAddress.String(ep.Host), attrServerPort.Int(ep.Port)))
		err := next(ctx, bi)
		for i := 0; i < bi.Len() && i < maxBatchEvents; i++ {
			attrs := []attribute.KeyValue{attrDBOperation.String(bi.Name(i)), attrBatchIndex.Int(i)}
			if e := bi.Err(i); e != nil {
				attrs = append(attrs, attrErrorType.String(errorType(e)))
			}
			span.AddEvent("db.operation", trace.WithAttributes(attrs...))
		}
		endSpan(span, err)
		return err
	}
}

// recoveryAttrs describes the recovery a command waited for.
func recoveryAttrs(ci *CommandInfo) []attribute.KeyValue {
	ch, ok := ci.Recovery()
	if !ok {
		return nil
	}
	attrs := []attribute.KeyValue{
		attrConnSource.String(ch.Source.String()),
		attrConnSourceState.String(ch.SourceState.String()),
		attrReconnectAttempt.Int(ch.Attempt),
		attrReconnectExhausted.Bool(ch.Exhausted),
	}
	if ch.Scheduled {
		attrs = append(attrs, attrReconnectDelay.Float64(ch.NextDelay.Seconds()))
	}
	if ch.Err != nil {
		attrs = append(attrs, attrErrorType.String(errorType(ch.Err)))
	}
	return attrs
}

// endSpan records the outcome and ends the span. The status carries the error's type only: an
// error's text is not a span's business (a script's error message is the application's own).
func endSpan(span trace.Span, err error) {
	if err != nil {
		typ := errorType(err)
		span.SetAttributes(attrErrorType.String(typ))
		var se *ServerError
		if errors.As(err, &se) {
			span.SetAttributes(attrDBStatusCode.String(se.Code))
		}
		span.SetStatus(codes.Error, typ)
	}
	span.End()
}

// batchOperation names a batch's operation as the semantic conventions advise: "BATCH GET" for
// a pipeline of one command, "BATCH" for a mixed one, "MULTI" for a transaction.
func batchOperation(bi *BatchInfo) string {
	if bi.Transaction() {
		return "MULTI"
	}
	if bi.Len() == 0 {
		return "BATCH"
	}
	name := bi.Name(0)
	for i := 1; i < bi.Len(); i++ {
		if bi.Name(i) != name {
			return "BATCH"
		}
	}
	return "BATCH " + name
}

// errorType classifies an error for error.type: the server's error code for an error reply
// (WRONGTYPE, NOSCRIPT, ...), else one of respire's low-cardinality names, else "_OTHER".
func errorType(err error) string {
	var (
		se *ServerError
		uo *UnknownOutcomeError
		te *TimeoutError
		ce *ConnectionError
		cf *ConfigError
		sc *SessionCommandError
		tq *TxQueueError
	)
	switch {
	case errors.As(err, &tq):
		return "EXECABORT"
	case errors.As(err, &se):
		return se.Code
	case errors.As(err, &uo):
		return "unknown_outcome"
	case errors.As(err, &te):
		return "timeout"
	case errors.Is(err, ErrClosed):
		return "closed"
	case errors.As(err, &ce):
		return "connection"
	case errors.Is(err, ErrTxConflict):
		return "tx_conflict"
	case errors.Is(err, ErrTxRetry):
		return "tx_retry"
	case errors.Is(err, context.Canceled):
		return "canceled"
	case errors.Is(err, context.DeadlineExceeded):
		return "deadline_exceeded"
	case errors.As(err, &cf), errors.Is(err, ErrAdminDisabled), errors.As(err, &sc):
		return "refused"
	case errors.Is(err, ErrHookDropped), errors.Is(err, ErrHookReplay):
		return "hook"
	}
	return "_OTHER"
}

// operationMetrics records db.client.operation.duration, db.client.connection.count and
// db.client.connection.pending_requests.
type operationMetrics struct {
	duration metric.Float64Histogram
	conns    metric.Int64UpDownCounter
	pending  metric.Int64UpDownCounter
	ns       attribute.KeyValue
	pool     attribute.KeyValue
	// poolAttrs is the attribute set of pending, built once.
	poolAttrs metric.MeasurementOption
	// ep is the client's endpoint; ok caches, by operation name, the attributes of a successful
	// operation at ep (at most maxCachedStarts names).
	ep  Endpoint
	ok  sync.Map // string -> metric.MeasurementOption
	nok atomic.Int32
}

func newOperationMetrics(p metric.MeterProvider, ns attribute.KeyValue, ep Endpoint) (*operationMetrics, error) {
	m := p.Meter(InstrumentationScope)
	duration, err := m.Float64Histogram(MetricOperationDuration, metric.WithUnit("s"),
		metric.WithDescription("Duration of database client operations."),
		metric.WithExplicitBucketBoundaries(OperationDurationBuckets...))
	if err != nil {
		return nil, err
	}
	conns, err := m.Int64UpDownCounter(MetricConnectionCount, metric.WithUnit("{connection}"),
		metric.WithDescription("The number of connections that are currently open."))
	if err != nil {
		return nil, err
	}
	pending, err := m.Int64UpDownCounter(MetricPendingRequests, metric.WithUnit("{request}"),
		metric.WithDescription("The number of requests sent and not answered yet, including those waiting for a connection."))
	if err != nil {
		return nil, err
	}
	pool := attrPoolName.String(ep.String())
	return &operationMetrics{duration: duration, conns: conns, pending: pending, ns: ns, pool: pool,
		poolAttrs: metric.WithAttributeSet(attribute.NewSet(pool)), ep: ep}, nil
}

func (m *operationMetrics) record(ctx context.Context, start time.Time, op string, ep Endpoint, err error) {
	d := time.Since(start).Seconds()
	if err == nil && ep == m.ep {
		if v, ok := m.ok.Load(op); ok {
			m.duration.Record(ctx, d, v.(metric.MeasurementOption))
			return
		}
	}
	attrs := make([]attribute.KeyValue, 0, 7)
	attrs = append(attrs, systemRedis, attrDBOperation.String(op), m.ns,
		attrServerAddress.String(ep.Host), attrServerPort.Int(ep.Port))
	if err != nil {
		attrs = append(attrs, attrErrorType.String(errorType(err)))
		var se *ServerError
		if errors.As(err, &se) {
			attrs = append(attrs, attrDBStatusCode.String(se.Code))
		}
	}
	opt := metric.WithAttributeSet(attribute.NewSet(attrs...))
	if err == nil && ep == m.ep && m.nok.Load() < maxCachedStarts {
		if _, loaded := m.ok.LoadOrStore(op, opt); !loaded {
			m.nok.Add(1)
		}
	}
	m.duration.Record(ctx, d, opt)
}

func (m *operationMetrics) command(next CommandFunc) CommandFunc {
	return func(ctx context.Context, ci *CommandInfo) error {
		start := time.Now()
		m.pending.Add(ctx, 1, m.poolAttrs)
		err := next(ctx, ci)
		m.pending.Add(ctx, -1, m.poolAttrs)
		m.record(ctx, start, ci.Name(), ci.Endpoint(), err)
		return err
	}
}

func (m *operationMetrics) batch(next BatchFunc) BatchFunc {
	return func(ctx context.Context, bi *BatchInfo) error {
		start := time.Now()
		m.pending.Add(ctx, 1, m.poolAttrs)
		err := next(ctx, bi)
		m.pending.Add(ctx, -1, m.poolAttrs)
		m.record(ctx, start, batchOperation(bi), bi.Endpoint(), err)
		return err
	}
}

// dial counts the connection while it is open: db.client.connection.count. respire's
// connections are multiplexed, so an open connection is always in use: state "used".
func (m *operationMetrics) dial(next DialFunc) DialFunc {
	return func(ctx context.Context, ep Endpoint) (net.Conn, error) {
		nc, err := next(ctx, ep)
		if err != nil {
			return nil, err
		}
		attrs := metric.WithAttributes(m.pool, attrConnState.String("used"),
			attrServerAddress.String(ep.Host), attrServerPort.Int(ep.Port))
		m.conns.Add(ctx, 1, attrs)
		return &countedConn{Conn: nc, attrs: attrs, conns: m.conns}, nil
	}
}

// countedConn takes itself off db.client.connection.count when it is closed, once.
type countedConn struct {
	net.Conn
	attrs  metric.MeasurementOption
	conns  metric.Int64UpDownCounter
	closed atomic.Bool
}

func (c *countedConn) Close() error {
	if c.closed.CompareAndSwap(false, true) {
		c.conns.Add(context.Background(), -1, c.attrs)
	}
	return c.Conn.Close()
}
