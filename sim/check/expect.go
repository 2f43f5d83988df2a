package check

import (
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

// expectDedicated checks the scenario's expect.dedicated bounds.
type expectDedicated struct{}

func (expectDedicated) Name() string { return CheckExpectDedicated }

func (expectDedicated) Check(r *record.Result) []Violation {
	e := r.Scenario.Expect.Dedicated
	if e == nil {
		return nil
	}
	counts := map[string]int{}
	for _, op := range r.Dedicated {
		counts[op.Outcome]++
	}
	rents, _ := rentIndex(r)
	retried := 0
	for _, op := range r.Dedicated {
		n := 0
		for _, w := range op.Waiters {
			if rr := rents[w]; rr != nil {
				n += len(rr.dials)
			}
		}
		if n > 1 {
			retried++
		}
	}
	backoff, most := map[fsm.TimerID]bool{}, 0
	for _, st := range r.Steps {
		if st.Event.Kind == fsm.TimerFired {
			delete(backoff, st.Event.Timer)
		}
		for _, f := range st.Effects {
			switch {
			case f.Machine != fsm.MachinePool:
			case f.Kind == fsm.ArmTimer && f.Waiter != 0:
				backoff[f.Timer] = true
			case f.Kind == fsm.CancelTimer:
				delete(backoff, f.Timer)
			}
		}
		most = max(most, len(backoff))
	}
	values := map[string]int{"ok": counts[record.DedicatedOK], "timeout": counts[record.DedicatedTimeout], "conflict": counts[record.DedicatedConflict],
		"error": counts[record.DedicatedError], "failed": counts[record.DedicatedFailed], "unknown": counts[record.DedicatedUnknown],
		"rent_failed": counts[record.DedicatedRentFailed], "exhausted": counts[record.DedicatedExhausted], "cancelled": counts[record.DedicatedCancelled],
		"closed": counts[record.DedicatedClosed], "retried": retried, "concurrent_backoff": most}
	var out []Violation
	for _, nb := range e.Named() {
		if nb.Bounds == nil {
			continue
		}
		n := values[nb.Name]
		if nb.Bounds.Min != nil && n < *nb.Bounds.Min {
			out = append(out, violation(CheckExpectDedicated, r.End, "dedicated "+nb.Name+": "+itoa(n)+", want at least "+itoa(*nb.Bounds.Min)))
		}
		if nb.Bounds.Max != nil && n > *nb.Bounds.Max {
			out = append(out, violation(CheckExpectDedicated, r.End, "dedicated "+nb.Name+": "+itoa(n)+", want at most "+itoa(*nb.Bounds.Max)))
		}
	}
	return out
}

// expectPubSub checks the scenario's pub/sub assertions.
type expectPubSub struct{}

func (expectPubSub) Name() string { return CheckExpectPubSub }

type episodeObs struct {
	attempts            []int
	delays              []time.Duration
	exhausted           bool
	dials, recovered    int
	established, broken bool
}

func (expectPubSub) Check(r *record.Result) []Violation {
	e := r.Scenario.Expect.PubSub
	if e == nil {
		return nil
	}
	obs := map[fsm.Machine]*episodeObs{fsm.MachinePubSub: {}, fsm.MachineShardedPubSub: {}}
	for _, st := range r.Steps {
		for _, f := range st.Effects {
			o := obs[f.Machine]
			if o == nil {
				continue
			}
			switch {
			case f.Kind == fsm.Dial:
				o.dials++
			case f.Kind == fsm.Emit && f.Lifecycle.Scheduled:
				o.attempts = append(o.attempts, f.Lifecycle.Attempt)
				o.delays = append(o.delays, f.Lifecycle.NextDelay)
			case f.Kind == fsm.Emit && f.Lifecycle.Exhausted:
				o.exhausted = true
			case f.Kind == fsm.Emit && f.Lifecycle.SourceState == fsm.SourceConnected:
				if o.broken {
					o.recovered++
				}
				o.established, o.broken = true, false
			case f.Kind == fsm.Emit && f.Lifecycle.SourceState == fsm.SourceDisconnected && o.established:
				o.established, o.broken = false, true
			}
		}
	}
	var out []Violation
	bad := func(msg string) { out = append(out, violation(CheckExpectPubSub, r.End, msg)) }
	bounds := func(what string, n int, b *scenario.Bounds) {
		if b == nil {
			return
		}
		if b.Min != nil && n < *b.Min {
			bad(what + ": " + itoa(n) + ", want at least " + itoa(*b.Min))
		}
		if b.Max != nil && n > *b.Max {
			bad(what + ": " + itoa(n) + ", want at most " + itoa(*b.Max))
		}
	}
	for i, ep := range []*scenario.EpisodeExpect{e.Regular, e.Sharded} {
		if ep == nil {
			continue
		}
		m := pubsubMachines[i]
		o := obs[m]
		name := m.String()
		if ep.Attempts != nil && !equalInts(o.attempts, ep.Attempts) {
			bad(name + " scheduled attempts " + ints(o.attempts) + ", want " + ints(ep.Attempts))
		}
		if ep.Delays != nil && !equalDurations(o.delays, ep.Delays) {
			bad(name + " scheduled delays " + durations(o.delays) + ", want " + durations(ep.Delays))
		}
		if ep.Exhausted != nil && o.exhausted != *ep.Exhausted {
			bad(name + " exhausted=" + boolString(o.exhausted) + ", want " + boolString(*ep.Exhausted))
		}
		bounds(name+" dials", o.dials, ep.Dials)
		bounds(name+" recoveries", o.recovered, ep.Recovered)
	}
	ps := r.PubSub
	if ps == nil {
		if len(e.Subscribers) > 0 {
			bad("no pub/sub records")
		}
		return out
	}
	for _, se := range e.Subscribers {
		var outcomes, ends []string
		messages, gaps := 0, 0
		var lastMessage time.Duration = -1
		for _, op := range ps.Subscribes {
			if op.Subscriber == se.Subscriber {
				outcomes = append(outcomes, op.Outcome)
			}
		}
		for _, x := range ps.Received {
			if x.Subscriber != se.Subscriber {
				continue
			}
			switch x.Kind {
			case "message":
				messages++
				lastMessage = x.At
			case "gap":
				gaps++
			case record.ReceivedEnd:
				ends = append(ends, x.Reason.String())
			}
		}
		name := "subscriber " + itoa(se.Subscriber)
		if se.Outcomes != nil && strings.Join(outcomes, ",") != strings.Join(se.Outcomes, ",") {
			bad(name + " subscriptions answered [" + strings.Join(outcomes, " ") + "], want [" + strings.Join(se.Outcomes, " ") + "]")
		}
		if se.Ends != nil && strings.Join(ends, ",") != strings.Join(se.Ends, ",") {
			bad(name + " subscriptions ended [" + strings.Join(ends, " ") + "], want [" + strings.Join(se.Ends, " ") + "]")
		}
		bounds(name+" messages", messages, se.Messages)
		bounds(name+" gap markers", gaps, se.Gaps)
		if se.ReceivesAfter != nil && lastMessage <= *se.ReceivesAfter {
			bad(name + " received no message after " + se.ReceivesAfter.String())
		}
	}
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
