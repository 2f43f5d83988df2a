package sim

import (
	"strings"
	"testing"

	"github.com/respire-go/respire/sim/check"
)

// TestSentinelMonitorRenewedMidRetry is the positive control of
// sentinel-monitor-renewed-mid-retry's expect.monitors. The scenario passes as written
// (TestSentinelScenarios): the failover's publication lands while the monitor of s3 is still
// spending its retries, so the monitor starts over at once when it exhausts. The control is the
// same run without the failover: nothing renews the budget, the monitor of s3 stops after its
// three retries and never watches s3 again, and expect-monitors, only it, reports each of its
// bounds broken (too few dials, no resumption, no subscription after s3 is back).
func TestSentinelMonitorRenewedMidRetry(t *testing.T) {
	sc := mustLoad(t, "../scenarios/sentinel-monitor-renewed-mid-retry.yaml")
	if n := len(sc.Expect.Monitors); n == 0 {
		t.Fatal("the scenario must assert its monitor")
	}
	res := run(t, sc, sc.Seed, false)
	v := check.Judge(res)
	if !v.Pass() {
		t.Fatalf("violations %v, missing %v", v.Unexpected, v.Missing)
	}
	checked := false
	for _, n := range v.Checked {
		checked = checked || n == check.CheckExpectMonitors
	}
	if !checked {
		t.Fatalf("expect-monitors did not run (checked %v)", v.Checked)
	}

	control := sc.Clone()
	kept := control.Faults[:0]
	for _, f := range control.Faults {
		if f.Sentinel == nil {
			kept = append(kept, f)
		}
	}
	if len(kept) == len(control.Faults) {
		t.Fatal("the scenario has no failover to leave out")
	}
	control.Faults = kept
	// Without the failover the writes stay on r1: the windowed outcomes still hold.
	res = run(t, control, control.Seed, false)
	v = check.Judge(res)
	var caught []string
	for _, u := range v.Unexpected {
		if u.Checker != check.CheckExpectMonitors {
			t.Errorf("only expect-monitors may fail, got %s: %s", u.Checker, u.Message)
			continue
		}
		caught = append(caught, u.Message)
	}
	for _, want := range []string{" dials in 2s..3.8s", " resumptions at once", " completed subscriptions in 3.8s..8s"} {
		found := false
		for _, m := range caught {
			found = found || strings.Contains(m, want)
		}
		if !found {
			t.Errorf("without a renewal, expect-monitors must report %q; it reported %v", want, caught)
		}
	}
}
