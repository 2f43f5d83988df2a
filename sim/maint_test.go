package sim

import (
	"testing"
	"time"

	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/sim/check"
	"github.com/respire-go/respire/sim/record"
)

// maintEvents returns the run's maintenance records of kind k.
func maintEvents(res *record.Result, k record.MaintEventKind) []record.MaintEvent {
	var out []record.MaintEvent
	for _, e := range res.Maint {
		if e.Kind == k {
			out = append(out, e)
		}
	}
	return out
}

// TestMaintMovingHandsOff: in maint-moving every command connection receives MOVING, a
// replacement to r2 becomes ready and the old connection closes within the grace; after the
// handoff every command is applied on r2, and none is sent twice.
func TestMaintMovingHandsOff(t *testing.T) {
	sc := mustLoad(t, "../scenarios/maint-moving.yaml")
	res := run(t, sc, sc.Seed, false)
	notices := maintEvents(res, record.MaintNotice)
	if len(notices) != sc.Client.Connections {
		t.Fatalf("%d notices received, want one per connection (%d)", len(notices), sc.Client.Connections)
	}
	ready := maintEvents(res, record.MaintReady)
	closed := map[fsm.ConnID]time.Duration{}
	for _, e := range maintEvents(res, record.MaintClosed) {
		closed[e.Conn] = e.At
	}
	for _, n := range notices {
		if n.Notice != fsm.MaintMoving || n.Time != 4*time.Second {
			t.Fatalf("notice %+v", n)
		}
		replaced := false
		for _, r := range ready {
			replaced = replaced || (r.Slot == n.Slot && r.At > n.At)
		}
		at, ok := closed[n.Conn]
		if !replaced || !ok || at > n.At+n.Time {
			t.Fatalf("slot %d: replaced %v, old conn closed at %v (ok %v), MOVING at %v", n.Slot, replaced, at, ok, n.At)
		}
	}
	var after, onR2 int
	for _, a := range res.Applies {
		if a.CmdID != 0 && a.At > 3500*time.Millisecond {
			after++
			if a.Node == "r2" {
				onR2++
			}
		}
	}
	if after == 0 || onR2 != after {
		t.Fatalf("%d of %d commands applied after the handoff went to r2", onR2, after)
	}
	if v := check.Judge(res); !v.Pass() {
		t.Fatalf("violations: %v", v.Unexpected)
	}
}

// TestMaintPlantsCaught: each maintenance plant makes its checker fail, and the same run without
// the plant passes it (the positive controls of maint-relaxed-deadlines, maint-drain-budget and
// maint-no-replay).
func TestMaintPlantsCaught(t *testing.T) {
	for _, tc := range []struct{ file, checker string }{
		{"testdata/plant_maint_ignore_relaxation.yaml", check.CheckMaintRelaxed},
		{"testdata/plant_maint_late_close.yaml", check.CheckMaintDrain},
		{"testdata/plant_maint_resend_moving.yaml", check.CheckMaintNoReplay},
	} {
		t.Run(tc.checker, func(t *testing.T) {
			sc := mustLoad(t, tc.file)
			planted := run(t, sc, sc.Seed, false)
			if n := countViolations(planted, tc.checker); n == 0 {
				t.Fatalf("the plant went unnoticed by %s", tc.checker)
			}
			clean := run(t, withoutPlants(sc), sc.Seed, false)
			if n := countViolations(clean, tc.checker); n != 0 {
				t.Fatalf("%s fails without the plant: %d violations", tc.checker, n)
			}
		})
	}
}

func countViolations(res *record.Result, name string) int {
	n := 0
	for _, c := range check.Checkers(res) {
		if c.Name() == name {
			n += len(c.Check(res))
		}
	}
	return n
}

// TestMaintMovingUnreachable: in maint-moving-unreachable each slot retries its replacement to
// the refusing r2 within the grace only, then keeps its old connection: no connection closes
// before the end, and every command is applied on r1.
func TestMaintMovingUnreachable(t *testing.T) {
	sc := mustLoad(t, "../scenarios/maint-moving-unreachable.yaml")
	res := run(t, sc, sc.Seed, false)
	notices := maintEvents(res, record.MaintNotice)
	if len(notices) != sc.Client.Connections {
		t.Fatalf("%d notices, want %d", len(notices), sc.Client.Connections)
	}
	moving, grace := notices[0].At, notices[0].Time
	dials := 0
	for _, d := range res.Dials {
		if d.Endpoint != "r2:6379" {
			continue
		}
		dials++
		if d.At < moving || d.At >= moving+grace {
			t.Fatalf("dial to r2 at %v, outside the grace [%v, %v)", d.At, moving, moving+grace)
		}
	}
	if dials < 2*sc.Client.Connections {
		t.Fatalf("%d dials to r2, want a retry per slot at least", dials)
	}
	for _, e := range maintEvents(res, record.MaintClosed) {
		if e.At < res.End {
			t.Fatalf("conn %d closed at %v: the handoff was given up, the old connection should stay", e.Conn, e.At)
		}
	}
	for _, a := range res.Applies {
		if a.CmdID != 0 && a.Node != "r1" {
			t.Fatalf("command %d applied on %s", a.CmdID, a.Node)
		}
	}
}

// TestMaintSlotsMigratedUpdatesMap: in maint-smigrating the SMIGRATED notice moves slots 0-5460
// to b1 in the client's map as the migration ends, so no command gets MOVED after it; the same
// run without the notice meets MOVED redirects for those slots.
func TestMaintSlotsMigratedUpdatesMap(t *testing.T) {
	sc := mustLoad(t, "../scenarios/maint-smigrating.yaml")
	moved := func(res *record.Result, after time.Duration) int {
		n := 0
		for _, s := range res.Served {
			if s.Code == "MOVED" && s.At > after {
				n++
			}
		}
		return n
	}
	res := run(t, sc, sc.Seed, false)
	var at time.Duration
	for _, e := range maintEvents(res, record.MaintNotice) {
		if e.Notice == fsm.MaintSlotMigrated && (at == 0 || e.At < at) {
			at = e.At
		}
	}
	if at == 0 {
		t.Fatal("no SMIGRATED received")
	}
	withNotice := moved(res, at)
	without := sc.Clone()
	without.Maintenance = without.Maintenance[:1] // SMIGRATING only
	base := moved(run(t, without, sc.Seed, false), at)
	if withNotice != 0 || base == 0 {
		t.Fatalf("MOVED replies after SMIGRATED: %d with the notice, %d without it (want 0 and some)", withNotice, base)
	}
}
