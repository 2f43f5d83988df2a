package sim

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/respire-go/respire/engine"
	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/sim/check"
)

// TestDedicatedPlants: each dedicated plant is caught by its checker and by no other, and the
// same scenario without the plant passes every checker.
func TestDedicatedPlants(t *testing.T) {
	for _, tc := range []struct{ path, checker, trace string }{
		{"testdata/plant_retry_permanent.yaml", check.CheckRentPermanent, "plant retry-permanent"},
		{"testdata/plant_re_rent.yaml", check.CheckRentBudget, "plant re-rent"},
		{"testdata/plant_resend_blocking.yaml", check.CheckDedicatedNoResend, "plant resend-blocking"},
		{"testdata/plant_use_after_return.yaml", check.CheckPool, "plant use-after-return"},
	} {
		t.Run(filepath.Base(tc.path), func(t *testing.T) {
			sc := mustLoad(t, tc.path)
			res := run(t, sc, sc.Seed, true)
			v := check.Judge(res)
			if !v.Pass() {
				t.Fatalf("control failed: unexpected %v, missing %v", v.Unexpected, v.Missing)
			}
			planted := false
			for _, l := range res.Trace {
				planted = planted || strings.Contains(l, tc.trace)
			}
			if !planted {
				t.Fatalf("the plant never fired")
			}
			clean := run(t, withoutPlants(sc), sc.Seed, false)
			if found := (check.Checkers(clean)[0]).Check(clean); len(found) != 0 {
				t.Fatalf("clean run: %v", found)
			}
			for _, c := range check.Checkers(clean) {
				if found := c.Check(clean); len(found) > 0 {
					t.Fatalf("clean run: %s found %v", c.Name(), found)
				}
			}
		})
	}
}

// TestDedicatedScenarios: every dedicated scenario passes its checkers, replays its journal
// exactly, and is deterministic.
func TestDedicatedScenarios(t *testing.T) {
	paths, err := filepath.Glob("../scenarios/dedicated-*.yaml")
	if err != nil || len(paths) < 6 {
		t.Fatalf("dedicated scenarios: %v %v", paths, err)
	}
	for _, path := range paths {
		sc := mustLoad(t, path)
		t.Run(sc.Name, func(t *testing.T) {
			res := run(t, sc, sc.Seed, false)
			if v := check.Judge(res); !v.Pass() {
				t.Fatalf("violations: %v, missing %v", v.Unexpected, v.Missing)
			}
			if len(res.Dedicated) == 0 {
				t.Fatal("no dedicated operation ran")
			}
			if again := run(t, sc, sc.Seed, false); again.TraceHash != res.TraceHash {
				t.Fatal("not deterministic")
			}
			events := make([]fsm.Event, len(res.Steps))
			for i := range res.Steps {
				events[i] = res.Steps[i].Event
			}
			i := 0
			engine.Replay(res.Scenario.EngineConfig(), events, func(ev *fsm.Event, effects []fsm.Effect) {
				if len(effects) != len(res.Steps[i].Effects) {
					t.Fatalf("step %d (%s): %d effects replayed, %d recorded", i, ev, len(effects), len(res.Steps[i].Effects))
				}
				for j := range effects {
					if effects[j].String() != res.Steps[i].Effects[j].String() {
						t.Fatalf("step %d effect %d: replayed %s, recorded %s", i, j, effects[j], res.Steps[i].Effects[j])
					}
				}
				i++
			})
		})
	}
}
