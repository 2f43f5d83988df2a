package engine

import (
	"context"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"

	"github.com/respire-go/respire/fsm"
)

// HedgeMeter records the hedged-read metrics through the OpenTelemetry metric API:
// respire.read.hedge.sent and respire.read.hedge.won (counters) and
// respire.read.hedge.extra_load (a gauge: hedges sent per watched read, in percent, recorded
// with each hedge).
type HedgeMeter struct {
	sent, won metric.Int64Counter
	extraLoad metric.Float64Gauge
}

// NewHedgeMeter creates the instruments on provider, or on the global provider when it is nil.
func NewHedgeMeter(provider metric.MeterProvider) (*HedgeMeter, error) {
	if provider == nil {
		provider = otel.GetMeterProvider()
	}
	m := provider.Meter(MeterName)
	sent, err := m.Int64Counter(fsm.MetricHedgeSent, metric.WithDescription("Hedged reads sent."),
		metric.WithUnit("{request}"))
	if err != nil {
		return nil, err
	}
	won, err := m.Int64Counter(fsm.MetricHedgeWon, metric.WithDescription("Hedged reads whose answer completed the read."),
		metric.WithUnit("{request}"))
	if err != nil {
		return nil, err
	}
	extra, err := m.Float64Gauge(fsm.MetricHedgeExtraLoad,
		metric.WithDescription("Hedges sent per hedge-eligible read, in percent."), metric.WithUnit("%"))
	if err != nil {
		return nil, err
	}
	return &HedgeMeter{sent: sent, won: won, extraLoad: extra}, nil
}

// record records one CountMetric effect of a router.
func (m *HedgeMeter) record(e *fsm.RouterEffect) {
	if m == nil {
		return
	}
	ctx := context.Background()
	switch e.Name {
	case fsm.MetricHedgeSent:
		m.sent.Add(ctx, e.Value)
	case fsm.MetricHedgeWon:
		m.won.Add(ctx, e.Value)
	case fsm.MetricHedgeExtraLoad:
		m.extraLoad.Record(ctx, float64(e.Value))
	}
}
