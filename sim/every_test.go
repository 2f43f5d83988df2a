package sim

import (
	"testing"
	"time"

	"github.com/respire-go/respire/fsm"
)

// TestEveryFlaps: the shipped flapping scenario's one every: entry kills the node twenty times,
// 30 s apart: every cycle loses the connections and reconnects after the restart.
func TestEveryFlaps(t *testing.T) {
	sc := mustLoad(t, "../scenarios/flapping-node-every.yaml")
	if len(sc.Faults) != 1 {
		t.Fatalf("the scenario has %d entries, want one", len(sc.Faults))
	}
	res := run(t, sc, sc.Seed, false)
	if len(res.Faults) != 20 {
		t.Fatalf("%d fault windows, want 20", len(res.Faults))
	}
	for k, win := range res.Faults {
		if want := 20*time.Second + time.Duration(k)*30*time.Second; win.From != want {
			t.Fatalf("kill %d at %v, want %v", k, win.From, want)
		}
		if lost := steps(res, fsm.ConnLost, win.From, win.From+10*time.Millisecond); len(lost) != 2 {
			t.Fatalf("kill %d: %d connections lost, want 2", k, len(lost))
		}
		if ready := steps(res, fsm.HandshakeDone, win.To, win.From+30*time.Second); len(ready) < 2 {
			t.Fatalf("kill %d: %d reconnections after the restart at %v", k, len(ready), win.To)
		}
		if n := len(steps(res, fsm.HandshakeDone, win.From, win.To)); n != 0 {
			t.Fatalf("kill %d: %d handshakes while the node was down", k, n)
		}
	}
}
