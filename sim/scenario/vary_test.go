package scenario

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

const varyScenario = `name: x
duration: 1m
network: {latency: 1ms}
client: {connections: 2, reconnect_policy: {initial_delay: 50ms, max_delay: 1s}}
workload: {callers: 2, rate: 100/s}
vary:
  network.latency: 200us..2ms
  client.connections: 1..8
  workload.rate: 50/s..400/s
  client.reconnect_policy.initial_delay: 10ms..200ms
  client.reconnect_policy.jitter_ratio: 0..0.5
`

// TestVaryResolves: each varied field is drawn within its range for a seed, seeds differ, the
// same seed draws the same, and the resolved scenario has no vary left and reads back equal.
func TestVaryResolves(t *testing.T) {
	sc, err := Parse([]byte(varyScenario))
	if err != nil {
		t.Fatal(err)
	}
	values := map[string]bool{}
	for seed := uint64(1); seed <= 20; seed++ {
		rs, err := sc.Resolve(seed)
		if err != nil {
			t.Fatal(err)
		}
		if rs.Vary != nil {
			t.Fatal("vary left in a resolved scenario")
		}
		lat, conns, rate := rs.Network.Latency, rs.Client.Connections, float64(rs.Workload.Rate)
		delay, jitter := rs.Client.ReconnectPolicy.InitialDelay, rs.Client.ReconnectPolicy.JitterRatio
		if lat < 200*time.Microsecond || lat > 2*time.Millisecond || conns < 1 || conns > 8 || rate < 50 || rate > 400 ||
			delay < 10*time.Millisecond || delay > 200*time.Millisecond || jitter < 0 || jitter > 0.5 {
			t.Fatalf("seed %d: drew latency %v, connections %d, rate %v, delay %v, jitter %v", seed, lat, conns, rate, delay, jitter)
		}
		values[lat.String()+"/"+string(rune('0'+conns))] = true
		again, _ := sc.Resolve(seed)
		if !reflect.DeepEqual(rs, again) {
			t.Fatalf("seed %d resolved twice differently", seed)
		}
		data, err := Marshal(rs)
		if err != nil {
			t.Fatal(err)
		}
		back, err := Parse(data)
		if err != nil || !reflect.DeepEqual(back, rs) {
			t.Fatalf("round trip: %v\n%s", err, data)
		}
	}
	if len(values) < 10 {
		t.Fatalf("20 seeds drew only %d distinct combinations", len(values))
	}
	// The unresolved scenario marshals its vary back.
	data, _ := Marshal(sc)
	if !strings.Contains(string(data), "network.latency: 200us..2ms") {
		t.Fatalf("vary not written back:\n%s", data)
	}
}

func TestVaryErrors(t *testing.T) {
	const head = "name: x\nduration: 1m\nworkload: {callers: 1, rate: 10/s}\nvary:\n"
	cases := []struct{ name, entry, field, msg string }{
		{"unknown field", "  network.latancy: 1ms..2ms\n", "vary.network.latancy", "not a field"},
		{"not numeric", "  client.protocol: 1..2\n", "vary.client.protocol", "only numeric fields"},
		{"unset section", "  client.reconnect_policy.initial_delay: 1ms..2ms\n", "vary.client.reconnect_policy.initial_delay", "not set"},
		{"not a range", "  network.latency: 1ms\n", "vary.network.latency", "want a range"},
		{"bad duration", "  network.latency: 1ms..soon\n", "vary.network.latency", "invalid duration"},
		{"reversed", "  client.connections: 8..2\n", "vary.client.connections", "ends before"},
		{"out of bounds", "  client.connections: 1..5000\n", "vary.client.connections", "at 5000"},
		{"above a bound", "  workload.callers: 1..1000000000\n", "vary.workload.callers", "must be at most"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(head + tc.entry))
			var se *Error
			if !errors.As(err, &se) || se.Field != tc.field || !strings.Contains(err.Error(), tc.msg) || se.Line != 5 {
				t.Fatalf("got %v, want %s: ...%s (line 5)", err, tc.field, tc.msg)
			}
		})
	}
}

// TestVaryListElements: a vary path indexes a list's element ("actions[1].at",
// "faults[0].delay.extra", and the optional "faults[0].delay.for"): each seed draws the
// element's field within its range, the other elements keep theirs, and the scenario stays
// valid at both ends.
func TestVaryListElements(t *testing.T) {
	const doc = `name: x
duration: 10s
topology: {kind: standalone, nodes: [{id: r1}]}
workload: {callers: 1, rate: 10/s}
faults:
  - {at: 1s, delay: {node: r1, extra: 5ms, for: 1s}}
actions:
  - {at: 2s, close: {}}
  - {at: 3s, create: {connect: lazy}}
vary:
  actions[1].at: 3s..8s
  faults[0].delay.extra: 1ms..20ms
  faults[0].delay.for: 500ms..2s
`
	sc, err := Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[time.Duration]bool{}
	for seed := uint64(1); seed <= 20; seed++ {
		rs, err := sc.Resolve(seed)
		if err != nil {
			t.Fatal(err)
		}
		at, extra, span := rs.Actions[1].At, rs.Faults[0].Delay.Extra.Value(), rs.Faults[0].Delay.For.Value()
		if at < 3*time.Second || at > 8*time.Second || extra < time.Millisecond || extra > 20*time.Millisecond ||
			span < 500*time.Millisecond || span > 2*time.Second {
			t.Fatalf("seed %d: drew actions[1].at %v, faults[0].delay.extra %v and .for %v", seed, at, extra, span)
		}
		if rs.Actions[0].At != 2*time.Second {
			t.Fatalf("seed %d: actions[0].at moved to %v", seed, rs.Actions[0].At)
		}
		seen[at] = true
	}
	if len(seen) < 10 {
		t.Fatalf("20 seeds drew only %d distinct times", len(seen))
	}
	if sc.Actions[1].At != 3*time.Second {
		t.Fatalf("resolving changed the scenario itself: actions[1].at is %v", sc.Actions[1].At)
	}
}

// TestVaryListElementErrors: a bad index is refused with the entry's field and line.
func TestVaryListElementErrors(t *testing.T) {
	const head = "name: x\nduration: 10s\nworkload: {callers: 1, rate: 10/s}\nactions: [{at: 2s, close: {}}]\nvary:\n"
	cases := []struct{ name, entry, field, msg string }{
		{"out of range", "  actions[1].at: 1s..2s\n", "vary.actions[1].at", "out of range: actions has 1 elements"},
		{"not a list", "  workload[0].callers: 1..2\n", "vary.workload[0].callers", "workload is not a list"},
		{"not a number", "  actions[x].at: 1s..2s\n", "vary.actions[x].at", "invalid index"},
		{"negative", "  actions[-1].at: 1s..2s\n", "vary.actions[-1].at", "invalid index"},
		{"leading zero", "  actions[00].at: 1s..2s\n", "vary.actions[00].at", "invalid index"},
		{"unclosed", "  actions[0.at: 1s..2s\n", "vary.actions[0.at", "unclosed"},
		{"stray bracket", "  actions]0.at: 1s..2s\n", "vary.actions]0.at", "without its ["},
		{"no name", "  \"[0].at\": 1s..2s\n", "vary.[0].at", "without a field name"},
		{"element not numeric", "  actions[0].close: 1..2\n", "vary.actions[0].close", "only numeric fields"},
		{"invalid at an end", "  actions[0].at: 1s..20s\n", "vary.actions[0].at", "at 20s"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(head + tc.entry))
			var se *Error
			if !errors.As(err, &se) || se.Field != tc.field || !strings.Contains(err.Error(), tc.msg) || se.Line != 6 {
				t.Fatalf("got %v, want %s: ...%s (line 6)", err, tc.field, tc.msg)
			}
		})
	}
}
