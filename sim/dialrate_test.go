package sim

import (
	"strings"
	"testing"

	"github.com/respire-go/respire/sim/check"
	"github.com/respire-go/respire/sim/scenario"
)

// TestDialRateControl: the shipped dial-rate scenario passes, and with the early-dial plant (a
// slot dials again while its delay is still scheduled: the incident's storm) its dial_rate and
// during expectations fail.
func TestDialRateControl(t *testing.T) {
	sc := mustLoad(t, "../scenarios/dial-rate-refusing-peer.yaml")
	if v := check.Judge(run(t, sc, sc.Seed, false)); !v.Pass() {
		t.Fatalf("clean run failed: %+v", v.Unexpected)
	}
	planted := sc.Clone()
	planted.Plant = []scenario.Plant{scenario.PlantEarlyDial}
	planted.Expect.Invariants = scenario.Invariants{Names: []string{"outcomes"}}
	v := check.Judge(run(t, planted, sc.Seed, false))
	found := map[string]string{}
	for _, x := range v.Unexpected {
		if strings.Contains(x.Message, "dials to r1") {
			found[x.Checker] = x.Message
		}
	}
	if !strings.Contains(found[check.CheckExpectDialRate], "dials to r1") || !strings.Contains(found[check.CheckExpectDuring], "dials to r1") {
		t.Fatalf("the planted storm was not caught: %v", found)
	}
}
