package scenario

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// TestActionsErrors: each bad client action fails the loader naming its field and line.
func TestActionsErrors(t *testing.T) {
	const head = "name: x\nduration: 10s\n"
	many := head + "actions:\n"
	for i := 0; i <= MaxActions; i++ {
		many += "  - {at: 1s, recreate: {}}\n"
	}
	for _, tc := range []struct {
		name, text, field, msg string
		line                   int
	}{
		{"no kind", head + "actions:\n  - {at: 1s}\n", "actions[0]", "needs exactly one action", 4},
		{"two kinds", head + "actions:\n  - {at: 1s, close: {}, create: {}}\n", "actions[0]", "needs exactly one action", 4},
		{"unknown kind", head + "actions:\n  - {at: 1s, restart: {}}\n", "actions[0].restart", "unknown client action (want one of close, create, recreate)", 4},
		{"at the end", head + "actions:\n  - {at: 10s, close: {}}\n", "actions[0].at", "must be from 0 to the run's duration (10s)", 4},
		{"negative at", head + "actions:\n  - {at: -1s, close: {}}\n", "actions[0].at", "must be from 0", 4},
		{"bad connect", head + "actions:\n  - {at: 1s, recreate: {connect: soon}}\n", "actions[0].recreate.connect", "must be eager or lazy", 4},
		{"close twice", head + "actions:\n  - {at: 2s, close: {}}\n  - {at: 1s, close: {}}\n", "actions[0]", "close at 2s of a client already closed", 4},
		{"recreate when closed", head + "actions:\n  - {at: 1s, close: {}}\n  - {at: 2s, recreate: {}}\n", "actions[1]", "recreate at 2s of a client already closed", 5},
		{"create when open", head + "actions:\n  - {at: 1s, create: {}}\n", "actions[0]", "create at 1s while the client is open", 4},
		{"too many", many, "actions", "must be at most 200", 4},
		{"cluster", clusterHead + clusterShards + "actions: [{at: 1s, recreate: {}}]\n", "actions", "standalone topologies only", 10},
		{"dedicated", head + "workload: {dedicated: {renters: 1}}\nactions: [{at: 1s, recreate: {}}]\n", "actions", "workload.dedicated", 4},
		{"lifetime", head + "client: {connection_max_lifetime: 1s}\nactions: [{at: 1s, recreate: {}}]\n", "actions", "connection_max_lifetime", 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.text))
			var se *Error
			if !errors.As(err, &se) {
				t.Fatalf("want a scenario error, got %v", err)
			}
			if se.Field != tc.field || !strings.Contains(se.Msg, tc.msg) || se.Line != tc.line {
				t.Fatalf("got field %q line %d msg %q; want %q line %d containing %q", se.Field, se.Line, se.Msg, tc.field, tc.line, tc.msg)
			}
		})
	}
}

// TestActionsValid: a timeline in any order runs sorted by time; close, create and recreate
// alternate; a create's connect mode defaults to the client section's; a resolved scenario
// keeps its actions and reads back the same.
func TestActionsValid(t *testing.T) {
	sc, err := Parse([]byte(`name: x
duration: 10s
client: {connect: lazy}
actions:
  - {at: 5s, create: {connect: eager}}
  - {at: 1s, recreate: {}}
  - {at: 4s, close: {}}
  - {at: 6s, recreate: {}}
`))
	if err != nil {
		t.Fatal(err)
	}
	order := sc.SortedActions()
	if want := []int{1, 2, 0, 3}; !equalInts(order, want) {
		t.Fatalf("order %v, want %v", order, want)
	}
	if sc.ConnectMode(&sc.Actions[1]) != ConnectLazy || sc.ConnectMode(&sc.Actions[0]) != ConnectEager {
		t.Fatal("connect modes: want the client's for a bare recreate, the create's own otherwise")
	}
	rs, err := sc.Resolve(3)
	if err != nil {
		t.Fatal(err)
	}
	data, err := Marshal(rs)
	if err != nil {
		t.Fatal(err)
	}
	back, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	if len(back.Actions) != 4 || back.Actions[0].At != 5*time.Second || back.Actions[0].Create.Connect != ConnectEager ||
		back.Actions[2].Close == nil {
		t.Fatalf("actions did not read back: %+v", back.Actions)
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestNewRunIDNeedsRestart: a kill asking for a new run id must restart.
func TestNewRunIDNeedsRestart(t *testing.T) {
	_, err := Parse([]byte("name: x\nduration: 10s\nfaults:\n  - {at: 1s, kill: {node: r1, new_run_id: true}}\n"))
	var se *Error
	if !errors.As(err, &se) || se.Field != "faults[0].kill.new_run_id" || se.Line != 4 || !strings.Contains(se.Msg, "needs restart_after") {
		t.Fatalf("got %v", err)
	}
	if _, err := Parse([]byte("name: x\nduration: 10s\nfaults:\n  - {at: 1s, kill: {node: r1, restart_after: 1s, new_run_id: true}}\n")); err != nil {
		t.Fatal(err)
	}
}
