package sim

import (
	"testing"
	"time"

	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/sim/check"
	"github.com/respire-go/respire/sim/record"
)

// TestMaintPubSubNotices: in maint-pubsub the nodes send every notice on the subscriber
// connections too, and none reaches a subscriber as a message: every message received was
// delivered by a node on its connection, and none carries a notice's word. The subscriber
// connections are not handed off on MOVING: between the handoff and r1's drop at 11 s they
// still receive what the publisher sends through r2 (one database, two endpoints).
func TestMaintPubSubNotices(t *testing.T) {
	sc := mustLoad(t, "../scenarios/maint-pubsub.yaml")
	res := run(t, sc, sc.Seed, false)
	if v := check.Judge(res); !v.Pass() {
		t.Fatalf("violations: %v", v.Unexpected)
	}
	kinds := map[fsm.ConnID][]fsm.MaintKind{}
	for _, e := range maintEvents(res, record.MaintSubscriberNotice) {
		kinds[e.Conn] = append(kinds[e.Conn], e.Notice)
	}
	// Two episodes (regular and sharded), each on one connection until the drop.
	if len(kinds) != 2 {
		t.Fatalf("notices on %d subscriber connections, want 2 (the regular and the sharded episode's): %v", len(kinds), kinds)
	}
	for conn, ks := range kinds {
		if len(ks) != 3 || ks[0] != fsm.MaintMigrating || ks[1] != fsm.MaintMigrated || ks[2] != fsm.MaintMoving {
			t.Fatalf("subscriber conn %d received %v, want MIGRATING, MIGRATED, MOVING", conn, ks)
		}
	}
	delivered := map[fsm.ConnID]map[string]bool{}
	for _, p := range res.PubSub.Published {
		for _, c := range p.Conns {
			if delivered[c] == nil {
				delivered[c] = map[string]bool{}
			}
			delivered[c][p.Payload] = true
		}
	}
	viaR2 := 0
	for _, r := range res.PubSub.Received {
		if r.Kind != "message" {
			continue
		}
		if !delivered[r.Conn][r.Payload] {
			t.Fatalf("subscriber %d received %q on conn %d, which no node delivered there", r.Subscriber, r.Payload, r.Conn)
		}
		if _, notice := kinds[r.Conn]; notice && r.At > 8*time.Second && r.At < 11*time.Second {
			viaR2++
		}
	}
	published := 0
	for _, p := range res.PubSub.Published {
		if p.At > 8*time.Second && p.At < 11*time.Second {
			if p.Node != "r2" {
				t.Fatalf("published on %s at %v, after the handoff to r2", p.Node, p.At)
			}
			published++
		}
	}
	if published == 0 || viaR2 == 0 {
		t.Fatalf("after MOVING: %d messages published through r2, %d received on the old subscriber connections", published, viaR2)
	}
}

// TestMaintNoticeAsMessageCaught: the maint-notice-as-message plant, which hands a notice read
// by a subscriber connection to its subscribers as a message, is caught by pubsub-gaps, and the
// same run without it passes.
func TestMaintNoticeAsMessageCaught(t *testing.T) {
	sc := mustLoad(t, "testdata/plant_maint_notice_as_message.yaml")
	planted := run(t, sc, sc.Seed, false)
	if n := countViolations(planted, check.CheckPubSubGaps); n == 0 {
		t.Fatal("the plant went unnoticed by pubsub-gaps")
	}
	clean := run(t, withoutPlants(sc), sc.Seed, false)
	if n := countViolations(clean, check.CheckPubSubGaps); n != 0 {
		t.Fatalf("pubsub-gaps fails without the plant: %d violations", n)
	}
	if len(maintEvents(clean, record.MaintSubscriberNotice)) == 0 {
		t.Fatal("no notice reached a subscriber connection: the control proves nothing")
	}
}
