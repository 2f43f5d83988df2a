package sim

import (
	"sort"
	"strings"
	"time"

	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/sim/record"
	"github.com/respire-go/respire/sim/scenario"
)

// Names of the scenario-specific expectation checks.
const (
	CheckExpectEvents   = "expect-events"
	CheckExpectOutcomes = "expect-outcomes"
)

// Violation is one checker finding.
type Violation struct {
	// Checker is the checker's name.
	Checker string
	// At is the virtual time of the offending observation, when known.
	At time.Duration
	// Message says what was violated, deterministically.
	Message string
}

// Checker checks one property of a Result. Checkers are global and independent of the code they
// check: they recompute what must hold from the scenario and the records.
type Checker interface {
	// Name returns the checker's name, as scenarios refer to it.
	Name() string
	// Check returns the violations found in r.
	Check(r *record.Result) []Violation
}

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
		// Dedicated connections (check_dedicated.go).
		CheckRentBudget:        RentBudget{Policy: sc.Client.ReconnectPolicy.Policy()},
		CheckRentPermanent:     RentPermanent{},
		CheckDedicatedNoResend: DedicatedNoResend{},
		CheckPool:              Pool{Config: sc.EngineConfig().Pool},
		CheckExpectDedicated:   expectDedicated{},
		// Pub/sub (check_pubsub.go).
		CheckPubSubSubscriptions: PubSubSubscriptions{},
		CheckPubSubGaps:          PubSubGaps{},
		CheckPubSubExhaustion:    PubSubExhaustion{},
		CheckPubSubPolicy:        PubSubPolicy{Policy: sc.Client.ReconnectPolicy.Policy()},
		CheckExpectPubSub:        expectPubSub{},
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

// KnownCheckers lists every checker name a scenario may use.
func KnownCheckers() []string {
	names := append([]string{}, AllInvariants...)
	names = append(names, CheckLinearizable, CheckLiveness, CheckExpectEvents, CheckExpectOutcomes, CheckExpectDedicated, CheckExpectPubSub, CheckLifetime)
	sort.Strings(names)
	return names
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

// expectEvents checks the scenario's per-slot lifecycle assertions: the sequence of scheduled
// attempts and delays, and whether the slot ends exhausted.
type expectEvents struct{}

func (expectEvents) Name() string { return CheckExpectEvents }

func (expectEvents) Check(r *record.Result) []Violation {
	type obs struct {
		attempts  []int
		delays    []time.Duration
		exhausted bool
	}
	slots := map[int]*obs{}
	get := func(i int) *obs {
		if slots[i] == nil {
			slots[i] = &obs{}
		}
		return slots[i]
	}
	for _, st := range r.Steps {
		for _, f := range st.Effects {
			if f.Kind != fsm.Emit || f.Lifecycle.Source != fsm.SourceCommand || f.Lifecycle.Slot < 0 {
				continue
			}
			l := f.Lifecycle
			o := get(l.Slot)
			if l.Scheduled {
				o.attempts = append(o.attempts, l.Attempt)
				o.delays = append(o.delays, l.NextDelay)
			}
			if l.Exhausted {
				o.exhausted = true
			}
		}
	}
	var out []Violation
	for _, e := range r.Scenario.Expect.Events {
		o := get(e.Slot)
		if e.Attempts != nil && !equalInts(o.attempts, e.Attempts) {
			out = append(out, violation(CheckExpectEvents, r.End, "slot "+itoa(e.Slot)+" scheduled attempts "+ints(o.attempts)+", want "+ints(e.Attempts)))
		}
		if e.Delays != nil && !equalDurations(o.delays, e.Delays) {
			out = append(out, violation(CheckExpectEvents, r.End, "slot "+itoa(e.Slot)+" scheduled delays "+durations(o.delays)+", want "+durations(e.Delays)))
		}
		if e.Exhausted != nil && o.exhausted != *e.Exhausted {
			out = append(out, violation(CheckExpectEvents, r.End, "slot "+itoa(e.Slot)+" exhausted="+boolString(o.exhausted)+", want "+boolString(*e.Exhausted)))
		}
	}
	return out
}

// expectOutcomes checks the scenario's bounds on operation outcomes.
type expectOutcomes struct{}

func (expectOutcomes) Name() string { return CheckExpectOutcomes }

// IsReconnectLimit reports whether a failed operation's error is the reconnect-limit error.
func IsReconnectLimit(op *record.Op) bool {
	return op.Outcome == record.OpFailed && strings.Contains(op.Err, "no connection: exhausted")
}

func (expectOutcomes) Check(r *record.Result) []Violation {
	e := r.Scenario.Expect.Outcomes
	counts := map[record.OpOutcome]int{}
	limit := 0
	for i := range r.Ops {
		counts[r.Ops[i].Outcome]++
		if IsReconnectLimit(&r.Ops[i]) {
			limit++
		}
	}
	var out []Violation
	check := func(name string, n int, b *scenario.Bounds) {
		if b == nil {
			return
		}
		if b.Min != nil && n < *b.Min {
			out = append(out, violation(CheckExpectOutcomes, r.End, name+" operations: "+itoa(n)+", want at least "+itoa(*b.Min)))
		}
		if b.Max != nil && n > *b.Max {
			out = append(out, violation(CheckExpectOutcomes, r.End, name+" operations: "+itoa(n)+", want at most "+itoa(*b.Max)))
		}
	}
	check("ok", counts[record.OpOK], e.OK)
	check("failed", counts[record.OpFailed], e.Failed)
	check("unknown", counts[record.OpUnknown], e.Unknown)
	check("reconnect-limit", limit, e.ReconnectLimit)
	return out
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func equalDurations(a, b []time.Duration) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func ints(v []int) string {
	parts := make([]string, len(v))
	for i, n := range v {
		parts[i] = itoa(n)
	}
	return "[" + strings.Join(parts, " ") + "]"
}

func durations(v []time.Duration) string {
	parts := make([]string, len(v))
	for i, d := range v {
		parts[i] = d.String()
	}
	return "[" + strings.Join(parts, " ") + "]"
}

func boolString(b bool) string {
	if b {
		return "true"
	}
	return "false"
}
