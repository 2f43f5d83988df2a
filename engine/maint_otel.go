package engine

import (
	"context"

	"go.opentelemetry.io/otel/metric"

	"github.com/respire-go/respire/fsm"
)

// maintInstruments are the OpenTelemetry instruments of maintenance notifications.
type maintInstruments struct {
	skipped metric.Int64Counter
}

func newMaintInstruments(m metric.Meter) (maintInstruments, error) {
	skipped, err := m.Int64Counter(fsm.InstrumentSlotMigrationsSkipped.Name(),
		metric.WithDescription("SMIGRATED moves the slot map did not take (the source no longer owned the slots, or the new owner was unknown); MOVED and a topology refresh find the owners instead."),
		metric.WithUnit("{move}"))
	if err != nil {
		return maintInstruments{}, err
	}
	return maintInstruments{skipped: skipped}, nil
}

// record records a maintenance measurement and reports whether x was one.
func (s *maintInstruments) record(ctx context.Context, x fsm.Metric, attrs metric.MeasurementOption) bool {
	if x.Instrument != fsm.InstrumentSlotMigrationsSkipped {
		return false
	}
	s.skipped.Add(ctx, int64(x.Value), attrs)
	return true
}
