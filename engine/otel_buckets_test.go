package engine

import (
	"context"
	"slices"
	"strings"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/respire-go/respire/fsm"
)

// TestOTelMeterNamesAndBuckets: every recovery instrument is published under respire.connection,
// with its unit, and the histograms have respire's explicit boundaries, so that a delay of a few
// seconds does not land in the SDK default's first bucket (0..5 s) with every other delay.
func TestOTelMeterNamesAndBuckets(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	m, err := NewOTelMeter(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)))
	if err != nil {
		t.Fatal(err)
	}
	ep := Endpoint{Host: "cache.internal", Port: 6379}
	m.Record(ep, fsm.Metric{Instrument: fsm.InstrumentAttempt, Source: fsm.SourceCommand, Value: 7})
	m.Record(ep, fsm.Metric{Instrument: fsm.InstrumentDelay, Source: fsm.SourceCommand, Value: 0.003})
	m.Record(ep, fsm.Metric{Instrument: fsm.InstrumentDelay, Source: fsm.SourceCommand, Value: 2})
	m.Record(ep, fsm.Metric{Instrument: fsm.InstrumentDelay, Source: fsm.SourceCommand, Value: 90})
	m.Record(ep, fsm.Metric{Instrument: fsm.InstrumentExhausted, Source: fsm.SourceCommand, Value: 1})
	m.Record(ep, fsm.Metric{Instrument: fsm.InstrumentRecycled, Source: fsm.SourceCommand, Value: 1})
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	units := map[string]string{}
	for _, md := range rm.ScopeMetrics[0].Metrics {
		if !strings.HasPrefix(md.Name, "respire.connection.") {
			t.Errorf("instrument %q is not under respire.connection", md.Name)
		}
		units[md.Name] = md.Unit
		switch d := md.Data.(type) {
		case metricdata.Histogram[float64]:
			p := d.DataPoints[0]
			if !slices.Equal(p.Bounds, DelayBuckets) {
				t.Errorf("%s bounds %v, want %v", md.Name, p.Bounds, DelayBuckets)
			}
			// 3 ms in (0.0, 0.005], 2 s in (1, 2.5], 90 s in (60, 120].
			want := make([]uint64, len(DelayBuckets)+1)
			want[slices.Index(DelayBuckets, 0.005)]++
			want[slices.Index(DelayBuckets, 2.5)]++
			want[slices.Index(DelayBuckets, 120)]++
			if !slices.Equal(p.BucketCounts, want) {
				t.Errorf("%s counts %v, want %v", md.Name, p.BucketCounts, want)
			}
		case metricdata.Histogram[int64]:
			p := d.DataPoints[0]
			if !slices.Equal(p.Bounds, AttemptBuckets) {
				t.Errorf("%s bounds %v, want %v", md.Name, p.Bounds, AttemptBuckets)
			}
		}
	}
	want := map[string]string{
		InstrumentNameAttempt:   "{attempt}",
		InstrumentNameDelay:     "s",
		InstrumentNameExhausted: "{episode}",
		InstrumentNameRecycle:   "{connection}",
	}
	for name, unit := range want {
		if got, ok := units[name]; !ok || got != unit {
			t.Errorf("%s: unit %q (recorded %v), want %q", name, got, ok, unit)
		}
	}
}
