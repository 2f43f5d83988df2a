package engine

import (
	"testing"

	"github.com/respire-go/respire/fsm"
)

// TestClusterReplicaBands: each shard's router publishes the band its last routed read was
// chosen from, with that read's slot: LastBand is the last of any shard, Bands one per shard
// that routed a read. An unchanged band, policy and slot keep their capture time; another slot
// is a new observation.
func TestClusterReplicaBands(t *testing.T) {
	h, cr := newReplicaHarness(t)
	if _, ok := cr.LastBand(); ok {
		t.Fatal("a band before any read")
	}
	slotA, slotB := 0, fsm.SlotCount-1 // the first and the last shard
	ownerA, ownerB := h.fc.owner[slotA], h.fc.owner[slotB]
	h.fc.mu.Lock()
	replicaA, replicaB := h.fc.replicasOf(ownerA)[0].addr, h.fc.replicasOf(ownerB)[0].addr
	h.fc.mu.Unlock()

	if _, err := h.selectRead(cr, slotA, fsm.ReadReplica); err != nil {
		t.Fatal(err)
	}
	a, ok := cr.LastBand()
	if !ok || a.Slot != slotA || a.Primary.String() != ownerA || a.Policy != fsm.ReadReplica ||
		len(a.Endpoints) != 1 || a.Endpoints[0].String() != replicaA {
		t.Fatalf("band after a read of slot %d: %+v %v, want the replica %s of %s", slotA, a, ok, replicaA, ownerA)
	}
	if _, err := h.selectRead(cr, slotA, fsm.ReadReplica); err != nil {
		t.Fatal(err)
	}
	if again, _ := cr.LastBand(); again.At != a.At {
		t.Fatalf("an unchanged band was captured again: %v, then %v", a.At, again.At)
	}
	if _, err := h.selectRead(cr, slotB, fsm.ReadReplica); err != nil {
		t.Fatal(err)
	}
	b, ok := cr.LastBand()
	if !ok || b.Slot != slotB || b.Primary.String() != ownerB || b.Endpoints[0].String() != replicaB {
		t.Fatalf("band after a read of slot %d: %+v, want the replica %s of %s", slotB, b, replicaB, ownerB)
	}
	bands := cr.Bands()
	if len(bands) != 2 {
		t.Fatalf("%d shard bands, want 2: %+v", len(bands), bands)
	}
	for _, x := range bands {
		if x.Slot != slotA && x.Slot != slotB {
			t.Fatalf("shard band %+v", x)
		}
	}
	if _, err := h.selectRead(cr, slotA+1, fsm.ReadReplica); err != nil {
		t.Fatal(err)
	}
	if c, _ := cr.LastBand(); c.Slot != slotA+1 || c.At < a.At {
		t.Fatalf("another slot of the shard: %+v after %+v", c, a)
	}
}
