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
}

// NewOTelMeter creates the instruments on provider, or on the global provider when it is nil.
func NewOTelMeter(provider metric.MeterProvider) (*OTelMeter, error) {
	if provider == nil {
		provider = otel.GetMeterProvider()
	}
	m := provider.Meter(MeterName)
	attempt, err := m.Int64Histogram(fsm.InstrumentAttempt.Name(),
		metric.WithDescription("Scheduled reconnect attempt numbers."), metric.WithUnit("{attempt}"))
	if err != nil {
		return nil, err
	}
	delay, err := m.Float64Histogram(fsm.InstrumentDelay.Name(),
		metric.WithDescription("Scheduled delay before each reconnect attempt."), metric.WithUnit("s"))
	if err != nil {
		return nil, err
	}
	exhausted, err := m.Int64Counter(fsm.InstrumentExhausted.Name(),
		metric.WithDescription("Recovery episodes stopped by their attempt limit."), metric.WithUnit("{episode}"))
	if err != nil {
		return nil, err
	}
	recycled, err := m.Int64Counter(fsm.InstrumentRecycled.Name(),
		metric.WithDescription("Connections replaced because they reached their maximum lifetime."), metric.WithUnit("{connection}"))
	if err != nil {
		return nil, err
	}
	sentinel, err := newSentinelInstruments(m)
	if err != nil {
		return nil, err
	}
	return &OTelMeter{attempt: attempt, delay: delay, exhausted: exhausted, recycled: recycled, sentinel: sentinel}, nil
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
		m.sentinel.record(ctx, x, attrs)
	}
}
