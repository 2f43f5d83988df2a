package scenario

import (
	"errors"
	"testing"
)

// TestBatchSchema: workload.batches is validated with the field named, takes its defaults and
// survives a marshal round trip.
func TestBatchSchema(t *testing.T) {
	for _, tc := range []struct{ yaml, field string }{
		{"workload: {batches: {batchers: 0}}", "workload.batches.batchers"},
		{"workload: {batches: {batchers: 100001}}", "workload.batches.batchers"},
		{"workload: {batches: {batchers: 1, size: 65}}", "workload.batches.size"},
		{"workload: {batches: {batchers: 1, size: -1}}", "workload.batches.size"},
		{"workload: {batches: {batchers: 1, atomic: -1}}", "workload.batches.atomic"},
		{"workload: {batches: {batchers: 1, pipeline: -1}}", "workload.batches.pipeline"},
		{"workload: {batches: {batchers: 1, stop: 2m}}", "workload.batches.stop"},
		{"workload: {batches: {batchers: 1, start: -1s}}", "workload.batches.start"},
		{"workload: {batches: {batchers: 1, nope: 1}}", "workload.batches.nope"},
	} {
		_, err := Parse([]byte("name: x\nduration: 1m\n" + tc.yaml + "\n"))
		var se *Error
		if !errors.As(err, &se) || se.Field != tc.field {
			t.Errorf("%s: want an error on %s, got %v", tc.yaml, tc.field, err)
		}
	}
	sc, err := Parse([]byte("name: x\nduration: 1m\nworkload: {batches: {batchers: 2}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	b := sc.Workload.Batches
	if b.Rate != 10 || b.Size != 3 || b.Pipeline != 50 || b.Atomic != 50 || b.Stop != sc.Duration {
		t.Fatalf("defaults: %+v", b)
	}
	data, err := Marshal(sc)
	if err != nil {
		t.Fatal(err)
	}
	back, err := Parse(data)
	if err != nil || *back.Workload.Batches != *b {
		t.Fatalf("round trip: %v\n%s", err, data)
	}
	if c := sc.Clone(); c.Workload.Batches == b {
		t.Fatal("Clone shares the batch section")
	}
}
