package check

import (
	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/sim/record"
	"github.com/respire-go/respire/sim/scenario"
)

// stepFold is a checker that reads the engine steps alone, one at a time and in order, so that
// a Stream can give it the journal in batches as the run records them (record.JournalSink)
// instead of whole at the end.
type stepFold interface {
	// step takes step si of the run's journal; clients are the client generations begun.
	step(si int, st *record.Step, clients []record.ClientGen)
	// result returns the violations once every step was taken; r is the run's Result.
	result(r *record.Result) []Violation
}

// stepFoldOf returns the fold of checker c, or nil when c does not read the steps or cannot
// take them in batches.
func stepFoldOf(c Checker, sc *scenario.Scenario) stepFold {
	switch c := c.(type) {
	case Policy:
		return policyResult{c.fold(&record.Result{Scenario: sc})}
	case Replay:
		return replayResult{c.fold()}
	case expectEvents:
		return &eventsFold{slots: map[int]*attemptLog{}}
	case Retired:
		return c.fold()
	}
	switch c.Name() {
	case CheckRentBudget, CheckRentPermanent, CheckDedicatedNoResend, CheckPool, CheckExpectDedicated:
		return &machineFold{c: c, machines: []fsm.Machine{fsm.MachinePool}}
	case CheckPubSubSubscriptions, CheckPubSubGaps, CheckPubSubExhaustion, CheckPubSubPolicy, CheckExpectPubSub:
		return &machineFold{c: c, machines: []fsm.Machine{fsm.MachinePubSub, fsm.MachineShardedPubSub}}
	}
	return nil
}

// machineFold streams a checker that reads only the steps of some machines (the dedicated pool,
// pub/sub): it keeps the steps that concern them (an event routed or addressed to one, an
// effect of one) and the disposals and retirements, which concern every machine, and judges
// those at the end. A stream accepts no run with a dedicated workload, so that the pool's fold
// keeps next to nothing; a run with pub/sub keeps the steps of its pub/sub machines here, which
// grow with subscription events, not with the callers' commands.
type machineFold struct {
	c        Checker
	machines []fsm.Machine
	kept     []record.Step
}

func (m *machineFold) concerns(st *record.Step) bool {
	ev := &st.Event
	if ev.Kind == fsm.Disposed || ev.Kind == fsm.Retired {
		return true
	}
	for _, x := range m.machines {
		if ev.Machine == x || (ev.Conn != 0 && fsm.MachineOf(uint64(ev.Conn)) == x) ||
			(ev.Timer != 0 && fsm.MachineOf(uint64(ev.Timer)) == x) {
			return true
		}
		for i := range st.Effects {
			if st.Effects[i].Machine == x {
				return true
			}
		}
	}
	return false
}

func (m *machineFold) step(_ int, st *record.Step, _ []record.ClientGen) {
	if m.concerns(st) {
		m.kept = append(m.kept, *st)
	}
}

func (m *machineFold) result(r *record.Result) []Violation {
	cp := *r
	cp.Steps, cp.StepBase = m.kept, 0
	return m.c.Check(&cp)
}

// stepless lists the whole-run checkers that read no engine step: a stream takes the journal
// only when every other selected checker that judges the whole run has a fold.
var stepless = map[string]bool{CheckDials: true, CheckExpectDialRate: true, CheckExpectConnect: true, CheckScenario: true}

type policyResult struct{ *policyFold }

func (p policyResult) result(*record.Result) []Violation { return p.out }

type replayResult struct{ *replayFold }

func (f replayResult) result(*record.Result) []Violation { return f.out }

// eventsFold is expect-events over the steps: each slot's lifecycle, then the comparison.
type eventsFold struct{ slots map[int]*attemptLog }

func (e *eventsFold) step(_ int, st *record.Step, _ []record.ClientGen) {
	for i := range st.Effects {
		if f := &st.Effects[i]; f.Kind == fsm.Emit && f.Lifecycle.Source == fsm.SourceCommand && f.Lifecycle.Slot >= 0 {
			e.get(f.Lifecycle.Slot).observe(&f.Lifecycle)
		}
	}
}

func (e *eventsFold) get(i int) *attemptLog {
	if e.slots[i] == nil {
		e.slots[i] = &attemptLog{}
	}
	return e.slots[i]
}

func (e *eventsFold) result(r *record.Result) []Violation {
	var msgs []string
	for _, ex := range r.Scenario.Expect.Events {
		msgs = append(msgs, e.get(ex.Slot).compare("slot "+itoa(ex.Slot), ex.Attempts, ex.Delays, ex.Exhausted)...)
	}
	return violations(CheckExpectEvents, r.End, msgs)
}

// TakesJournal implements record.JournalSink: the stream takes the engine steps of a run it
// accepted when every selected checker that reads them has a fold, unless KeepJournal was called.
func (s *Stream) TakesJournal() bool { return s.folds != nil && !s.keepJournal }

// KeepJournal makes the stream leave the run its whole journal (a report draws its timeline
// from the steps). Call it before the run.
func (s *Stream) KeepJournal() { s.keepJournal = true }

// Steps implements record.JournalSink.
func (s *Stream) Steps(base int, steps []record.Step, clients []record.ClientGen) {
	s.stepsTaken = base + len(steps)
	for _, f := range s.folds {
		if f == nil {
			continue
		}
		for i := range steps {
			f.step(base+i, &steps[i], clients)
		}
	}
}

// acceptJournal sets the folds of the stream's checkers, or leaves them nil when a selected
// checker reads the steps without a fold.
func (s *Stream) acceptJournal(sc *scenario.Scenario) {
	folds := make([]stepFold, len(s.checkers))
	for i, c := range s.checkers {
		folds[i] = stepFoldOf(c, sc)
		if f, ok := s.parts[i].(stepFold); ok {
			folds[i] = f
		}
		if folds[i] == nil && s.parts[i] == nil && !stepless[c.Name()] {
			return
		}
	}
	s.folds = folds
}
