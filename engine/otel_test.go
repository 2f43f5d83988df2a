package engine

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/respire-go/respire/fsm"
)

func TestOTelMeterInstrumentsAndTags(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	m, err := NewOTelMeter(provider)
	if err != nil {
		t.Fatal(err)
	}
	ep := Endpoint{Host: "cache.internal", Port: 6380}
	m.Record(ep, fsm.Metric{Instrument: fsm.InstrumentAttempt, Source: fsm.SourceCommand, Value: 3})
	m.Record(ep, fsm.Metric{Instrument: fsm.InstrumentDelay, Source: fsm.SourceCommand, Value: 0.25})
	m.Record(ep, fsm.Metric{Instrument: fsm.InstrumentExhausted, Source: fsm.SourceCommand, Value: 1})
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	seen := map[string]attribute.Set{}
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name != MeterName {
			t.Fatalf("scope %q", sm.Scope.Name)
		}
		for _, md := range sm.Metrics {
			switch d := md.Data.(type) {
			case metricdata.Histogram[int64]:
				if d.DataPoints[0].Sum != 3 {
					t.Errorf("%s sum %v", md.Name, d.DataPoints[0].Sum)
				}
				seen[md.Name] = d.DataPoints[0].Attributes
			case metricdata.Histogram[float64]:
				if d.DataPoints[0].Sum != 0.25 || md.Unit != "s" {
					t.Errorf("%s sum %v unit %q", md.Name, d.DataPoints[0].Sum, md.Unit)
				}
				seen[md.Name] = d.DataPoints[0].Attributes
			case metricdata.Sum[int64]:
				if d.DataPoints[0].Value != 1 || !d.IsMonotonic {
					t.Errorf("%s value %v", md.Name, d.DataPoints[0].Value)
				}
				seen[md.Name] = d.DataPoints[0].Attributes
			}
		}
	}
	for _, name := range []string{"respire.connection.reconnect.attempt", "respire.connection.reconnect.delay", "respire.connection.reconnect.exhausted"} {
		attrs, ok := seen[name]
		if !ok {
			t.Fatalf("instrument %s not recorded", name)
		}
		host, _ := attrs.Value("server.address")
		port, _ := attrs.Value("server.port")
		src, _ := attrs.Value("respire.connection.source")
		if host.AsString() != "cache.internal" || port.AsInt64() != 6380 || src.AsString() != "command" || attrs.Len() != 3 {
			t.Errorf("%s attributes %v", name, attrs.ToSlice())
		}
	}
}

// TestOTelMeterScope: the Cluster discovery path carries respire.reconnect.scope; the others
// carry no scope attribute (the test above checks they have exactly three).
func TestOTelMeterScope(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	m, err := NewOTelMeter(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)))
	if err != nil {
		t.Fatal(err)
	}
	m.Record(Endpoint{Host: "10.0.0.2", Port: 7000}, fsm.Metric{Instrument: fsm.InstrumentAttempt,
		Source: fsm.SourceClusterDiscovery, Scope: fsm.ScopeClusterDiscovery, Value: 1})
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	d := rm.ScopeMetrics[0].Metrics[0].Data.(metricdata.Histogram[int64])
	attrs := d.DataPoints[0].Attributes
	scope, ok := attrs.Value("respire.reconnect.scope")
	src, _ := attrs.Value("respire.connection.source")
	if !ok || scope.AsString() != "cluster-discovery" || src.AsString() != "cluster-discovery" || attrs.Len() != 4 {
		t.Fatalf("attributes %v", attrs.ToSlice())
	}
}
