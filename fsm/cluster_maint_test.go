package fsm

import (
	"testing"
	"time"
)

// TestSlotsMigratedOwnership: SMIGRATED moves the ranges its source still owns to the known
// member it names, and leaves the map alone (counting a skip) for a range the source does not
// own or a member the topology does not know.
func TestSlotsMigratedOwnership(t *testing.T) {
	c := NewCluster(parseClusterConfig(t, []string{"seeds=10.0.0.1:7000"}))
	var at time.Duration
	var out Outbox
	step := func(s string) []Effect {
		out.Reset()
		ev := parseEvent(t, s, &at)
		c.Step(&ev, &out)
		return append([]Effect(nil), out.Effects...)
	}
	step("demand waiter=1 machine=node-mux slot=0")
	step("handshake conn=n1.1")
	step("replied query=cluster#2 reply=0-8191:a@10.0.0.1:7000;8192-16383:b@10.0.0.2:7000")
	owner := func(slot uint16) NodeID {
		n, _ := c.Topology().Owner(slot)
		return n.ID
	}
	skips := func(effects []Effect) float64 {
		n := 0.0
		for _, f := range effects {
			if f.Kind == Record && f.Metric.Instrument == InstrumentSlotMigrationsSkipped {
				n += f.Metric.Value
			}
		}
		return n
	}
	if got := skips(step("slots-migrated from=10.0.0.1:7000 reply=0-99+200-299:b@10.0.0.2:7000 at=1s")); got != 0 {
		t.Fatalf("%v skips for a valid move", got)
	}
	for slot, want := range map[uint16]NodeID{0: "b", 99: "b", 100: "a", 199: "a", 200: "b", 299: "b", 300: "a", 9000: "b"} {
		if got := owner(slot); got != want {
			t.Fatalf("slot %d owned by %q, want %q", slot, got, want)
		}
	}
	// a no longer owns 0-99 (nor all of 50-150): skipped, nothing moves back.
	if got := skips(step("slots-migrated from=10.0.0.1:7000 reply=0-99+50-150:a@10.0.0.1:7000 at=2s")); got != 2 {
		t.Fatalf("%v skips, want 2", got)
	}
	if owner(0) != "b" || owner(120) != "a" {
		t.Fatalf("a skipped move changed the map: slot 0 %q, slot 120 %q", owner(0), owner(120))
	}
	// An unknown new owner, or an unknown source, is skipped.
	if got := skips(step("slots-migrated from=10.0.0.1:7000 reply=300-399:c@10.0.0.9:7000 at=3s")); got != 1 || owner(300) != "a" {
		t.Fatalf("unknown target: %v skips, slot 300 %q", got, owner(300))
	}
	if got := skips(step("slots-migrated from=10.0.0.7:7000 reply=400-499:b@10.0.0.2:7000 at=4s")); got != 1 || owner(400) != "a" {
		t.Fatalf("unknown source: %v skips, slot 400 %q", got, owner(400))
	}
}
