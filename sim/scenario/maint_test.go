package scenario

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestMaintTimeline: a maintenance timeline loads, every step keeps its fields, sequence numbers
// default to the position, and a standalone topology may list the targets of its MOVING
// notices.
func TestMaintTimeline(t *testing.T) {
	sc, err := Parse([]byte(`name: x
duration: 1m
topology: {nodes: [{id: r1}, {id: r2}]}
client: {maintenance_notifications: auto, maintenance_relaxed_timeout: 5s}
maintenance:
  - {at: 1s, node: r1, kind: MIGRATING, time: 30s, shards: [a, "7"]}
  - {at: 2s, node: r1, kind: MOVING, time: 10s, to: r2, seq: 40}
  - {at: 3s, node: r1, kind: MOVING}
`))
	if err != nil {
		t.Fatal(err)
	}
	m := sc.Maintenance
	if len(m) != 3 || m[0].Time != 30*time.Second || len(m[0].Shards) != 2 || m[1].To != "r2" {
		t.Fatalf("steps %+v", m)
	}
	if m[0].SeqOf(0) != 1 || m[1].SeqOf(1) != 40 || m[2].SeqOf(2) != 3 {
		t.Fatalf("sequence numbers %d %d %d", m[0].SeqOf(0), m[1].SeqOf(1), m[2].SeqOf(2))
	}
	if sc.Client.MaintenanceNotifications != MaintAuto || sc.Client.MaintenanceRelaxedTimeout != 5*time.Second ||
		sc.Client.MaintenanceWindowTimeout != time.Minute {
		t.Fatalf("client section %+v", sc.Client)
	}
	out, err := Marshal(sc)
	if err != nil {
		t.Fatal(err)
	}
	back, err := Parse(out)
	if err != nil || len(back.Maintenance) != 3 || back.Maintenance[1].Seq != 40 {
		t.Fatalf("round trip: %v %+v", err, back)
	}
}

// TestMaintErrors: every bound of the maintenance timeline is checked when a scenario loads,
// with an error naming the field and its line.
func TestMaintErrors(t *testing.T) {
	const head = "name: x\nduration: 1m\ntopology: {kind: cluster, nodes: [{id: a1}, {id: b1}], cluster: {shards: [{primary: a1}, {primary: b1}]}}\nmaintenance:\n"
	many := strings.Repeat("  - {at: 1s, node: a1, kind: MIGRATED}\n", MaxMaintSteps+1)
	shards := "[" + strings.Repeat("s,", MaxMaintShards) + "s]"
	cases := []struct{ name, steps, field, msg string }{
		{"at after end", "  - {at: 1m, node: a1, kind: MIGRATED}\n", "maintenance[0].at", "within the run"},
		{"negative at", "  - {at: -1s, node: a1, kind: MIGRATED}\n", "maintenance[0].at", "within the run"},
		{"unknown node", "  - {at: 1s, node: z9, kind: MIGRATED}\n", "maintenance[0].node", "unknown node"},
		{"unknown kind", "  - {at: 1s, node: a1, kind: MOVED}\n", "maintenance[0].kind", "unknown notice"},
		{"lower-case kind", "  - {at: 1s, node: a1, kind: moving}\n", "maintenance[0].kind", "unknown notice"},
		{"negative seq", "  - {at: 1s, node: a1, kind: MIGRATED, seq: -2}\n", "maintenance[0].seq", "negative"},
		{"time on MIGRATED", "  - {at: 1s, node: a1, kind: MIGRATED, time: 1s}\n", "maintenance[0].time", "has no time"},
		{"fractional time", "  - {at: 1s, node: a1, kind: MIGRATING, time: 1500ms}\n", "maintenance[0].time", "whole seconds"},
		{"time over a day", "  - {at: 1s, node: a1, kind: MOVING, time: 25h}\n", "maintenance[0].time", "24h"},
		{"target on MIGRATING", "  - {at: 1s, node: a1, kind: MIGRATING, to: b1}\n", "maintenance[0].to", "only MOVING"},
		{"unknown target", "  - {at: 1s, node: a1, kind: MOVING, to: z9}\n", "maintenance[0].to", "unknown node"},
		{"shards on MOVING", "  - {at: 1s, node: a1, kind: MOVING, shards: [x]}\n", "maintenance[0].shards", "no shards"},
		{"too many shards", "  - {at: 1s, node: a1, kind: MIGRATED, shards: " + shards + "}\n", "maintenance[0].shards", "more than"},
		{"blank shard", "  - {at: 1s, node: a1, kind: MIGRATED, shards: [\"a b\"]}\n", "maintenance[0].shards[0]", "without spaces"},
		{"SMIGRATING without slots", "  - {at: 1s, node: a1, kind: SMIGRATING}\n", "maintenance[0].slots", "needs slots"},
		{"slots on SMIGRATED", "  - {at: 1s, node: a1, kind: SMIGRATED, slots: \"1\"}\n", "maintenance[0].slots", "only SMIGRATING"},
		{"slot out of range", "  - {at: 1s, node: a1, kind: SMIGRATING, slots: 0-16384}\n", "maintenance[0].slots", "0-16383"},
		{"reversed range", "  - {at: 1s, node: a1, kind: SMIGRATING, slots: 9-3}\n", "maintenance[0].slots", "out of order"},
		{"not a slot", "  - {at: 1s, node: a1, kind: SMIGRATING, slots: \"1,x\"}\n", "maintenance[0].slots", "not a number"},
		{"moves on MOVING", "  - {at: 1s, node: a1, kind: MOVING, moves: [{to: b1, slots: \"1\"}]}\n", "maintenance[0].moves", "only SMIGRATED"},
		{"move to unknown", "  - {at: 1s, node: a1, kind: SMIGRATED, moves: [{to: z9, slots: \"1\"}]}\n", "maintenance[0].moves[0].to", "unknown node"},
		{"move without slots", "  - {at: 1s, node: a1, kind: SMIGRATED, moves: [{to: b1}]}\n", "maintenance[0].moves[0].slots", "at least one slot"},
		{"unknown step field", "  - {at: 1s, node: a1, kind: MIGRATED, colour: red}\n", "maintenance[0].colour", "unknown field"},
		{"too many steps", many, "maintenance", "more than " + strconv.Itoa(MaxMaintSteps)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(head + tc.steps))
			var se *Error
			if !errors.As(err, &se) {
				t.Fatalf("error %v is not a *Error", err)
			}
			if se.Field != tc.field || !strings.Contains(se.Msg, tc.msg) {
				t.Fatalf("%s: %s, want %s: ...%s...", se.Field, se.Msg, tc.field, tc.msg)
			}
			if se.Line < 4 {
				t.Fatalf("error %v names line %d, want the step's line", err, se.Line)
			}
		})
	}
	// A standalone topology lists one node, plus the targets of its MOVING notices only.
	_, err := Parse([]byte("name: x\nduration: 1m\ntopology: {nodes: [{id: r1}, {id: r2}]}\n" +
		"maintenance:\n  - {at: 1s, node: r1, kind: MIGRATING}\n"))
	var se *Error
	if !errors.As(err, &se) || se.Field != "topology.nodes" {
		t.Fatalf("a second standalone node that no MOVING targets: %v", err)
	}
}
