package check

import (
	"testing"
	"time"

	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/sim/record"
	"github.com/respire-go/respire/sim/scenario"
)

// dials returns one transport record of a connection attempt at each time, to r1 (the default
// topology's node), or to host when given. The windowed checks count these, not the machines'
// Dial effects: a redial the engine makes behind its machine reaches the node all the same.
func dials(host string, at ...time.Duration) []record.Dial {
	if host == "" {
		host = "r1"
	}
	var out []record.Dial
	for i, t := range at {
		out = append(out, record.Dial{Conn: fsm.ConnID(i + 1), Endpoint: host + ":6379", At: t})
	}
	return out
}

func windowScenario(t *testing.T, expect string) *scenario.Scenario {
	t.Helper()
	sc, err := scenario.Parse([]byte("name: x\nduration: 10s\nexpect:\n" + expect))
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

func TestDialRateCheck(t *testing.T) {
	sc := windowScenario(t, "  dial_rate: [{node: r1, max: 2, per: 1s}]\n")
	ok := &record.Result{Scenario: sc, Dials: dials("", ms(0), ms(500), ms(1000), ms(1500), ms(2000))}
	expectViolations(t, expectDialRate{}, ok)
	storm := &record.Result{Scenario: sc, Dials: dials("", ms(0), ms(3000), ms(3100), ms(3200), ms(5000))}
	expectViolations(t, expectDialRate{}, storm, "3 dials to r1 from 3s to 3.2s, within 1s: want at most 2")
	// Dials to another endpoint do not count towards r1's rate.
	other := &record.Result{Scenario: sc, Dials: append(dials("", ms(3000)), dials("r2", ms(3001), ms(3002))...)}
	expectViolations(t, expectDialRate{}, other)
	// The transport's records count, not the machines' Dial effects: an attempt the engine makes
	// again behind its machine's back (one effect, three dials) is seen.
	behind := &record.Result{Scenario: sc, Dials: dials("", ms(3000), ms(3001), ms(3002)),
		Steps: []record.Step{{Event: fsm.Event{At: ms(3000)}, Effects: []fsm.Effect{{Kind: fsm.Dial}}}}}
	expectViolations(t, expectDialRate{}, behind, "3 dials to r1 from 3s to 3.002s, within 1s: want at most 2")
	// During limits the window of the check.
	sc2 := windowScenario(t, "  dial_rate: [{max: 1, per: 1s, during: 4s..10s}]\n")
	expectViolations(t, expectDialRate{}, &record.Result{Scenario: sc2, Dials: dials("", ms(0), ms(10), ms(4000), ms(5000))})
	expectViolations(t, expectDialRate{}, &record.Result{Scenario: sc2, Dials: dials("", ms(4000), ms(4500))}, "2 dials to every node")
}

func TestDuringCheck(t *testing.T) {
	sc := windowScenario(t, "  during:\n    - window: 2s..4s\n      outcomes: {ok: {max: 0}, failed: {min: 2}}\n      dials: [{node: r1, max: 1}]\n")
	op := func(call int, o record.OpOutcome) record.Op {
		return record.Op{Call: ms(call), Return: ms(call), Outcome: o}
	}
	clean := &record.Result{Scenario: sc, End: 10 * time.Second,
		Ops:   []record.Op{op(1000, record.OpOK), op(2000, record.OpFailed), op(3999, record.OpFailed), op(4000, record.OpOK)},
		Dials: dials("", ms(1000), ms(2500), ms(4000))}
	expectViolations(t, expectDuring{}, clean)
	bad := &record.Result{Scenario: sc, End: 10 * time.Second,
		Ops:   []record.Op{op(2000, record.OpOK), op(3000, record.OpFailed)},
		Dials: dials("", ms(2500), ms(3500))}
	expectViolations(t, expectDuring{}, bad, "in 2s..4s: ok operations: 1, want at most 0", "failed operations: 1, want at least 2",
		"dials to r1: 2, want at most 1")
}
