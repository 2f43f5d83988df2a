package scenario

import (
	"errors"
	"strings"
	"testing"
)

// TestMoveToErrors: a kill's move_to needs a restart and an IP address, two nodes cannot move to
// one address, and old_address is refuse or blackhole, only with move_to; each error names its
// field and line. A Cluster or Sentinel node may move (it announces its new address).
func TestMoveToErrors(t *testing.T) {
	// r2 is a MOVING target: a standalone topology's second node.
	const two = "name: x\nduration: 10s\ntopology: {kind: standalone, nodes: [{id: r1}, {id: r2}]}\n" +
		"maintenance: [{at: 8s, node: r1, kind: MOVING, time: 1s, to: r2}]\nfaults:\n"
	for _, tc := range []struct {
		name, src, field, msg string
		line                  int
	}{
		{"no restart", two + "  - {at: 1s, kill: {node: r1, move_to: 10.0.0.9}}\n", "faults[0].kill.move_to", "needs restart_after", 6},
		{"host name", two + "  - {at: 1s, kill: {node: r1, restart_after: 1s, move_to: cache.internal}}\n", "faults[0].kill.move_to", "must be an IP address", 6},
		{"host and port", two + "  - {at: 1s, kill: {node: r1, restart_after: 1s, move_to: \"10.0.0.9:7000\"}}\n", "faults[0].kill.move_to", "never to another port", 6},
		{"two nodes one address", two + "  - {at: 1s, kill: {node: r1, restart_after: 1s, move_to: 10.0.0.9}}\n  - {at: 5s, kill: {node: r2, restart_after: 1s, move_to: 10.0.0.9}}\n",
			"faults[1].kill.move_to", "two nodes cannot listen at one address", 7},
		{"another node's address", "name: x\nduration: 10s\ntopology: {kind: standalone, nodes: [{id: r1}, {id: 10.0.0.9}]}\n" +
			"maintenance: [{at: 8s, node: r1, kind: MOVING, time: 1s, to: 10.0.0.9}]\nfaults:\n  - {at: 1s, kill: {node: r1, restart_after: 1s, move_to: 10.0.0.9}}\n",
			"faults[0].kill.move_to", "two nodes cannot listen at one address", 6},
		{"old address without a move", two + "  - {at: 1s, kill: {node: r1, restart_after: 1s, old_address: blackhole}}\n", "faults[0].kill.old_address", "needs move_to", 6},
		{"old address unknown", two + "  - {at: 1s, kill: {node: r1, restart_after: 1s, move_to: 10.0.0.9, old_address: drop}}\n", "faults[0].kill.old_address", "must be refuse or blackhole", 6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.src))
			var se *Error
			if !errors.As(err, &se) || se.Field != tc.field || se.Line != tc.line || !strings.Contains(se.Msg, tc.msg) {
				t.Fatalf("got %v, want %s (line %d): %s", err, tc.field, tc.line, tc.msg)
			}
		})
	}
	for _, ok := range []string{
		two + "  - {at: 1s, kill: {node: r1, restart_after: 1s, move_to: 10.0.0.9}}\n  - {at: 5s, kill: {node: r1, restart_after: 1s, move_to: 10.0.0.9}}\n",
		two + "  - {at: 1s, kill: {node: r1, restart_after: 1s, move_to: \"fd00::9\"}}\n",
		two + "  - {at: 1s, kill: {node: r1, restart_after: 1s, move_to: 10.0.0.9, old_address: refuse}}\n",
		clusterHead + "  cluster: {shards: [{primary: a1, replicas: [a2]}, {primary: b1}]}\nfaults:\n  - {at: 1s, kill: {node: a1, restart_after: 1s, move_to: 10.0.0.9, old_address: blackhole}}\n",
	} {
		if _, err := Parse([]byte(ok)); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
}
