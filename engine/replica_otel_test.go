package engine

import (
	"context"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/respire-go/respire/fsm"
)

// TestHedgeMeterInstruments: the router's CountMetric effects reach the three hedge
// instruments under the spec's names.
func TestHedgeMeterInstruments(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	m, err := NewHedgeMeter(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range []fsm.RouterEffect{
		{Kind: fsm.CountMetric, Name: fsm.MetricHedgeSent, Value: 1},
		{Kind: fsm.CountMetric, Name: fsm.MetricHedgeSent, Value: 1},
		{Kind: fsm.CountMetric, Name: fsm.MetricHedgeWon, Value: 1},
		{Kind: fsm.CountMetric, Name: fsm.MetricHedgeExtraLoad, Value: 7},
	} {
		m.record(&e)
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, sm := range rm.ScopeMetrics {
		for _, md := range sm.Metrics {
			switch d := md.Data.(type) {
			case metricdata.Sum[int64]:
				got[md.Name] = float64(d.DataPoints[0].Value)
			case metricdata.Gauge[float64]:
				got[md.Name] = d.DataPoints[0].Value
			}
		}
	}
	want := map[string]float64{fsm.MetricHedgeSent: 2, fsm.MetricHedgeWon: 1, fsm.MetricHedgeExtraLoad: 7}
	for name, v := range want {
		if got[name] != v {
			t.Errorf("%s = %v, want %v (all: %v)", name, got[name], v, got)
		}
	}
	var none *HedgeMeter
	none.record(&fsm.RouterEffect{Kind: fsm.CountMetric, Name: fsm.MetricHedgeSent, Value: 1}) // nil: no metrics
}
