package sim

import (
	"fmt"
	"testing"
	"time"

	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/sim/check"
	"github.com/respire-go/respire/sim/record"
	"github.com/respire-go/respire/sim/scenario"
)

// stormDials counts a run's command-slot dials: per slot within the window [from, to), and in
// all.
func stormDials(r *record.Result, slots int, from, to time.Duration) (inWindow []int, total int) {
	inWindow = make([]int, slots)
	for _, st := range r.Steps {
		for _, f := range st.Effects {
			if f.Kind != fsm.Dial || f.Machine != fsm.MachineMux {
				continue
			}
			total++
			if at := st.Event.At; at >= from && at < to {
				inWindow[f.Slot]++
			}
		}
	}
	return inWindow, total
}

// spacedDials is the most dials the no-policy spacing allows one slot in a window of length
// span that starts with an immediate replacement: one, plus one per rest that fits (250 ms, then
// doubling up to 5 s), computed here independently of fsm.
func spacedDials(span time.Duration) int {
	n, spent, rest := 1, time.Duration(0), 250*time.Millisecond
	for spent+rest <= span {
		spent += rest
		n++
		rest = min(2*rest, 5*time.Second)
	}
	return n
}

// TestNoPolicyRefusingEndpointDoesNotStorm is the regression test of issue 10, defect 6. Without
// a reconnect policy, a client with 16 to 1,024 slots at 3,000 commands/s loses every connection
// at 2 s while the node refuses connections for 3 s (scenarios/storm-no-policy-*-slots.yaml).
// Before the fix one command passing N failed slots started N attempts: 36,176 dials with 16
// slots, 143,808 with 64, 572,160 with 256 (1.6 GB of heap), and 1,024 slots ran the simulator
// out of memory. Now each slot dials at most as the no-policy spacing allows in the outage (four
// times in 3 s), every checker passes (the policy checker verifies the spacing of each dial),
// and the client converges after the heal.
func TestNoPolicyRefusingEndpointDoesNotStorm(t *testing.T) {
	const outageFrom, outageTo = 2 * time.Second, 5 * time.Second
	limit := spacedDials(outageTo - outageFrom)
	for _, slots := range []int{16, 64, 256, 1024} {
		name := fmt.Sprintf("storm-no-policy-%d-slots", slots)
		sc := mustLoad(t, "../scenarios/"+name+".yaml")
		if sc.Client.ReconnectPolicy != nil || sc.Client.Connections != slots {
			t.Fatalf("%s: want %d slots and no policy", name, slots)
		}
		r, err := Run(sc, sc.Seed, RunOptions{})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		perSlot, total := stormDials(r, slots, outageFrom, outageTo)
		// The storm's conditions held: the outage was seen by every slot (each lost its connection
		// and its immediate replacement was refused), and commands kept coming at full rate.
		issued, failed := 0, 0
		for _, op := range r.Ops {
			if op.Call >= outageFrom && op.Call < outageTo {
				issued++
				if op.Outcome == record.OpFailed {
					failed++
				}
			}
		}
		if issued < 8000 || failed < issued/2 {
			t.Fatalf("%s: %d commands issued in the outage, %d failed: the workload did not press on the outage", name, issued, failed)
		}
		most := 0
		for s, n := range perSlot {
			if n < 2 {
				t.Fatalf("%s: slot %d dialed %d times in the outage: it did not go through recovery", name, s, n)
			}
			if n > limit {
				t.Fatalf("%s: slot %d dialed %d times in the 3 s outage (%d dials in the run), the spacing allows %d",
					name, s, n, total, limit)
			}
			most = max(most, n)
		}
		// Outside the outage each slot dials once to connect and once to recover, give or take a
		// rest that straddles the heal.
		if bound := slots * (limit + 3); total > bound {
			t.Fatalf("%s: %d dials in the run, want at most %d", name, total, bound)
		}
		if v := check.Judge(r); !v.Pass() {
			t.Fatalf("%s: %v %v", name, v.Unexpected, v.Missing)
		}
		t.Logf("%s: %d dials in all, at most %d per slot in the outage (%d commands issued in it)", name, total, most, issued)
	}
}

// TestNoPolicyDialsDoNotFollowTheCommandRate: the same 16-slot outage at 300, 3,000 and 30,000
// commands/s. A slot's dials in the outage stay within the spacing at every rate, and the total
// grows by no more than a few dials while the command rate grows a hundredfold.
func TestNoPolicyDialsDoNotFollowTheCommandRate(t *testing.T) {
	const outageFrom, outageTo = 2 * time.Second, 5 * time.Second
	limit := spacedDials(outageTo - outageFrom)
	var totals []int
	for _, rate := range []scenario.Rate{300, 3000, 30000} {
		sc := mustLoad(t, "../scenarios/storm-no-policy-16-slots.yaml")
		sc.Workload.Rate = rate
		sc.Expect.Linearizable = false // the checker is not what this test measures
		r, err := Run(sc, sc.Seed, RunOptions{})
		if err != nil {
			t.Fatal(err)
		}
		perSlot, _ := stormDials(r, 16, outageFrom, outageTo)
		sum := 0
		for s, n := range perSlot {
			if n < 2 || n > limit {
				t.Fatalf("rate %v: slot %d dialed %d times in the outage, want 2..%d", rate, s, n, limit)
			}
			sum += n
		}
		if v := check.Judge(r); !v.Pass() {
			t.Fatalf("rate %v: %v %v", rate, v.Unexpected, v.Missing)
		}
		totals = append(totals, sum)
	}
	if totals[2] > totals[0]+16 {
		t.Fatalf("outage dials grew with the command rate: %v at 300, 3,000 and 30,000 commands/s", totals)
	}
	t.Logf("outage dials at 300, 3,000 and 30,000 commands/s: %v", totals)
}
