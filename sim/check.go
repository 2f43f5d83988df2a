package sim

import (
	"math"
	"math/big"
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/respire-go/respire/engine"
	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/sim/record"
)

// Checker names, as scenarios list them under expect.invariants and expect.fail.
const (
	CheckNoReplay       = "no-replay"
	CheckOutcomes       = "outcomes"
	CheckHonest         = "honest"
	CheckPairing        = "pairing"
	CheckPolicy         = "policy"
	CheckHandshakeFirst = "handshake-first"
	CheckLinearizable   = "linearizable"
	CheckLiveness       = "liveness"
	CheckReplay         = "replay"
)

// AllInvariants lists the checkers that "invariants: all" selects, in the order they run.
// Linearizability and liveness are selected by their own expectations.
var AllInvariants = []string{CheckNoReplay, CheckOutcomes, CheckHonest, CheckPairing, CheckPolicy,
	CheckHandshakeFirst, CheckReplay, CheckRentBudget, CheckRentPermanent, CheckDedicatedNoResend, CheckPool,
	CheckPubSubSubscriptions, CheckPubSubGaps, CheckPubSubExhaustion, CheckPubSubPolicy}

func violation(name string, at time.Duration, msg string) Violation {
	return Violation{Checker: name, At: at, Message: msg}
}

// NoReplay checks that no command is ever sent twice and that every command id appears at most
// once in the nodes' apply logs (DESIGN checker 1).
type NoReplay struct{}

// Name implements Checker.
func (NoReplay) Name() string { return CheckNoReplay }

// Check implements Checker.
func (NoReplay) Check(r *record.Result) []Violation {
	var out []Violation
	sent := map[uint64]record.Send{}
	for _, s := range r.Sends {
		if first, ok := sent[s.CmdID]; ok {
			out = append(out, violation(CheckNoReplay, s.At, "command "+u(s.CmdID)+" written again on conn "+
				u(uint64(s.Conn))+" after conn "+u(uint64(first.Conn))+" at "+first.At.String()))
			continue
		}
		sent[s.CmdID] = s
	}
	applied := map[uint64]record.Apply{}
	for _, a := range r.Applies {
		if a.CmdID == 0 {
			continue
		}
		if first, ok := applied[a.CmdID]; ok {
			out = append(out, violation(CheckNoReplay, a.At, "command "+u(a.CmdID)+" applied twice (first at "+
				first.At.String()+" on "+first.Node+")"))
			continue
		}
		applied[a.CmdID] = a
	}
	return out
}

// Outcomes checks that every operation ended exactly once with ok, a definite failure, or an
// unknown outcome, within its command timeout, and that unknown is used only when the command's
// bytes were written (DESIGN checker 2).
type Outcomes struct{}

// Name implements Checker.
func (Outcomes) Name() string { return CheckOutcomes }

// Check implements Checker.
func (Outcomes) Check(r *record.Result) []Violation {
	var out []Violation
	sent := map[uint64]bool{}
	for _, s := range r.Sends {
		sent[s.CmdID] = true
	}
	timeout := time.Duration(0)
	if r.Scenario != nil {
		timeout = r.Scenario.Client.CommandTimeout
	}
	for _, op := range r.Ops {
		if op.Outcome != record.OpPending && timeout > 0 && op.Return > op.Call+timeout {
			out = append(out, violation(CheckOutcomes, op.Return, "op "+u(op.ID)+" "+op.Name+" ended "+
				(op.Return-op.Call).String()+" after its call, past its "+timeout.String()+" timeout"))
		}
		switch op.Outcome {
		case record.OpPending:
			out = append(out, violation(CheckOutcomes, op.Call, "op "+u(op.ID)+" "+op.Name+" never completed"))
		case record.OpUnknown:
			if !sent[op.ID] {
				out = append(out, violation(CheckOutcomes, op.Return, "op "+u(op.ID)+" reported an unknown outcome but was never written"))
			}
		}
	}
	for _, d := range r.Duplicates {
		out = append(out, violation(CheckOutcomes, d.At, "command "+u(d.CmdID)+" completed more than once"))
	}
	return out
}

// Honest checks that ok means applied and a definite failure means not applied (DESIGN
// checker 3).
type Honest struct{}

// Name implements Checker.
func (Honest) Name() string { return CheckHonest }

// Check implements Checker.
func (Honest) Check(r *record.Result) []Violation {
	var out []Violation
	applied := map[uint64]bool{}
	for _, a := range r.Applies {
		applied[a.CmdID] = true
	}
	for _, op := range r.Ops {
		switch {
		case op.Outcome == record.OpOK && op.ServerError == "" && !applied[op.ID]:
			out = append(out, violation(CheckHonest, op.Return, "op "+u(op.ID)+" "+op.Name+" reported ok but no node applied it"))
		case op.Outcome == record.OpFailed && applied[op.ID]:
			out = append(out, violation(CheckHonest, op.Return, "op "+u(op.ID)+" "+op.Name+" reported a definite failure but was applied"))
		}
	}
	return out
}

// Pairing checks reply pairing (DESIGN checker 4) against the nodes' ground truth: every reply
// the client paired with an operation's command is the reply a node sent for that command (so
// no late reply reaches another caller, no push completes a command, and a reset connection never
// completes a newer command); and per connection, commands complete successfully in the order they
// were written, each only after it was written.
type Pairing struct{}

// Name implements Checker.
func (Pairing) Name() string { return CheckPairing }

// Check implements Checker.
func (Pairing) Check(r *record.Result) []Violation {
	var out []Violation
	ops := map[uint64]*record.Op{}
	for i := range r.Ops {
		ops[r.Ops[i].ID] = &r.Ops[i]
	}
	type entry struct {
		send record.Send
		op   *record.Op
	}
	byConn := map[fsm.ConnID][]entry{}
	for _, s := range r.Sends {
		if op := ops[s.CmdID]; op != nil && op.Outcome == record.OpOK {
			byConn[s.Conn] = append(byConn[s.Conn], entry{s, op})
		}
	}
	served := map[uint64][]uint64{}
	for _, s := range r.Served {
		served[s.CmdID] = append(served[s.CmdID], s.Digest)
	}
	for _, p := range r.Paired {
		op := ops[p.CmdID]
		if op == nil {
			continue
		}
		if !slices.Contains(served[p.CmdID], p.Digest) {
			out = append(out, violation(CheckPairing, p.At, "conn "+u(uint64(p.Conn))+": op "+u(op.ID)+" "+op.Name+
				" was paired with a reply no node sent for it"))
		}
	}
	for _, c := range sortedConnIDs(byConn) {
		list := byConn[c]
		for i, e := range list {
			if e.op.Return < e.send.At {
				out = append(out, violation(CheckPairing, e.op.Return, "op "+u(e.op.ID)+" completed before it was written"))
			}
			if i > 0 && e.op.Return < list[i-1].op.Return {
				out = append(out, violation(CheckPairing, e.op.Return, "conn "+u(uint64(c))+": op "+u(e.op.ID)+
					" completed before op "+u(list[i-1].op.ID)+" written earlier"))
			}
		}
	}
	return out
}

// HandshakeFirst checks that no application command reaches a node before its connection's
// handshake finished (DESIGN checker 6).
type HandshakeFirst struct{}

// Name implements Checker.
func (HandshakeFirst) Name() string { return CheckHandshakeFirst }

// Check implements Checker.
func (HandshakeFirst) Check(r *record.Result) []Violation {
	var out []Violation
	for _, a := range r.Applies {
		if a.CmdID != 0 && !a.AfterHandshake {
			out = append(out, violation(CheckHandshakeFirst, a.At, "command "+u(a.CmdID)+" "+a.Name+" applied on conn "+
				u(uint64(a.Conn))+" before its handshake finished"))
		}
	}
	return out
}

// Policy checks the spec's command-slot rules on the engine steps, recomputing the policy's bounds
// independently of fsm (DESIGN checker 5): attempts are numbered 1, 2, ... within an episode and
// restart at 1 after a ready connection; never exceed MaxAttempts; the observed time between an
// attempt's scheduling and its dial lies in the policy's jitter band for that attempt; a slot
// has at most one attempt in flight; an exhausted slot never dials again; without a policy no
// delay is ever scheduled (a timer is armed only to rest a slot).
//
// It also bounds the dial rate of attempts that no policy governs (every attempt without a
// policy, initial connections with one): after a slot's n-th consecutive failed attempt, its next
// dial comes no sooner than the no-policy wait after n failures (250 ms doubling up to 5 s),
// however many commands arrive meanwhile (issue 10, defect 6).
type Policy struct {
	// Policy is the scenario's reconnect policy, or nil.
	Policy *fsm.Policy
	// Lifetime says that lifetime recycling is on. Its timers (a deadline, a replacement's retry)
	// are then not reconnect delays: a timer armed in a step that routes no slot to scheduled
	// is left to the lifetime checker. Replacement dials carry attempt 0 and are tracked like
	// any attempt, one in flight per slot.
	Lifetime bool
}

// Name implements Checker.
func (Policy) Name() string { return CheckPolicy }

type slotTrack struct {
	// scheduledAt and scheduledAttempt describe the attempt waiting for its delay.
	scheduledAt      time.Duration
	scheduledAttempt int
	scheduledDelay   time.Duration
	scheduled        bool
	// lastAttempt is the last policy attempt number dialed in the current episode.
	lastAttempt int
	dialing     fsm.ConnID
	exhausted   bool
	// state is the slot's last routed state; everReady says it was ever ready.
	state     fsm.SlotState
	everReady bool
	// restFailures counts the consecutive failed attempts no policy governed since the slot was
	// last ready; failedAt is when the last one failed.
	restFailures int
	failedAt     time.Duration
}

// Check implements Checker.
func (c Policy) Check(r *record.Result) []Violation {
	var out []Violation
	slots := map[int]*slotTrack{}
	track := func(i int) *slotTrack {
		if slots[i] == nil {
			slots[i] = &slotTrack{}
		}
		return slots[i]
	}
	connSlot := map[fsm.ConnID]int{}
	for _, st := range r.Steps {
		at := st.Event.At
		// Retirement and disposal cancel every scheduled attempt.
		if st.Event.Kind == fsm.Retired || st.Event.Kind == fsm.Disposed {
			for _, i := range sortedSlots(slots) {
				slots[i].scheduled = false
			}
		}
		// A failed or lost dial ends that attempt.
		if st.Event.Kind == fsm.DialFailed || st.Event.Kind == fsm.ConnLost || st.Event.Kind == fsm.HandshakeDone {
			if i, ok := connSlot[st.Event.Conn]; ok && track(i).dialing == st.Event.Conn {
				s := track(i)
				s.dialing = 0
				// A failed attempt of a slot that is not ready (a lifetime replacement fails
				// while its slot serves, and rests nothing).
				if st.Event.Kind != fsm.HandshakeDone && s.state != fsm.SlotReady && (c.Policy == nil || !s.everReady) {
					s.restFailures++
					s.failedAt = at
				}
			}
		}
		lifetimeTimers := c.Lifetime && !routesScheduled(st.Effects)
		rests := routesResting(st.Effects)
		for _, f := range st.Effects {
			if f.Machine != fsm.MachineMux {
				// Dedicated rents and pub/sub episodes have their own checkers.
				continue
			}
			switch f.Kind {
			case fsm.ArmTimer:
				if c.Policy == nil && !lifetimeTimers && !rests {
					out = append(out, violation(CheckPolicy, at, "a delay was scheduled without a reconnect policy"))
				}
			case fsm.Route:
				s := track(f.Slot)
				s.state = f.State
				if f.State == fsm.SlotReady {
					s.everReady = true
					s.restFailures = 0
				}
			case fsm.Close:
				// The machine abandoned an attempt (a lifetime replacement whose old connection
				// failed): it is no longer in flight.
				if i, ok := connSlot[f.Conn]; ok && track(i).dialing == f.Conn {
					track(i).dialing = 0
				}
			case fsm.Emit:
				l := f.Lifecycle
				if l.Source != fsm.SourceCommand || l.Slot < 0 || l.Recycle != fsm.RecycleNone {
					continue
				}
				s := track(l.Slot)
				switch {
				case l.SourceState == fsm.SourceConnected:
					s.lastAttempt = 0
				case l.Scheduled:
					if s.exhausted {
						out = append(out, violation(CheckPolicy, at, "slot "+itoa(l.Slot)+" scheduled attempt "+itoa(l.Attempt)+" after exhaustion"))
					}
					if want := s.lastAttempt + 1; l.Attempt != want {
						out = append(out, violation(CheckPolicy, at, "slot "+itoa(l.Slot)+" scheduled attempt "+itoa(l.Attempt)+", want "+itoa(want)))
					}
					if c.Policy != nil && c.Policy.MaxAttempts > 0 && l.Attempt > c.Policy.MaxAttempts {
						out = append(out, violation(CheckPolicy, at, "slot "+itoa(l.Slot)+" attempt "+itoa(l.Attempt)+" beyond MaxAttempts "+itoa(c.Policy.MaxAttempts)))
					}
					if c.Policy != nil {
						lo, hi := Band(c.Policy, l.Attempt)
						if l.NextDelay < lo || l.NextDelay > hi {
							out = append(out, violation(CheckPolicy, at, "slot "+itoa(l.Slot)+" attempt "+itoa(l.Attempt)+" delay "+
								l.NextDelay.String()+" outside ["+lo.String()+", "+hi.String()+"]"))
						}
					}
					s.scheduled, s.scheduledAt, s.scheduledAttempt, s.scheduledDelay = true, at, l.Attempt, l.NextDelay
					s.lastAttempt = l.Attempt
				case l.Exhausted:
					s.exhausted = true
					if c.Policy == nil || c.Policy.MaxAttempts == 0 || l.Attempt != c.Policy.MaxAttempts {
						out = append(out, violation(CheckPolicy, at, "slot "+itoa(l.Slot)+" exhausted at attempt "+itoa(l.Attempt)))
					}
				}
			case fsm.Dial:
				s := track(f.Slot)
				connSlot[f.Conn] = f.Slot
				if s.state != fsm.SlotReady && f.Attempt == 0 && s.restFailures > 0 {
					if rest := noPolicyWait(s.restFailures); at-s.failedAt < rest {
						out = append(out, violation(CheckPolicy, at, "slot "+itoa(f.Slot)+" dialed "+(at-s.failedAt).String()+
							" after its failure "+itoa(s.restFailures)+" in a row; attempts no policy governs are spaced by "+rest.String()))
					}
				}
				if s.exhausted {
					out = append(out, violation(CheckPolicy, at, "slot "+itoa(f.Slot)+" dialed after exhaustion"))
				}
				if s.dialing != 0 {
					out = append(out, violation(CheckPolicy, at, "slot "+itoa(f.Slot)+" started a second attempt while one was in flight"))
				}
				s.dialing = f.Conn
				if c.Policy == nil && f.Attempt != 0 {
					out = append(out, violation(CheckPolicy, at, "attempt number "+itoa(f.Attempt)+" without a policy"))
				}
				if c.Policy != nil && c.Policy.MaxAttempts > 0 && f.Attempt > c.Policy.MaxAttempts {
					out = append(out, violation(CheckPolicy, at, "slot "+itoa(f.Slot)+" dialed attempt "+itoa(f.Attempt)+" beyond MaxAttempts "+itoa(c.Policy.MaxAttempts)))
				}
				if s.scheduled {
					waited := at - s.scheduledAt
					lag := loopLag(r)
					if f.Attempt != s.scheduledAttempt {
						out = append(out, violation(CheckPolicy, at, "slot "+itoa(f.Slot)+" dialed attempt "+itoa(f.Attempt)+" but attempt "+itoa(s.scheduledAttempt)+" was scheduled"))
					}
					if waited < s.scheduledDelay || waited > s.scheduledDelay+lag {
						out = append(out, violation(CheckPolicy, at, "slot "+itoa(f.Slot)+" attempt "+itoa(f.Attempt)+" dialed after "+waited.String()+
							", scheduled delay was "+s.scheduledDelay.String()))
					}
					if c.Policy != nil {
						lo, hi := Band(c.Policy, f.Attempt)
						if waited < lo || waited > hi+lag {
							out = append(out, violation(CheckPolicy, at, "slot "+itoa(f.Slot)+" attempt "+itoa(f.Attempt)+" waited "+waited.String()+
								" outside ["+lo.String()+", "+hi.String()+"]"))
						}
					}
					s.scheduled = false
				} else if c.Policy != nil && f.Attempt > 0 {
					out = append(out, violation(CheckPolicy, at, "slot "+itoa(f.Slot)+" dialed policy attempt "+itoa(f.Attempt)+" without scheduling it"))
				}
			}
		}
	}
	return out
}

// routesScheduled reports whether a step's effects route a command slot to scheduled: the mark of
// a reconnect delay.
func routesScheduled(effects []fsm.Effect) bool {
	for i := range effects {
		if f := &effects[i]; f.Kind == fsm.Route && f.Machine == fsm.MachineMux && f.State == fsm.SlotScheduled {
			return true
		}
	}
	return false
}

// routesResting reports whether a step's effects route a command slot to resting: the mark of
// the rest that follows an attempt no policy governed.
func routesResting(effects []fsm.Effect) bool {
	for i := range effects {
		if f := &effects[i]; f.Kind == fsm.Route && f.Machine == fsm.MachineMux && f.State == fsm.SlotResting {
			return true
		}
	}
	return false
}

// loopLag is the lag of the run's event loop (Runtime.LoopLag): an event is stepped up to that
// much after it happened, so a timer's dial may come that much after its delay.
func loopLag(r *record.Result) time.Duration {
	if r.Scenario == nil {
		return 0
	}
	return r.Scenario.Runtime.LoopLag
}

// Band returns the interval the delay of policy attempt n must lie in, computed with exact
// arithmetic independently of fsm.Policy: min(cap, initial*multiplier^(n-1)) scaled by
// [1-J, 1+J] and capped again, widened by one nanosecond each side for rounding.
func Band(p *fsm.Policy, n int) (lo, hi time.Duration) {
	limit := p.MaxDelay
	if limit == 0 {
		limit = fsm.DelayCeiling
	}
	mult := p.BackoffMultiplier
	if mult == 0 {
		mult = fsm.DefaultBackoffMultiplier
	}
	base := new(big.Float).SetInt64(int64(p.InitialDelay))
	capF := new(big.Float).SetInt64(int64(limit))
	m := new(big.Float).SetFloat64(mult)
	for i := 1; i < n && base.Cmp(capF) < 0; i++ {
		base.Mul(base, m)
	}
	if base.Cmp(capF) > 0 {
		base = capF
	}
	b, _ := base.Float64()
	l := math.Min(b*(1-p.JitterRatio), float64(limit))
	h := math.Min(b*(1+p.JitterRatio), float64(limit))
	lo, hi = time.Duration(l)-1, time.Duration(h)+1
	if lo < 0 {
		lo = 0
	}
	return lo, hi
}

// Liveness checks that after the faults heal the client converges (DESIGN checker 11): an
// operation issued at or after After returns ok before After+Within, and every operation issued
// from After+Within on returns ok. Operations issued in the run's last Within are not judged (the
// end of the run may cut them off). A run with no operation to judge fails: liveness is never
// vacuous.
type Liveness struct {
	// After is when judging starts (typically the time the last fault healed).
	After time.Duration
	// Within is the convergence bound.
	Within time.Duration
}

// Name implements Checker.
func (Liveness) Name() string { return CheckLiveness }

// Check implements Checker.
func (c Liveness) Check(r *record.Result) []Violation {
	var out []Violation
	deadline := c.After + c.Within
	firstOK := time.Duration(-1)
	judged := 0
	for _, op := range r.Ops {
		// Operations issued in the run's last Within may be cut off by the shutdown: they
		// cannot be judged.
		if op.Call < c.After || (r.End > 0 && op.Call > r.End-c.Within) {
			continue
		}
		judged++
		if op.Outcome == record.OpOK && op.ServerError == "" && (firstOK < 0 || op.Return < firstOK) {
			firstOK = op.Return
		}
		if op.Call >= deadline && (op.Outcome != record.OpOK || op.ServerError != "") {
			msg := "op " + u(op.ID) + " " + op.Name + " issued " + (op.Call - c.After).String() + " after heal ended " + op.Outcome.String()
			if op.Err != "" {
				msg += ": " + op.Err
			}
			out = append(out, violation(CheckLiveness, op.Call, msg))
		}
	}
	switch {
	case judged == 0:
		out = append(out, violation(CheckLiveness, c.After, "no operation was issued after "+c.After.String()+" to judge liveness"))
	case firstOK < 0 || firstOK > deadline:
		out = append(out, violation(CheckLiveness, deadline, "no operation succeeded within "+c.Within.String()+" of "+c.After.String()))
	}
	return out
}

// Replay checks the journal contract (DESIGN checker 12): stepping the recorded events into a
// fresh machine reproduces exactly the recorded effects.
type Replay struct {
	// Config is the engine configuration of the run.
	Config engine.Config
}

// Name implements Checker.
func (Replay) Name() string { return CheckReplay }

// Check implements Checker.
func (c Replay) Check(r *record.Result) []Violation {
	events := make([]fsm.Event, len(r.Steps))
	for i := range r.Steps {
		events[i] = r.Steps[i].Event
	}
	var out []Violation
	i := 0
	var a, b []byte
	engine.Replay(c.Config, events, func(ev *fsm.Event, effects []fsm.Effect) {
		if len(out) > 0 {
			i++
			return
		}
		a, b = a[:0], b[:0]
		for j := range effects {
			a = effects[j].AppendTo(append(a, '|'))
		}
		for j := range r.Steps[i].Effects {
			b = r.Steps[i].Effects[j].AppendTo(append(b, '|'))
		}
		if string(a) != string(b) {
			out = append(out, violation(CheckReplay, ev.At, "step "+itoa(i)+" ("+ev.String()+") replayed to "+string(a)+" but recorded "+string(b)))
		}
		i++
	})
	return out
}

func u(v uint64) string { return strconv.FormatUint(v, 10) }
func itoa(v int) string { return strconv.Itoa(v) }

func sortedConnIDs[V any](m map[fsm.ConnID]V) []fsm.ConnID {
	ids := make([]fsm.ConnID, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids
}

func sortedSlots[V any](m map[int]V) []int {
	ids := make([]int, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	sort.Ints(ids)
	return ids
}
