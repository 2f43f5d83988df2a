package engine

import (
	"context"

	"go.opentelemetry.io/otel/metric"

	"github.com/respire-go/respire/fsm"
)

// sentinelInstruments are the OpenTelemetry instruments of a Sentinel client.
type sentinelInstruments struct {
	failover metric.Int64Counter
	retired  metric.Int64UpDownCounter
}

func newSentinelInstruments(m metric.Meter) (sentinelInstruments, error) {
	failover, err := m.Int64Counter(fsm.InstrumentSentinelFailover.Name(),
		metric.WithDescription("Sentinel primary changes the client validated."), metric.WithUnit("{failover}"))
	if err != nil {
		return sentinelInstruments{}, err
	}
	retired, err := m.Int64UpDownCounter(fsm.InstrumentSentinelGenerationsRetired.Name(),
		metric.WithDescription("Retired Sentinel primary generations whose connections still drain."), metric.WithUnit("{generation}"))
	if err != nil {
		return sentinelInstruments{}, err
	}
	return sentinelInstruments{failover: failover, retired: retired}, nil
}

// record records a Sentinel measurement; other instruments are ignored.
func (s *sentinelInstruments) record(ctx context.Context, x fsm.Metric, attrs metric.MeasurementOption) {
	switch x.Instrument {
	case fsm.InstrumentSentinelFailover:
		s.failover.Add(ctx, int64(x.Value), attrs)
	case fsm.InstrumentSentinelGenerationsRetired:
		s.retired.Add(ctx, int64(x.Value), attrs)
	}
}
