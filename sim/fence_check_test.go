package sim

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/respire-go/respire/sim/check"
	"github.com/respire-go/respire/sim/record"
	"github.com/respire-go/respire/sim/scenario"
)

// granted returns the Settles of res that were granted, and the applies of their commands.
func granted(res *record.Result) ([]record.Settle, map[uint64]record.Apply) {
	var out []record.Settle
	ids := map[uint64]bool{}
	for _, s := range res.Settles {
		if s.Outcome == record.SettleGranted {
			out = append(out, s)
			ids[s.CmdID] = true
		}
	}
	applies := map[uint64]record.Apply{}
	for _, a := range res.Applies {
		if ids[a.CmdID] {
			applies[a.CmdID] = a
		}
	}
	return out, applies
}

// returnOf returns when the caller of command id saw its outcome.
func returnOf(res *record.Result, id uint64) time.Duration {
	for _, op := range res.Ops {
		if op.ID == id {
			return op.Return
		}
	}
	return -1
}

// TestFenceScenarios: every scenarios/fence-*.yaml passes its checkers, the fence checker among
// them, with unknown outcomes settled through the client's fence path (the workload asks the
// engine, as client.Settle does), and each shows what it is about:
//   - fence-paused-node: latent bytes exist: settled commands ran after their caller saw the
//     connection die, and their Settle returned only after they ran;
//   - fence-partition and fence-control-refused: the fence dropped commands still on the way:
//     settled commands that were written never ran (the planted run of the partition, which
//     skips the kill, runs them: TestFenceCheckerCatchesASkippedKill);
//   - fence-node-restart and fence-control-refused: control connections were refused, and the
//     fences were acknowledged after.
func TestFenceScenarios(t *testing.T) {
	paths, err := filepath.Glob("../scenarios/fence-*.yaml")
	if err != nil || len(paths) < 4 {
		t.Fatalf("fence scenarios: %v %v", paths, err)
	}
	for _, path := range paths {
		sc := mustLoad(t, path)
		t.Run(sc.Name, func(t *testing.T) {
			res := run(t, sc, sc.Seed, true)
			v := check.Judge(res)
			if !v.Pass() {
				t.Fatalf("checkers: %+v missing %v", v.Unexpected, v.Missing)
			}
			if !slices.Contains(v.Checked, check.CheckFence) {
				t.Fatalf("the fence checker did not run: %v", v.Checked)
			}
			settled, applies := granted(res)
			if len(settled) == 0 {
				t.Fatalf("no Settle was granted: %+v", res.Settles)
			}
			trace := strings.Join(res.Trace, "\n")
			latent, dropped := 0, 0
			for _, s := range settled {
				a, ran := applies[s.CmdID]
				switch {
				case ran && a.At > returnOf(res, s.CmdID) && a.At <= s.Answered:
					latent++
				case !ran:
					dropped++
				}
			}
			refused := strings.Contains(trace, "dial-failed conn=fence#")
			switch sc.Name {
			case "fence-paused-node":
				if latent == 0 {
					t.Fatalf("no settled command ran after its caller saw the connection die: %+v", settled)
				}
			case "fence-partition":
				if dropped == 0 {
					t.Fatalf("no settled command was dropped by its fence: %+v", settled)
				}
			case "fence-control-refused":
				if dropped == 0 || !refused {
					t.Fatalf("dropped %d, control refused %v", dropped, refused)
				}
			case "fence-node-restart":
				if !refused {
					t.Fatal("no control connection was refused")
				}
			default:
				t.Fatalf("no expectation for scenario %s", sc.Name)
			}
		})
	}
}

// TestFenceCheckerCatchesASkippedKill is the fence checker's positive control, through the
// production fence path: with the fence-skip-kill plant the engine reports the kill answered
// without sending it, Settle returns while the partitioned connection's commands are still on
// their way, and they run when the partition heals. The checker names them; without the plant
// the same scenario (fence-partition) passes and those commands never run.
func TestFenceCheckerCatchesASkippedKill(t *testing.T) {
	sc := mustLoad(t, "testdata/plant_fence_skip_kill.yaml")
	res := run(t, sc, sc.Seed, true)
	var found []check.Violation
	for _, v := range check.Judge(res).Violations {
		if v.Checker == check.CheckFence {
			found = append(found, v)
		}
	}
	if len(found) == 0 {
		t.Fatal("the fence checker found nothing in the planted run")
	}
	if !strings.Contains(found[0].Message, "after its fence on conn") {
		t.Fatalf("unexpected finding: %s", found[0].Message)
	}
	clean := withoutPlants(sc)
	clean.Expect = scenario.Expect{}
	cres := run(t, clean, clean.Seed, true)
	if vs := (check.Fence{}).Check(cres); len(vs) != 0 {
		t.Fatalf("the clean run failed: %+v", vs)
	}
	_, applies := granted(cres)
	for _, s := range cres.Settles {
		if _, ran := applies[s.CmdID]; ran && applies[s.CmdID].At > s.Answered {
			t.Fatalf("command %d ran after its fence in the clean run", s.CmdID)
		}
	}
}

// TestFenceCheckerUnansweredSettle: a Settle still pending at the end of a run is a violation
// (closing the client answers every waiter).
func TestFenceCheckerUnansweredSettle(t *testing.T) {
	r := &record.Result{Settles: []record.Settle{{CmdID: 7, Conn: 3, Asked: time.Second}}}
	vs := (check.Fence{}).Check(r)
	if len(vs) != 1 || !strings.Contains(vs[0].Message, "never answered") {
		t.Fatalf("violations %+v", vs)
	}
	r.Settles[0].Outcome, r.Settles[0].Answered = record.SettleGranted, 2*time.Second
	r.Applies = []record.Apply{{Node: "r1", CmdID: 7, At: 2 * time.Second}}
	if vs := (check.Fence{}).Check(r); len(vs) != 0 {
		t.Fatalf("an apply at the instant of the grant is not after it: %+v", vs)
	}
	r.Applies[0].At = 2*time.Second + 1
	if vs := (check.Fence{}).Check(r); len(vs) != 1 {
		t.Fatalf("an apply after the grant: %+v", vs)
	}
}
