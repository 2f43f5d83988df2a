package sim

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/respire-go/respire/sim/check"
	"github.com/respire-go/respire/sim/record"
	"github.com/respire-go/respire/sim/scenario"
)

// TestSegmentedDedicatedRuns: a run with dedicated renters hands its records over in segments
// and its journal in windows. Every scenario with renters is streamed, cut at every quiescent
// moment, and keeps the verdict and the trace of its whole run; so are the dedicated checkers'
// positive controls with callers added beside the renters, so that their planted dedicated
// writes are handed over in segments and must still be found. Before, no such run was
// streamed.
func TestSegmentedDedicatedRuns(t *testing.T) {
	shipped, err := filepath.Glob("../scenarios/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var runs []*scenario.Scenario
	for _, path := range shipped {
		// A scenario selecting a checker with no segmented form (the maintenance checkers of
		// maint-dedicated-migrating) is judged whole by design: it is left out here.
		if sc := mustLoad(t, path); sc.Workload.Dedicated != nil && check.NewStream().Accepts(sc) {
			runs = append(runs, shortened(t, path, 60))
		}
	}
	for _, name := range []string{"plant_resend_blocking", "plant_use_after_return", "plant_re_rent", "plant_retry_permanent"} {
		data, err := os.ReadFile("testdata/" + name + ".yaml")
		if err != nil {
			t.Fatal(err)
		}
		text := strings.Replace(string(data), "workload:\n", "workload:\n  callers: 2\n  rate: 50/s\n  keys: 4\n", 1)
		sc, err := scenario.Parse([]byte(text))
		if err != nil {
			t.Fatalf("%s with callers: %v", name, err)
		}
		runs = append(runs, sc)
	}
	cut, dedicatedCut, plants := 0, 0, 0
	for _, sc := range runs {
		st := check.NewStream()
		res, err2 := Run(sc, sc.Seed, RunOptions{Sink: st, SegmentOps: 1, JournalSteps: 10})
		if res == nil {
			continue // no longer valid when cut to a minute
		}
		if res.Segments == 0 && res.StepBase == 0 {
			t.Fatalf("%s: not streamed", sc.Name)
		}
		whole, err := Run(sc, sc.Seed, RunOptions{})
		if (err == nil) != (err2 == nil) {
			t.Fatalf("%s: run errors differ: %v and %v", sc.Name, err, err2)
		}
		if res.TraceHash != whole.TraceHash {
			t.Fatalf("%s: the trace changed when the records were segmented", sc.Name)
		}
		if err != nil {
			continue
		}
		want, got := check.Judge(whole), st.Judge(res)
		if want.Pass() != got.Pass() || !slices.Equal(failedCheckers(want), failedCheckers(got)) || want.Ops != got.Ops {
			t.Fatalf("%s (%d segments): whole run pass=%v failed=%v ops=%d; segmented pass=%v failed=%v ops=%d %v",
				sc.Name, res.Segments, want.Pass(), failedCheckers(want), want.Ops, got.Pass(), failedCheckers(got), got.Ops, got.Violations)
		}
		if res.Segments > 0 {
			cut++
			// Some dedicated writes went to a segment before the last.
			if countDedicatedCmds(res) < countDedicatedCmds(whole) {
				dedicatedCut++
				if len(sc.Expect.Fail) > 0 {
					plants++
				}
			}
		}
	}
	t.Logf("%d runs with renters cut into segments, %d with dedicated writes in earlier segments, %d of them positive controls", cut, dedicatedCut, plants)
	if cut < 6 || dedicatedCut < 6 || plants < 3 {
		t.Fatalf("only %d runs cut, %d with dedicated writes in earlier segments, %d positive controls: the comparison says little", cut, dedicatedCut, plants)
	}
}

// countDedicatedCmds counts the writes of dedicated commands in r.
func countDedicatedCmds(r *record.Result) int {
	n := 0
	for _, s := range r.Sends {
		if s.CmdID >= record.DedicatedIDBase {
			n++
		}
	}
	return n
}
