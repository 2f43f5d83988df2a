package sim

import (
	"strings"
	"testing"
	"time"

	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/sim/record"
	"github.com/respire-go/respire/sim/scenario"
)

// armedTimers maps each armed timer to the time it was armed and its delay.
func armedTimers(res *record.Result) map[fsm.TimerID][2]time.Duration {
	m := map[fsm.TimerID][2]time.Duration{}
	for _, s := range res.Steps {
		for _, f := range s.Effects {
			if f.Kind == fsm.ArmTimer {
				m[f.Timer] = [2]time.Duration{s.Event.At, f.After}
			}
		}
	}
	return m
}

// withoutPlants returns a copy of the scenario with its plants removed.
func withoutPlants(sc *scenario.Scenario) *scenario.Scenario {
	c := sc.Clone()
	c.Plant = nil
	return c
}

// TestPlantReplayAccepted: a command written on a connection that failed is sent again on the
// slot's next connection, and applied twice.
func TestPlantReplayAccepted(t *testing.T) {
	sc := mustLoad(t, "testdata/plant_replay_accepted.yaml")
	res := run(t, sc, sc.Seed, false)
	sendConns := map[uint64][]fsm.ConnID{}
	for _, s := range res.Sends {
		sendConns[s.CmdID] = append(sendConns[s.CmdID], s.Conn)
	}
	applies := map[uint64]int{}
	for _, a := range res.Applies {
		applies[a.CmdID]++
	}
	replayed := 0
	for id, conns := range sendConns {
		if len(conns) == 2 && conns[0] != conns[1] && applies[id] == 2 {
			replayed++
		}
	}
	if replayed != 1 {
		t.Fatalf("want one command sent on two connections and applied twice, got %d", replayed)
	}
	// The control run without the plant replays nothing.
	clean := run(t, withoutPlants(sc), sc.Seed, false)
	for _, a := range clean.Applies {
		applies[a.CmdID] = 0
	}
	seen := map[uint64]bool{}
	for _, a := range clean.Applies {
		if seen[a.CmdID] {
			t.Fatal("the control run replayed a command")
		}
		seen[a.CmdID] = true
	}
	checkNodeModel(t, res) // the swallowed reply keeps FIFO pairing intact
}

// TestPlantTimers: late-timers fires every engine timer at twice its delay; early-dial at once.
func TestPlantTimers(t *testing.T) {
	for _, tc := range []struct {
		path   string
		factor time.Duration
	}{{"testdata/plant_late_timers.yaml", 2}, {"testdata/plant_early_dial.yaml", 0}} {
		sc := mustLoad(t, tc.path)
		res := run(t, sc, sc.Seed, false)
		armed := armedTimers(res)
		fired := steps(res, fsm.TimerFired, 0, res.End+1)
		if len(fired) < 2 {
			t.Fatalf("%s: only %d timers fired", tc.path, len(fired))
		}
		for _, s := range fired {
			a := armed[s.Event.Timer]
			if got := s.Event.At - a[0]; got != tc.factor*a[1] {
				t.Fatalf("%s: timer %d armed for %v fired after %v", tc.path, s.Event.Timer, a[1], got)
			}
		}
		clean := run(t, withoutPlants(sc), sc.Seed, false)
		armed = armedTimers(clean)
		for _, s := range steps(clean, fsm.TimerFired, 0, clean.End+1) {
			if a := armed[s.Event.Timer]; s.Event.At-a[0] != a[1] {
				t.Fatalf("%s control: timer fired after %v, armed for %v", tc.path, s.Event.At-a[0], a[1])
			}
		}
	}
}

// TestPlantOKWithoutApply: one write is acknowledged but never applied.
func TestPlantOKWithoutApply(t *testing.T) {
	sc := mustLoad(t, "testdata/plant_ok_without_apply.yaml")
	res := run(t, sc, sc.Seed, false)
	applied := map[uint64]bool{}
	for _, a := range res.Applies {
		applied[a.CmdID] = true
	}
	missing := 0
	for _, op := range res.Ops {
		if op.Outcome == record.OpOK && !applied[op.ID] {
			if op.Name != "SET" && op.Name != "MSET" {
				t.Fatalf("op %d %s acknowledged without apply", op.ID, op.Name)
			}
			missing++
		}
	}
	if missing != 1 {
		t.Fatalf("want exactly one acknowledged write missing from the apply log, got %d", missing)
	}
}

// TestPlantStaleRead: one GET returns the key's previous value, contradicting the apply log.
func TestPlantStaleRead(t *testing.T) {
	sc := mustLoad(t, "testdata/plant_stale_read.yaml")
	res := run(t, sc, sc.Seed, false)
	bad, _ := nodeModelMismatches(res)
	if len(bad) != 1 || !strings.Contains(bad[0], "GET") {
		t.Fatalf("want one stale GET, got %v", bad)
	}
	if bad, _ := nodeModelMismatches(run(t, withoutPlants(sc), sc.Seed, false)); len(bad) != 0 {
		t.Fatalf("control run: %v", bad)
	}
}

// TestPlantDoubleComplete: one command's completion callback runs twice; the workload records it.
func TestPlantDoubleComplete(t *testing.T) {
	sc := mustLoad(t, "testdata/plant_double_complete.yaml")
	res := run(t, sc, sc.Seed, true)
	dup := 0
	for _, l := range res.Trace {
		if strings.Contains(l, "op duplicate-completion") {
			dup++
		}
	}
	if len(res.Duplicates) != 1 || dup != 1 {
		t.Fatalf("want one duplicate completion recorded and traced, got %+v and %d lines", res.Duplicates, dup)
	}
	d := res.Duplicates[0]
	for _, op := range res.Ops {
		if op.ID == d.CmdID && (op.Outcome != record.OpOK || op.Return != d.At) {
			t.Fatalf("the duplicate must follow the op's own completion: %+v %+v", op, d)
		}
	}
	if clean := run(t, withoutPlants(sc), sc.Seed, false); len(clean.Duplicates) != 0 {
		t.Fatal("control run completed a command twice")
	}
}

// TestPlantCommandBeforeHandshake: one apply is recorded as arriving before the handshake.
func TestPlantCommandBeforeHandshake(t *testing.T) {
	sc := mustLoad(t, "testdata/plant_command_before_handshake.yaml")
	res := run(t, sc, sc.Seed, false)
	early := 0
	for _, a := range res.Applies {
		if !a.AfterHandshake {
			early++
		}
	}
	if early != 1 {
		t.Fatalf("want one early apply, got %d", early)
	}
}

// TestPlantDeadAfterHeal: after the kill heals the node keeps refusing: no reconnect, ever.
func TestPlantDeadAfterHeal(t *testing.T) {
	sc := mustLoad(t, "testdata/plant_dead_after_heal.yaml")
	res := run(t, sc, sc.Seed, false)
	if res.HealedAt != 4*sec {
		t.Fatalf("healed at %v", res.HealedAt)
	}
	if n := len(steps(res, fsm.HandshakeDone, 3*sec, res.End+1)); n != 0 {
		t.Fatalf("%d connections became ready after the kill", n)
	}
	refused := steps(res, fsm.DialFailed, res.HealedAt, res.End+1)
	if len(refused) == 0 || !strings.Contains(errText(refused[0].Event), "refused") {
		t.Fatal("no refused dial after the heal")
	}
	clean := run(t, withoutPlants(sc), sc.Seed, false)
	if n := len(steps(clean, fsm.HandshakeDone, 4*sec, clean.End+1)); n != 2 {
		t.Fatalf("control run: %d reconnections after the restart, want 2", n)
	}
}
