package engine

import (
	"context"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/respire-go/respire/fsm"
)

// MeterName is the instrumentation scope of respire's metrics.
const MeterName = "github.com/respire-go/respire"

// Names of the recovery instruments, all under respire.connection. The machines' vocabulary
// names the recycle counter after the spec (redis.client.connection.recycle); it is published
// here under the same prefix as the others.
const (
	InstrumentNameAttempt   = "respire.connection.reconnect.attempt"
	InstrumentNameDelay     = "respire.connection.reconnect.delay"
	InstrumentNameExhausted = "respire.connection.reconnect.exhausted"
	InstrumentNameRecycle   = "respire.connection.recycle"
)

// Explicit bucket boundaries of the recovery histograms. The SDK's default boundaries (0, 5,
// 10, ..., 10000) would put every delay in the first buckets: reconnect delays range from
// milliseconds to minutes (the policy's cap is at most 10 minutes), attempts from 1 to a few
// hundred.
var (
	DelayBuckets   = []float64{0, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600}
	AttemptBuckets = []float64{1, 2, 3, 4, 5, 10, 20, 50, 100, 1000}
)

// OTelMeter records recovery measurements through the OpenTelemetry metric API, with the spec's
// instrument names and the server.address, server.port and respire.connection.source attributes,
// and respire.reconnect.scope for the paths that have one (cluster-discovery,
// sentinel-discovery, sentinel-monitor). Episode ids are never attributes.
type OTelMeter struct {
	attempt   metric.Int64Histogram
	delay     metric.Float64Histogram
	exhausted metric.Int64Counter
	recycled  metric.Int64Counter
	sentinel  sentinelInstruments
	maint     maintInstruments
}

// NewOTelMeter creates the instruments on provider, or on the global provider when it is nil.
func NewOTelMeter(provider metric.MeterProvider) (*OTelMeter, error) {
	if provider == nil {
		provider = otel.GetMeterProvider()
	}
	m := provider.Meter(MeterName)
	attempt, err := m.Int64Histogram(InstrumentNameAttempt,
		metric.WithDescription("Scheduled reconnect attempt numbers."), metric.WithUnit("{attempt}"),
		metric.WithExplicitBucketBoundaries(AttemptBuckets...))
	if err != nil {
		return nil, err
	}
	delay, err := m.Float64Histogram(InstrumentNameDelay,
		metric.WithDescription("Scheduled delay before each reconnect attempt."), metric.WithUnit("s"),
		metric.WithExplicitBucketBoundaries(DelayBuckets...))
	if err != nil {
		return nil, err
	}
	exhausted, err := m.Int64Counter(InstrumentNameExhausted,
		metric.WithDescription("Recovery episodes stopped by their attempt limit."), metric.WithUnit("{episode}"))
	if err != nil {
		return nil, err
	}
	recycled, err := m.Int64Counter(InstrumentNameRecycle,
		metric.WithDescription("Connections replaced because they reached their maximum lifetime."), metric.WithUnit("{connection}"))
	if err != nil {
		return nil, err
	}
	sentinel, err := newSentinelInstruments(m)
	if err != nil {
		return nil, err
	}
	maint, err := newMaintInstruments(m)
	if err != nil {
		return nil, err
	}
	return &OTelMeter{attempt: attempt, delay: delay, exhausted: exhausted, recycled: recycled, sentinel: sentinel, maint: maint}, nil
}

// Record implements Meter.
func (m *OTelMeter) Record(ep Endpoint, x fsm.Metric) {
	kv := [4]attribute.KeyValue{
		attribute.String("server.address", ep.Host),
		attribute.Int("server.port", ep.Port),
		attribute.String("respire.connection.source", x.Source.String()),
	}
	n := 3
	if x.Scope != fsm.ScopeNone {
		// The Cluster and Sentinel paths name their scope: respire.reconnect.scope.
		kv[3] = attribute.String("respire.reconnect.scope", x.Scope.String())
		n = 4
	}
	attrs := metric.WithAttributes(kv[:n]...)
	ctx := context.Background()
	switch x.Instrument {
	case fsm.InstrumentAttempt:
		m.attempt.Record(ctx, int64(x.Value), attrs)
	case fsm.InstrumentDelay:
		m.delay.Record(ctx, x.Value, attrs)
	case fsm.InstrumentExhausted:
		m.exhausted.Add(ctx, int64(x.Value), attrs)
	case fsm.InstrumentRecycled:
		m.recycled.Add(ctx, int64(x.Value), attrs)
	default:
		if !m.maint.record(ctx, x, attrs) {
			m.sentinel.record(ctx, x, attrs)
		}
	}
}
