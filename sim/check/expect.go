package check

import (
	"fmt"
	"slices"
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
	slots := map[int]*attemptLog{}
	get := func(i int) *attemptLog {
		if slots[i] == nil {
			slots[i] = &attemptLog{}
		}
		return slots[i]
	}
	for _, st := range r.Steps {
		for _, f := range st.Effects {
			if f.Kind == fsm.Emit && f.Lifecycle.Source == fsm.SourceCommand && f.Lifecycle.Slot >= 0 {
				get(f.Lifecycle.Slot).observe(&f.Lifecycle)
			}
		}
	}
	var msgs []string
	for _, e := range r.Scenario.Expect.Events {
		msgs = append(msgs, get(e.Slot).compare("slot "+itoa(e.Slot), e.Attempts, e.Delays, e.Exhausted)...)
	}
	return violations(CheckExpectEvents, r.End, msgs)
}

// attemptLog is what the lifecycle said of one slot or episode: its scheduled attempts and their
// delays, and whether it exhausted.
type attemptLog struct {
	attempts  []int
	delays    []time.Duration
	exhausted bool
}

// observe notes one lifecycle observation.
func (a *attemptLog) observe(l *fsm.Lifecycle) {
	if l.Scheduled {
		a.attempts = append(a.attempts, l.Attempt)
		a.delays = append(a.delays, l.NextDelay)
	}
	if l.Exhausted {
		a.exhausted = true
	}
}

// compare says how the log departs from what is expected of name (nil expectations hold).
func (a *attemptLog) compare(name string, attempts []int, delays []time.Duration, exhausted *bool) []string {
	var out []string
	if attempts != nil && !slices.Equal(a.attempts, attempts) {
		out = append(out, name+" scheduled attempts "+fmt.Sprint(a.attempts)+", want "+fmt.Sprint(attempts))
	}
	if delays != nil && !slices.Equal(a.delays, delays) {
		out = append(out, name+" scheduled delays "+fmt.Sprint(a.delays)+", want "+fmt.Sprint(delays))
	}
	if exhausted != nil && a.exhausted != *exhausted {
		out = append(out, name+" exhausted="+fmt.Sprint(a.exhausted)+", want "+fmt.Sprint(*exhausted))
	}
	return out
}

// outside says how count n of label falls outside b ("label: n, want at least min"), if it does.
func outside(label string, n int, b *scenario.Bounds) []string {
	switch {
	case b == nil:
	case b.Min != nil && n < *b.Min:
		return []string{label + ": " + itoa(n) + ", want at least " + itoa(*b.Min)}
	case b.Max != nil && n > *b.Max:
		return []string{label + ": " + itoa(n) + ", want at most " + itoa(*b.Max)}
	}
	return nil
}

// violations turns a checker's messages into violations at one time.
func violations(checker string, at time.Duration, msgs []string) []Violation {
	var out []Violation
	for _, m := range msgs {
		out = append(out, violation(checker, at, m))
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
	var c outcomeCounts
	c.add(r.Ops)
	return c.judge(r)
}

// outcomeCounts counts operations by outcome, for expect.outcomes.
type outcomeCounts struct {
	byOutcome [4]int
	limit     int
}

func (c *outcomeCounts) add(ops []record.Op) {
	for i := range ops {
		if o := ops[i].Outcome; int(o) < len(c.byOutcome) {
			c.byOutcome[o]++
		}
		if IsReconnectLimit(&ops[i]) {
			c.limit++
		}
	}
}

// judge compares the counts with r's scenario's expect.outcomes.
func (c *outcomeCounts) judge(r *record.Result) []Violation {
	e := r.Scenario.Expect.Outcomes
	var msgs []string
	msgs = append(msgs, outside("ok operations", c.byOutcome[record.OpOK], e.OK)...)
	msgs = append(msgs, outside("failed operations", c.byOutcome[record.OpFailed], e.Failed)...)
	msgs = append(msgs, outside("unknown operations", c.byOutcome[record.OpUnknown], e.Unknown)...)
	msgs = append(msgs, outside("reconnect-limit operations", c.limit, e.ReconnectLimit)...)
	return violations(CheckExpectOutcomes, r.End, msgs)
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
		if n, _ := opDials(&op, rents); n > 1 {
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
	var msgs []string
	for _, nb := range e.Named() {
		msgs = append(msgs, outside("dedicated "+nb.Name, values[nb.Name], nb.Bounds)...)
	}
	return violations(CheckExpectDedicated, r.End, msgs)
}

// expectPubSub checks the scenario's pub/sub assertions.
type expectPubSub struct{}

func (expectPubSub) Name() string { return CheckExpectPubSub }

type episodeObs struct {
	attemptLog
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
			case f.Kind == fsm.Emit && (f.Lifecycle.Scheduled || f.Lifecycle.Exhausted):
				o.observe(&f.Lifecycle)
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
	var msgs []string
	for i, ep := range []*scenario.EpisodeExpect{e.Regular, e.Sharded} {
		if ep == nil {
			continue
		}
		m := pubsubMachines[i]
		o := obs[m]
		msgs = append(msgs, o.compare(m.String(), ep.Attempts, ep.Delays, ep.Exhausted)...)
		msgs = append(msgs, outside(m.String()+" dials", o.dials, ep.Dials)...)
		msgs = append(msgs, outside(m.String()+" recoveries", o.recovered, ep.Recovered)...)
	}
	ps := r.PubSub
	if ps == nil {
		if len(e.Subscribers) > 0 {
			msgs = append(msgs, "no pub/sub records")
		}
		return violations(CheckExpectPubSub, r.End, msgs)
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
		if se.Outcomes != nil && !slices.Equal(outcomes, se.Outcomes) {
			msgs = append(msgs, name+" subscriptions answered "+fmt.Sprint(outcomes)+", want "+fmt.Sprint(se.Outcomes))
		}
		if se.Ends != nil && !slices.Equal(ends, se.Ends) {
			msgs = append(msgs, name+" subscriptions ended "+fmt.Sprint(ends)+", want "+fmt.Sprint(se.Ends))
		}
		msgs = append(msgs, outside(name+" messages", messages, se.Messages)...)
		msgs = append(msgs, outside(name+" gap markers", gaps, se.Gaps)...)
		if se.ReceivesAfter != nil && lastMessage <= *se.ReceivesAfter {
			msgs = append(msgs, name+" received no message after "+se.ReceivesAfter.String())
		}
	}
	return violations(CheckExpectPubSub, r.End, msgs)
}
