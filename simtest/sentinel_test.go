package simtest_test

import (
	"context"
	"testing"
	"time"

	"github.com/respire-go/respire/sim/scenario"
	"github.com/respire-go/respire/simtest"
)

// TestSentinelClient: a Sentinel scenario gives a Sentinel client (SentinelPrimaryName, the
// configured Sentinels as endpoints) that discovers the primary through the simulated
// Sentinels, checks its ROLE, and follows a failover: writes land on r1, then on r2 once the
// Sentinels promote it. The seed replays the same run.
func TestSentinelClient(t *testing.T) {
	sc, err := scenario.Parse([]byte(`
name: sentinel-simtest
duration: 30s
topology:
  kind: sentinel
  nodes: [{id: r1}, {id: r2}, {id: s1}, {id: s2}, {id: s3}]
  sentinel: {primary: r1, replicas: [r2], sentinels: [s1, s2, s3]}
client: {connect_timeout: 500ms, command_timeout: 1s, reconnect_policy: {initial_delay: 100ms, max_delay: 1s}}
faults:
  - {at: 2s, sentinel: {failover: {promote: r2}}}
`))
	if err != nil {
		t.Fatal(err)
	}
	body := func(env *simtest.Env) {
		ctx := context.Background()
		c := env.Client()
		for round := 0; round < 5; round++ {
			if _, err := c.Incr(ctx, "n"); err != nil {
				env.Logf("round %d: %v", round, err)
			}
			env.Sleep(time.Second)
		}
		v, _, err := c.Get(ctx, "n")
		if err != nil || v == "" || v == "0" {
			env.Errorf("after the failover, n=%q %v", v, err)
		}
	}
	res := simtest.Test(t, simtest.Config{Scenario: sc, Seed: 6}, body)
	if res.Failed() {
		return
	}
	if again := simtest.Run(simtest.Config{Scenario: sc, Seed: 6}, body); again.TraceHash != res.TraceHash {
		t.Fatalf("seed 6 gave two traces: %s and %s", res.TraceHash, again.TraceHash)
	}
	before, after := 0, 0
	for _, a := range res.Sim.Applies {
		if a.Name != "INCR" {
			continue
		}
		switch {
		case a.Node == "r1" && a.At < 2*time.Second:
			before++
		case a.Node == "r2" && a.At > 2*time.Second:
			after++
		default:
			t.Errorf("INCR applied on %s at %v", a.Node, a.At)
		}
	}
	if before == 0 || after == 0 {
		t.Fatalf("INCRs on r1 before the failover: %d, on r2 after: %d", before, after)
	}
}
