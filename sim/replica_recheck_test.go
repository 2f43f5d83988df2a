package sim

import (
	"testing"
	"time"

	"github.com/respire-go/respire/fsm"
)

// TestReplicaSlowRecheck: while r2's ROLE answers arrive late, reads that find its validation
// stale wait for the re-check in flight and are routed when it answers; no read is refused, and
// no read goes to a replica whose latest ROLE answer (from the router's own journal) is older
// than two refresh intervals or was not a replica's.
func TestReplicaSlowRecheck(t *testing.T) {
	res := runReplicaScenario(t, "replica-slow-recheck")
	interval := 500 * time.Millisecond
	type answer struct {
		at      time.Duration
		replica bool
		ok      bool
	}
	last := map[int]answer{}
	pending := map[fsm.ReadID]bool{}
	waited, routed := 0, 0
	for _, st := range res.Router {
		ev := &st.Event
		if ev.Kind == fsm.RoleAnswered {
			last[ev.Target] = answer{at: ev.At, replica: ev.Replica, ok: true}
		}
		decided := map[fsm.ReadID]bool{}
		for _, e := range st.Effects {
			switch e.Kind {
			case fsm.FailRead:
				t.Fatalf("read %d refused at %v (%s)", e.Read, ev.At, e.Reason)
			case fsm.RouteRead:
				routed++
				decided[e.Read] = true
				if pending[e.Read] {
					waited++
					delete(pending, e.Read)
				}
				if e.Target == 0 {
					t.Fatalf("a Replica read went to the primary at %v", ev.At)
				}
				a := last[e.Target]
				if !a.ok || !a.replica || ev.At-a.at >= 2*interval {
					t.Fatalf("read %d went to %d at %v on a validation from %v (replica %v)", e.Read, e.Target, ev.At, a.at, a.replica)
				}
			}
		}
		if ev.Kind == fsm.ReadStarted && !decided[ev.Read] {
			pending[ev.Read] = true
		}
	}
	t.Logf("%d reads routed, %d of them after waiting for a re-check", routed, waited)
	if routed == 0 || waited == 0 {
		t.Fatalf("%d reads routed, %d after waiting: the scenario showed no wait", routed, waited)
	}
}
