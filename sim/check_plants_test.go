package sim

import (
	"path/filepath"
	"testing"

	"github.com/respire-go/respire/sim/check"
)

// TestPositiveControlsThroughJudge runs every planted-bug scenario through the full verdict: the
// checkers the scenario names under expect.fail must report violations and no other checker may.
// The same scenario without its plant must pass cleanly, so each failure is the plant's doing.
func TestPositiveControlsThroughJudge(t *testing.T) {
	files, err := filepath.Glob("testdata/plant_*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no control scenarios: %v", err)
	}
	covered := map[string]bool{}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			sc := mustLoad(t, f)
			if len(sc.Plant) == 0 || len(sc.Expect.Fail) == 0 {
				t.Fatalf("a control must plant a bug and name the checkers that catch it")
			}
			res, err := Run(sc, sc.Seed, RunOptions{})
			if err != nil {
				t.Fatal(err)
			}
			v := check.Judge(res)
			if !v.Pass() {
				t.Fatalf("unexpected violations %v, missing failures %v", v.Unexpected, v.Missing)
			}
			for _, n := range sc.Expect.Fail {
				covered[n] = true
			}
			clean := sc.Clone()
			clean.Plant = nil
			clean.Expect.Fail = nil
			res, err = Run(clean, clean.Seed, RunOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if v := check.Judge(res); !v.Pass() {
				t.Fatalf("without its plant the scenario must pass, got %v", v.Unexpected)
			}
		})
	}
	// Every invariant checker has a planted control here or a synthetic one in sim/check.
	synthetic := map[string]bool{check.CheckPairing: true, check.CheckReplay: true}
	for _, n := range append(append([]string{}, check.AllInvariants...), check.CheckLinearizable, check.CheckLiveness) {
		if !covered[n] && !synthetic[n] {
			t.Errorf("checker %s has no planted positive control", n)
		}
	}
}
