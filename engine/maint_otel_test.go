package engine

import (
	"context"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/respire-go/respire/fsm"
)

// TestOTelSlotMigrationsSkipped: the skipped SMIGRATED moves are a counter named
// respire.cluster.slot_migrations.skipped, tagged with the announcing node.
func TestOTelSlotMigrationsSkipped(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	m, err := NewOTelMeter(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)))
	if err != nil {
		t.Fatal(err)
	}
	m.Record(Endpoint{Host: "10.0.0.1", Port: 7000}, fsm.Metric{Instrument: fsm.InstrumentSlotMigrationsSkipped,
		Source: fsm.SourceCommand, Value: 2})
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, sm := range rm.ScopeMetrics {
		for _, md := range sm.Metrics {
			if md.Name != "respire.cluster.slot_migrations.skipped" {
				t.Fatalf("unexpected instrument %s", md.Name)
			}
			d, ok := md.Data.(metricdata.Sum[int64])
			if !ok || !d.IsMonotonic || d.DataPoints[0].Value != 2 {
				t.Fatalf("%s: %#v", md.Name, md.Data)
			}
			host, _ := d.DataPoints[0].Attributes.Value("server.address")
			if host.AsString() != "10.0.0.1" {
				t.Fatalf("attributes %v", d.DataPoints[0].Attributes.ToSlice())
			}
			found = true
		}
	}
	if !found {
		t.Fatal("respire.cluster.slot_migrations.skipped not recorded")
	}
}
