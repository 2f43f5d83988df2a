package scenario

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestEveryExpands: a repeated fault resolves into one entry per start, each drawing its own
// ranges; without count it repeats until the end of the run; the resolved scenario has no
// repetition left, reads back equal and resolves to itself.
func TestEveryExpands(t *testing.T) {
	sc, err := Parse([]byte(`name: x
duration: 2m
faults:
  - {at: 10s, drop: {node: r1}}
  - {at: 5s..6s, every: 30s, count: 3, kill: {node: r1, restart_after: 1s..9s}}
  - {at: 1m, every: 15s, pause: {node: r1, for: 1s}}
`))
	if err != nil {
		t.Fatal(err)
	}
	rs, err := sc.Resolve(7)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs.Faults) != 1+3+4 {
		t.Fatalf("%d faults after expansion, want 8", len(rs.Faults))
	}
	kills := rs.Faults[1:4]
	first := kills[0].At.Value()
	if first < 5*time.Second || first > 6*time.Second {
		t.Fatalf("first start %v outside 5s..6s", first)
	}
	restarts := map[time.Duration]bool{}
	for k, f := range kills {
		if f.Kill == nil || f.At.Value() != first+time.Duration(k)*30*time.Second || f.Every != nil || f.Count != 0 {
			t.Fatalf("repetition %d: %+v", k, f)
		}
		restarts[f.Kill.RestartAfter.Value()] = true
	}
	if len(restarts) == 1 {
		t.Fatal("every repetition drew the same restart_after: draws are not per repetition")
	}
	for k, f := range rs.Faults[4:] {
		if f.Pause == nil || f.At.Value() != time.Minute+time.Duration(k)*15*time.Second {
			t.Fatalf("pause repetition %d: %+v", k, f)
		}
	}
	// The first repetition draws exactly what the entry would without every.
	plain := sc.Clone()
	plain.Faults[1].Every, plain.Faults[1].Count = nil, 0
	prs, _ := plain.Resolve(7)
	if !reflect.DeepEqual(prs.Faults[1], rs.Faults[1]) {
		t.Fatalf("repetition 0 %+v differs from the same entry without every %+v", rs.Faults[1], prs.Faults[1])
	}
	data, err := Marshal(rs)
	if err != nil {
		t.Fatal(err)
	}
	back, err := Parse(data)
	if err != nil || !reflect.DeepEqual(back, rs) {
		t.Fatalf("round trip: %v\n%s", err, data)
	}
	again, _ := rs.Resolve(7)
	if !reflect.DeepEqual(again, rs) {
		t.Fatal("resolving the expanded scenario changed it")
	}
}

func TestEveryErrors(t *testing.T) {
	const head = "name: x\nduration: 30m\nfaults:\n"
	cases := []struct{ name, fault, field, msg string }{
		{"zero every", "  - {at: 1s, every: 0s, drop: {node: r1}}\n", "faults[0].every", "positive"},
		{"tiny every", "  - {at: 1s, every: 100us, count: 3, drop: {node: r1}}\n", "faults[0].every", "at least 1ms"},
		{"bad every", "  - {at: 1s, every: often, drop: {node: r1}}\n", "faults[0].every", "invalid duration"},
		{"count without every", "  - {at: 1s, count: 3, drop: {node: r1}}\n", "faults[0].count", "set every"},
		{"negative count", "  - {at: 1s, every: 1s, count: -1, drop: {node: r1}}\n", "faults[0].count", "negative"},
		{"too many repetitions", "  - {at: 0s, every: 1ms, count: 2000000, drop: {node: r1}}\n", "faults[0].every", "at most 1000000 faults"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(head + tc.fault))
			var se *Error
			if !errors.As(err, &se) || se.Field != tc.field || !strings.Contains(err.Error(), tc.msg) || se.Line != 4 {
				t.Fatalf("got %v, want %s: ...%s (line 4)", err, tc.field, tc.msg)
			}
		})
	}
}
