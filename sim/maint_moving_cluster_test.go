package sim

import (
	"testing"
	"time"

	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/sim/check"
	"github.com/respire-go/respire/sim/record"
)

// TestMaintMovingClusterHandsOff: in maint-moving-cluster b1 announces MOVING (no endpoint) on
// each of its command connections: every one of them is replaced by a new dial of b1 after the
// notice and closes within the grace, while commands of b1's slots keep being applied on b1.
// Without the handoff on Cluster nodes, b1 is never dialed again and the noticed connections
// stay open to the end.
func TestMaintMovingClusterHandsOff(t *testing.T) {
	sc := mustLoad(t, "../scenarios/maint-moving-cluster.yaml")
	res := run(t, sc, sc.Seed, false)
	notices := maintEvents(res, record.MaintNotice)
	if len(notices) != sc.Client.Connections {
		t.Fatalf("%d notices received, want one per command connection of b1 (%d)", len(notices), sc.Client.Connections)
	}
	closed := map[fsm.ConnID]time.Duration{}
	for _, e := range maintEvents(res, record.MaintClosed) {
		closed[e.Conn] = e.At
	}
	for _, n := range notices {
		if at, ok := closed[n.Conn]; !ok || at > n.At+n.Time {
			t.Fatalf("conn %d received MOVING at %v with a %v grace; closed at %v (ok %v)", n.Conn, n.At, n.Time, at, ok)
		}
	}
	redials := 0
	for _, d := range res.Dials {
		if d.Endpoint == "b1:6379" && d.At >= notices[0].At {
			redials++
		}
	}
	if redials < len(notices) {
		t.Fatalf("%d dials of b1 after MOVING, want one per noticed connection (%d)", redials, len(notices))
	}
	onB1 := 0
	for _, a := range res.Applies {
		if a.CmdID != 0 && a.Node == "b1" && a.At > notices[0].At+notices[0].Time {
			onB1++
		}
	}
	if onB1 == 0 {
		t.Fatal("no command applied on b1 after the handoff: the node lost its slots")
	}
	if v := check.Judge(res); !v.Pass() {
		t.Fatalf("violations: %v", v.Unexpected)
	}
}
