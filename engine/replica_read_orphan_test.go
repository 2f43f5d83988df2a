package engine

import (
	"context"
	"testing"
	"time"

	"github.com/respire-go/respire/fsm"
)

// TestHedgedReadOrphanedWhenRouterCloses: a watched read whose copy was handed to the
// replica's connection is settled by the router's close with no winner; Orphaned then reports
// that its bytes may have left, so that the caller reports an unknown outcome and not a
// definite failure.
func TestHedgedReadOrphanedWhenRouterCloses(t *testing.T) {
	r, _, replica := newValidatedRouterWith(t, fsm.RouterConfig{Default: fsm.ReadReplicaPreferred,
		HedgeDelay: 10 * time.Millisecond, HedgeLoadPercent: 100})
	rt := r.Route(fsm.ReadReplicaPreferred, true)
	target, w, err := rt.Select(context.Background())
	if err != nil || w == nil || target != 1 {
		t.Fatalf("selection %d, %v, %v: want the replica, watched", target, w, err)
	}
	orig := &Command{Name: "GET", Frame: []byte("*2\r\n$3\r\nGET\r\n$1\r\nk\r\n")}
	orig.Reset()
	h := NewHedgedRead(&rt, w, orig)
	h.Start(target)
	if got := sentOn(replica); len(got) != 1 {
		t.Fatalf("the replica got %d commands: want the read", len(got))
	}
	r.Close()
	deadline := time.After(5 * time.Second)
	for !h.Step() {
		select {
		case <-h.Wake():
		case <-deadline:
			t.Fatal("the router's close did not settle the read")
		}
	}
	if x, _ := h.Result(); x != nil {
		t.Fatalf("a winner after the router closed: %v", x)
	}
	at, sent, _ := h.Orphaned()
	if at != 1 {
		t.Fatalf("orphaned read names candidate %d: want the replica (1)", at)
	}
	if !sent {
		t.Fatal("a read handed to its connection reported as never sent")
	}
}
