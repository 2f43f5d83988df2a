package scenario

import (
	"errors"
	"strings"
	"testing"
)

// TestNumericBounds: every bounded field above its bound fails the loader before anything is
// allocated from it, and the error names the field and its line. Values such as callers: 1e9 or
// a pub/sub buffer of 2e9 used to run out of memory.
func TestNumericBounds(t *testing.T) {
	const head = "name: x\nduration: 1m\n"
	cases := []struct {
		name, yaml, field string
		line              int
	}{
		{"duration", "name: x\nduration: 9000h\n", "duration", 2},
		{"callers", head + "workload:\n  callers: 1000000000\n  rate: 1/s\n", "workload.callers", 4},
		{"rate", head + "workload: {callers: 1, rate: 2000000/s}\n", "workload.rate", 3},
		{"keys", head + "workload: {callers: 1, rate: 1/s, keys: 5000000}\n", "workload.keys", 3},
		{"counters", head + "workload: {callers: 1, rate: 1/s, counters: 5000000}\n", "workload.counters", 3},
		{"weight", head + "workload: {callers: 1, rate: 1/s, mix: {get: 9000000000}}\n", "workload.mix.get", 3},
		{"send buffer", head + "network: {send_buffer: 9000000000}\n", "network.send_buffer", 3},
		{"latency", head + "network: {latency: 2h}\n", "network.latency", 3},
		{"jitter", head + "network: {jitter: 2h}\n", "network.jitter", 3},
		{"max waiters", head + "client: {max_waiters: 100000000}\n", "client.max_waiters", 3},
		{"pubsub buffer", head + "workload:\n  pubsub:\n    buffer: 2000000000\n    subscribers: [{topics: [a]}]\n", "workload.pubsub.buffer", 5},
		{"renters", head + "workload: {dedicated: {renters: 1000000000}}\n", "workload.dedicated.renters", 3},
		{"dedicated lists", head + "workload: {dedicated: {renters: 1, lists: 1000000000}}\n", "workload.dedicated.lists", 3},
		{"delay extra", head + "faults:\n  - {at: 1s, delay: {node: r1, extra: 1s..3h}}\n", "faults[0].delay.extra", 4},
		{"bytes", head + "faults:\n  - {at: 1s, drop_after_bytes: {node: r1, bytes: 9000000000000}}\n", "faults[0].drop_after_bytes.bytes", 4},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.yaml))
			var se *Error
			if !errors.As(err, &se) {
				t.Fatalf("want a *Error, got %v", err)
			}
			if se.Field != tc.field || !strings.Contains(se.Msg, "must be at most") || se.Line != tc.line {
				t.Fatalf("got field %q line %d msg %q, want field %q line %d", se.Field, se.Line, se.Msg, tc.field, tc.line)
			}
			if !strings.Contains(err.Error(), tc.field) || !strings.Contains(err.Error(), "(line ") {
				t.Fatalf("error %q does not name the field and line", err)
			}
		})
	}
}

// TestValidationErrorLines: errors found after decoding (validation) carry the line of the field
// too, or of its nearest ancestor when the field was defaulted.
func TestValidationErrorLines(t *testing.T) {
	data := "name: x\nduration: 1m\nfaults:\n  - {at: 1s, drop: {node: r1}}\n  - at: 2s\n    kill:\n      node: r9\n"
	_, err := Parse([]byte(data))
	var se *Error
	if !errors.As(err, &se) || se.Field != "faults[1].kill.node" || se.Line != 7 {
		t.Fatalf("got %v", err)
	}
	if !strings.Contains(err.Error(), "(line 7)") {
		t.Fatalf("error %q has no line", err)
	}
}
