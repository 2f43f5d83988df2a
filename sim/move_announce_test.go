package sim

import (
	"strings"
	"testing"

	"github.com/respire-go/respire/sim/check"
	"github.com/respire-go/respire/sim/scenario"
)

// afterMove reads a run's trace from its "fault moved" line on: the connects opened to old and
// to moved (endpoints), and how the connects to old failed (timed out or refused).
func afterMove(t *testing.T, trace []string, old, moved string) (toMoved, oldTimedOut, oldRefused int) {
	t.Helper()
	seen := false
	for _, l := range trace {
		switch {
		case strings.Contains(l, "fault moved"):
			seen = true
		case !seen:
		case strings.Contains(l, "conn open") && strings.Contains(l, "endpoint="+moved):
			toMoved++
		case strings.Contains(l, "conn failed") && strings.Contains(l, "connecting to "+old):
			if strings.Contains(l, "timed out") {
				oldTimedOut++
			}
			if strings.Contains(l, "connection refused") {
				oldRefused++
			}
		}
	}
	if !seen {
		t.Fatal("the node never moved")
	}
	return toMoved, oldTimedOut, oldRefused
}

// TestClusterNodeMovesAddress: a Cluster primary named by its IP restarts at 10.0.1.9. The
// Cluster announces the new address (the client dials it: no configuration names it), and the
// old address black-holes: the client's dials to it after the move time out rather than being
// refused. Its control, old_address: refuse, has the same dials refused. Without the
// announcement the client never learns 10.0.1.9 and the scenario's dials expectation fails.
func TestClusterNodeMovesAddress(t *testing.T) {
	sc := mustLoad(t, "../scenarios/cluster-node-moves-address.yaml")
	for _, mode := range []string{scenario.OldAddressBlackhole, scenario.OldAddressRefuse} {
		sc.Faults[0].Kill.OldAddress = mode
		res := run(t, sc, sc.Seed, true)
		if v := check.Judge(res); !v.Pass() {
			t.Fatalf("old_address %s: violations %v", mode, v.Unexpected)
		}
		toMoved, timedOut, refused := afterMove(t, res.Trace, "10.0.1.1:6379", "10.0.1.9:6379")
		if toMoved == 0 {
			t.Fatalf("old_address %s: no connect to the announced new address", mode)
		}
		switch {
		case mode == scenario.OldAddressBlackhole && (timedOut == 0 || refused > 0):
			t.Fatalf("blackhole: %d dials to the old address timed out and %d were refused after the move", timedOut, refused)
		case mode == scenario.OldAddressRefuse && (refused == 0 || timedOut > 0):
			t.Fatalf("refuse: %d dials to the old address were refused and %d timed out after the move", refused, timedOut)
		}
	}
}

// TestSentinelPrimaryMovesAddress: the primary of a Sentinel deployment restarts at 10.0.0.9.
// The Sentinels take a new configuration epoch with the new address and the client follows it,
// with every invariant and linearizability holding. Without the new epoch, the client's fence
// refuses the new address as a stale configuration (liveness fails for every seed).
func TestSentinelPrimaryMovesAddress(t *testing.T) {
	sc := mustLoad(t, "../scenarios/sentinel-primary-moves-address.yaml")
	res := run(t, sc, sc.Seed, true)
	if v := check.Judge(res); !v.Pass() {
		t.Fatalf("violations %v", v.Unexpected)
	}
	if toMoved, _, _ := afterMove(t, res.Trace, "10.0.0.1:6379", "10.0.0.9:6379"); toMoved == 0 {
		t.Fatal("no connect to the address the Sentinels announced")
	}
	views := 0
	for _, l := range res.Trace {
		if strings.Contains(l, "sentinel view") && strings.Contains(l, "addr=10.0.0.9") && strings.Contains(l, "epoch=2") {
			views++
		}
	}
	if views != len(sc.Topology.Sentinel.Sentinels) {
		t.Fatalf("%d Sentinels took the new address under epoch 2, want all %d", views, len(sc.Topology.Sentinel.Sentinels))
	}
}
