package check

import (
	"strconv"

	"github.com/respire-go/respire/sim/record"
	"github.com/respire-go/respire/sim/scenario"
)

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
	byName := registry(r)
	var names []string
	inv := sc.Expect.Invariants
	switch {
	case inv.IsZero() || inv.All:
		names = append(names, AllInvariants...)
		if sc.IsCluster() {
			names = append(names, CheckRetired)
		}
		if sc.IsSentinel() {
			names = append(names, CheckReplicaWrites)
		}
		if sc.ReplicaReads() {
			names = append(names, replicaCheckers...)
		}
		if sc.Workload.Batches != nil {
			names = append(names, CheckBatchEntries)
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
	if len(sc.Expect.During) > 0 {
		names = append(names, CheckExpectDuring)
	}
	if len(sc.Expect.DialRate) > 0 {
		names = append(names, CheckExpectDialRate)
	}
	if sc.Expect.Connect != nil {
		names = append(names, CheckExpectConnect)
	}
	if len(sc.Expect.Monitors) > 0 {
		names = append(names, CheckExpectMonitors)
	}
	if sc.Client.EnableFences {
		names = append(names, CheckFence)
	}
	names = append(names, maintSelected(sc)...)
	names = append(names, sc.Expect.Fail...)
	seen := map[string]bool{}
	var out []Checker
	for _, n := range names {
		if seen[n] {
			continue
		}
		seen[n] = true
		c, ok := byName[n]
		if !ok {
			// The loader refuses unknown names; a scenario built in Go gets a failing run instead
			// of a checker silently left out.
			c = unknownChecker{name: n}
		}
		out = append(out, c)
	}
	return out
}

// CheckScenario is the name under which a scenario's own mistakes are reported (a checker name
// that no checker has), so that no expect.fail entry can excuse them.
const CheckScenario = "scenario"

// unknownChecker stands for a selected name that no checker has: it always fails.
type unknownChecker struct{ name string }

// Name implements Checker.
func (unknownChecker) Name() string { return CheckScenario }

// Check implements Checker.
func (u unknownChecker) Check(*record.Result) []Violation {
	return []Violation{violation(CheckScenario, 0, "unknown checker "+strconv.Quote(u.name)+" selected: nothing checked it")}
}

// registry returns every checker configured for r's scenario, by name: the names are
// scenario.CheckerNames (TestRegistryMatchesScenario), liveness only when the scenario sets its
// bound.
func registry(r *record.Result) map[string]Checker {
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
		// Windowed expectations (dialrate.go).
		CheckExpectDuring:   expectDuring{},
		CheckExpectDialRate: expectDialRate{},
		CheckExpectConnect:  expectConnect{},
		// Cluster (dials.go, retired.go).
		CheckDials:   Dials{},
		CheckRetired: retiredFor(sc),
		// Sentinel (sentinel_monitor.go) and replicas (replica.go).
		CheckExpectMonitors: expectMonitors{},
		CheckReplicaWrites:  ReplicaWrites{},
		// Reads from replicas (replica_reads.go).
		scenario.CheckReplicaNoWrite: ReplicaNoWrite{},
		scenario.CheckReplicaPolicy:  ReplicaPolicy{},
		scenario.CheckReplicaHedges:  ReplicaHedges{},
		scenario.CheckReplicaReplay:  ReplicaReplay{},
		// Fences (fence.go).
		CheckFence: Fence{},
		// The batchers' batches (batch.go).
		CheckBatchEntries: BatchEntries{},
	}
	for name, c := range maintCheckers(sc) {
		byName[name] = c
	}
	if l := sc.Expect.Liveness; l != nil {
		after := l.After
		if after == 0 {
			after = r.HealedAt
		}
		byName[CheckLiveness] = Liveness{After: after, Within: l.Within, FromDemand: l.From == scenario.LivenessFromDemand,
			Closed: closedWindows(sc)}
	}
	return byName
}

// Judge runs the scenario's checkers over r and compares their findings with its expectations.
func Judge(r *record.Result) *Verdict {
	return judge(r, Checkers(r), func(i int, c Checker) []Violation { return c.Check(r) })
}

// judge builds the verdict of r from what each of checkers found (find).
func judge(r *record.Result, checkers []Checker, find func(i int, c Checker) []Violation) *Verdict {
	v := &Verdict{Ops: r.OpBase + len(r.Ops) + len(r.Dedicated)}
	expectedFail := map[string]bool{}
	for _, n := range r.Scenario.Expect.Fail {
		expectedFail[n] = true
	}
	failed := map[string]bool{}
	for i, c := range checkers {
		v.Checked = append(v.Checked, c.Name())
		found := find(i, c)
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
