package check

import "github.com/respire-go/respire/sim/record"

// Verdict is the result of checking one run against its scenario.
type Verdict struct {
	// Checked lists the checkers that ran, in order.
	Checked []string
	// Violations are every violation found, in checker order.
	Violations []Violation
	// Unexpected are the violations of checkers the scenario did not expect to fail.
	Unexpected []Violation
	// Missing lists checkers the scenario expected to fail (positive controls) that found nothing.
	Missing []string
	// Ops is the number of operations checked (the workload's and the dedicated renters').
	Ops int
}

// Pass reports whether the run satisfied its scenario: no unexpected violation and every
// expected failure observed.
func (v *Verdict) Pass() bool { return len(v.Unexpected) == 0 && len(v.Missing) == 0 }

// Checkers returns the checkers a scenario selects: its invariants ("all" when unspecified),
// linearizability and liveness when asked for, and every checker named under expect.fail.
func Checkers(r *record.Result) []Checker {
	sc := r.Scenario
	byName := map[string]Checker{
		CheckNoReplay:       NoReplay{},
		CheckOutcomes:       Outcomes{},
		CheckHonest:         Honest{},
		CheckPairing:        Pairing{},
		CheckPolicy:         Policy{Policy: sc.Client.ReconnectPolicy.Policy(), Lifetime: sc.Client.ConnectionMaxLifetime > 0},
		CheckLifetime:       Lifetime{Lifetime: sc.Client.ConnectionMaxLifetime, Jitter: sc.Client.ConnectionMaxLifetimeJitter},
		CheckHandshakeFirst: HandshakeFirst{},
		CheckReplay:         Replay{Config: sc.EngineConfig()},
		CheckLinearizable:   Linearizable{},
		CheckExpectEvents:   expectEvents{},
		CheckExpectOutcomes: expectOutcomes{},
		// Dedicated connections (dedicated.go).
		CheckRentBudget:        RentBudget{Policy: sc.Client.ReconnectPolicy.Policy()},
		CheckRentPermanent:     RentPermanent{},
		CheckDedicatedNoResend: DedicatedNoResend{},
		CheckPool:              Pool{Config: sc.EngineConfig().Pool},
		CheckExpectDedicated:   expectDedicated{},
		// Pub/sub (pubsub.go).
		CheckPubSubSubscriptions: PubSubSubscriptions{},
		CheckPubSubGaps:          PubSubGaps{},
		CheckPubSubExhaustion:    PubSubExhaustion{},
		CheckPubSubPolicy:        PubSubPolicy{Policy: sc.Client.ReconnectPolicy.Policy()},
		CheckExpectPubSub:        expectPubSub{},
		// Cluster (dials.go, retired.go).
		CheckDials:   Dials{},
		CheckRetired: retiredFor(sc),
	}
	if l := sc.Expect.Liveness; l != nil {
		after := l.After
		if after == 0 {
			after = r.HealedAt
		}
		byName[CheckLiveness] = Liveness{After: after, Within: l.Within}
	}
	var names []string
	inv := sc.Expect.Invariants
	switch {
	case inv.IsZero() || inv.All:
		names = append(names, AllInvariants...)
		if sc.IsCluster() {
			names = append(names, CheckRetired)
		}
	default:
		names = append(names, inv.Names...)
	}
	if sc.Expect.Linearizable {
		names = append(names, CheckLinearizable)
	}
	if sc.Client.ConnectionMaxLifetime > 0 {
		names = append(names, CheckLifetime)
	}
	if sc.Expect.Liveness != nil {
		names = append(names, CheckLiveness)
	}
	if len(sc.Expect.Events) > 0 {
		names = append(names, CheckExpectEvents)
	}
	if sc.Expect.Outcomes != nil {
		names = append(names, CheckExpectOutcomes)
	}
	if sc.Expect.Dedicated != nil {
		names = append(names, CheckExpectDedicated)
	}
	if sc.Expect.PubSub != nil {
		names = append(names, CheckExpectPubSub)
	}
	if dialsSelected(sc) {
		names = append(names, CheckDials)
	}
	names = append(names, sc.Expect.Fail...)
	seen := map[string]bool{}
	var out []Checker
	for _, n := range names {
		if c, ok := byName[n]; ok && !seen[n] {
			seen[n] = true
			out = append(out, c)
		}
	}
	return out
}

// Judge runs the scenario's checkers over r and compares their findings with its expectations.
func Judge(r *record.Result) *Verdict {
	v := &Verdict{Ops: len(r.Ops) + len(r.Dedicated)}
	expectedFail := map[string]bool{}
	for _, n := range r.Scenario.Expect.Fail {
		expectedFail[n] = true
	}
	failed := map[string]bool{}
	for _, c := range Checkers(r) {
		v.Checked = append(v.Checked, c.Name())
		found := c.Check(r)
		v.Violations = append(v.Violations, found...)
		if len(found) > 0 {
			failed[c.Name()] = true
		}
		if !expectedFail[c.Name()] {
			v.Unexpected = append(v.Unexpected, found...)
		}
	}
	for _, n := range r.Scenario.Expect.Fail {
		if !failed[n] {
			v.Missing = append(v.Missing, n)
		}
	}
	return v
}
