// Package check holds the simulator's checkers. Each recomputes a property that must hold from a
// run's records (sim/record) and its scenario, independently of the code under test, and reports
// the violations it finds. Judge runs the checkers a scenario selects and compares their findings
// with the failures the scenario expects (the positive controls of planted bugs).
//
// One file per family: check.go (the core invariants: no replay, one outcome per command, honest
// outcomes, reply pairing, handshake first, liveness, journal replay), policy.go (the reconnect
// policy of command slots), lifetime.go, linear.go (per-key linearizability with porcupine),
// dedicated.go, pubsub.go, expect.go (a scenario's own expectations) and verdict.go (selection
// and judgement).
package check

import (
	"maps"
	"slices"
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

func violation(name string, at time.Duration, msg string) Violation {
	return Violation{Checker: name, At: at, Message: msg}
}

// NoReplay checks that no command is ever sent twice and that every command id appears at most
// once in the nodes' apply logs (DESIGN checker 1). A command may be written again only after a
// node answered its previous write with a reply that proves it did not run (DESIGN contract 7:
// MOVED, ASK, TRYAGAIN, CLUSTERDOWN, MASTERDOWN, READONLY, LOADING), as a Cluster client's
// redirects do.
type NoReplay struct{}

// notExecutedCodes are the error codes that prove a command did not run.
var notExecutedCodes = map[string]bool{"MOVED": true, "ASK": true, "TRYAGAIN": true, "CLUSTERDOWN": true,
	"MASTERDOWN": true, "READONLY": true, "LOADING": true}

// Name implements Checker.
func (NoReplay) Name() string { return CheckNoReplay }

// Check implements Checker.
func (NoReplay) Check(r *record.Result) []Violation {
	var out []Violation
	// rejections are the times at which nodes answered a command with a not-executed proof.
	rejections := map[uint64][]time.Duration{}
	for _, s := range r.Served {
		if notExecutedCodes[s.Code] {
			rejections[s.CmdID] = append(rejections[s.CmdID], s.At)
		}
	}
	rejectedSince := func(id uint64, from, to time.Duration) bool {
		for _, at := range rejections[id] {
			if at >= from && at <= to {
				return true
			}
		}
		return false
	}
	// A hedged read is sent to, and run by, two servers: ReplicaHedges judges those.
	var ops map[uint64]*record.Op
	if r.Scenario != nil && r.Scenario.HedgedReadsOn() {
		ops = opsByID(r)
	}
	sent := map[uint64]record.Send{}
	for _, s := range r.Sends {
		if prev, ok := sent[s.CmdID]; ok && !rejectedSince(s.CmdID, prev.At, s.At) && !hedgedRead(r, ops, s.CmdID) {
			out = append(out, violation(CheckNoReplay, s.At, "command "+u(s.CmdID)+" written again on conn "+
				u(uint64(s.Conn))+" after conn "+u(uint64(prev.Conn))+" at "+prev.At.String()+", with no reply proving it did not run"))
		}
		sent[s.CmdID] = s
	}
	applied := map[uint64]record.Apply{}
	for _, a := range r.Applies {
		if a.CmdID == 0 {
			continue
		}
		if first, ok := applied[a.CmdID]; ok && !hedgedRead(r, ops, a.CmdID) {
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
	if sc := r.Scenario; sc != nil {
		timeout = sc.Client.CommandTimeout
		if len(sc.Maintenance) > 0 && timeout > 0 {
			// A maintenance window may relax it (maint-relaxed-deadlines checks the exact bound).
			timeout = max(timeout, sc.Client.MaintenanceRelaxedTimeout)
		}
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
		// ret is when the command completed: its operation's return, or, for an attempt of a
		// hedged read, when that connection paired its reply (hedgePairings).
		ret time.Duration
	}
	// A command written again after a redirect (no-replay checks that a reply proved it did not
	// run) completes with its last write's reply: the earlier writes were answered then. When
	// even the last write was answered with such a proof, the command completes later with its
	// first rejection (its node could not be reached again, or its budget was spent), not by
	// pairing: it is left out of the FIFO order.
	last := map[uint64]int{}
	for i, s := range r.Sends {
		last[s.CmdID] = i
	}
	rejectedLast := map[uint64]bool{}
	for _, s := range r.Served {
		if i, ok := last[s.CmdID]; ok && s.At >= r.Sends[i].At {
			rejectedLast[s.CmdID] = notExecutedCodes[s.Code]
		}
	}
	byConn := map[fsm.ConnID][]entry{}
	hedged := hedgePairings(r, ops)
	for i, s := range r.Sends {
		op := ops[s.CmdID]
		if h, ok := hedged[s.CmdID]; ok {
			if at, paired := h[s.Conn]; paired {
				byConn[s.Conn] = append(byConn[s.Conn], entry{s, op, at})
			}
			continue
		}
		if op != nil && op.Outcome == record.OpOK && last[s.CmdID] == i && !rejectedLast[s.CmdID] {
			byConn[s.Conn] = append(byConn[s.Conn], entry{s, op, op.Return})
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
	for _, c := range slices.Sorted(maps.Keys(byConn)) {
		list := byConn[c]
		for i, e := range list {
			if e.ret < e.send.At {
				out = append(out, violation(CheckPairing, e.ret, "op "+u(e.op.ID)+" completed before it was written"))
			}
			if i > 0 && e.ret < list[i-1].ret {
				out = append(out, violation(CheckPairing, e.ret, "conn "+u(uint64(c))+": op "+u(e.op.ID)+
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
	// FromDemand counts Within from the first operation called at or after After, instead of
	// from After: a quiet window after the heal is no failure, and a run without operations
	// after After has nothing to judge.
	FromDemand bool
	// Closed are the windows in which the application had closed its client (scenario
	// actions: from a close to the next create). An operation that overlaps one (called while
	// the client was closed, or ended by the close) is not judged: the client is not to blame.
	Closed []record.Window
}

// exempt reports whether op overlaps a window in which the client was closed.
func (c *Liveness) exempt(op *record.Op) bool {
	for _, w := range c.Closed {
		if op.Call <= w.To && (op.Return >= w.From || op.Outcome == record.OpPending) {
			return true
		}
	}
	return false
}

// Name implements Checker.
func (Liveness) Name() string { return CheckLiveness }

// Check implements Checker.
func (c Liveness) Check(r *record.Result) []Violation {
	var out []Violation
	if c.FromDemand {
		first, ok := c.firstDemand(r)
		if !ok {
			return nil // nothing asked of the client after the heal
		}
		c.After = first
	}
	deadline := c.After + c.Within
	firstOK := time.Duration(-1)
	judged := 0
	for _, op := range r.Ops {
		// Operations issued in the run's last Within may be cut off by the shutdown: they
		// cannot be judged.
		if op.Call < c.After || (r.End > 0 && op.Call > r.End-c.Within) || c.exempt(&op) {
			continue
		}
		judged++
		if op.Outcome == record.OpOK && op.ServerError == "" && (firstOK < 0 || op.Return < firstOK) {
			firstOK = op.Return
		}
		if op.Call >= deadline && (op.Outcome != record.OpOK || op.ServerError != "") {
			out = append(out, livenessViolation(&op, c.After))
		}
	}
	return append(out, c.verdict(judged, firstOK)...)
}

// livenessViolation is the violation of op, issued after the deadline, that did not succeed.
func livenessViolation(op *record.Op, after time.Duration) Violation {
	msg := "op " + u(op.ID) + " " + op.Name + " issued " + (op.Call - after).String() + " after heal ended " + op.Outcome.String()
	if op.Err != "" {
		msg += ": " + op.Err
	}
	return violation(CheckLiveness, op.Call, msg)
}

// verdict returns the violation of a run in which judged operations were judged and the first
// success returned at firstOK (negative: none).
func (c Liveness) verdict(judged int, firstOK time.Duration) []Violation {
	deadline := c.After + c.Within
	switch {
	case judged == 0:
		return []Violation{violation(CheckLiveness, c.After, "no operation was issued after "+c.After.String()+" to judge liveness")}
	case firstOK < 0 || firstOK > deadline:
		return []Violation{violation(CheckLiveness, deadline, "no operation succeeded within "+c.Within.String()+" of "+c.After.String())}
	}
	return nil
}

// firstDemand returns the call time of the first operation called at or after c.After that
// the shutdown does not cut off (called no later than the run's last Within) and that no close
// of the client touches.
func (c *Liveness) firstDemand(r *record.Result) (time.Duration, bool) {
	first, found := time.Duration(0), false
	for i := range r.Ops {
		op := &r.Ops[i]
		if op.Call < c.After || (r.End > 0 && op.Call > r.End-c.Within) || c.exempt(op) {
			continue
		}
		if !found || op.Call < first {
			first, found = op.Call, true
		}
	}
	return first, found
}

// Replay checks the journal contract (DESIGN checker 12): stepping the recorded events into a
// fresh machine reproduces exactly the recorded effects.
type Replay struct {
	// Config is the engine configuration of the run.
	Config engine.Config
}

// Name implements Checker.
func (Replay) Name() string { return CheckReplay }

// Check implements Checker. Each client generation (record.ClientGen) is replayed into fresh
// machines of its own, with the offset the runner gave its identifiers taken off the events and
// put back on the replayed effects.
func (c Replay) Check(r *record.Result) []Violation {
	f := c.fold()
	for i := range r.Steps {
		f.step(i, &r.Steps[i], r.Clients)
	}
	return f.out
}

// replayFold replays the steps one at a time, in order (Check, or the stream's batches): it
// keeps the machines of the current client generation and stops at the first difference.
type replayFold struct {
	cfg engine.Config
	rp  *engine.Replayer
	// gen is the number of client generations begun; off their identifiers' offset.
	gen     int
	off     uint64
	out     []Violation
	a, b    []byte
	shifted []fsm.Effect
}

func (c Replay) fold() *replayFold { return &replayFold{cfg: c.Config} }

// step replays step si of the run (its index in the whole journal).
func (f *replayFold) step(si int, st *record.Step, clients []record.ClientGen) {
	if len(f.out) > 0 {
		return
	}
	for f.gen < len(clients) && si == clients[f.gen].Step {
		f.off = record.GenOffset(clients[f.gen].Gen)
		f.gen++
		f.rp = nil
	}
	if f.rp == nil {
		rp, err := engine.NewReplayer(f.cfg)
		if err != nil {
			f.out = append(f.out, violation(CheckReplay, st.Event.At, "the run's engine configuration does not replay: "+err.Error()))
			return
		}
		f.rp = rp
	}
	ev := st.Event
	record.ShiftEvent(&ev, -f.off)
	f.shifted = append(f.shifted[:0], f.rp.Step(&ev)...)
	record.ShiftEffects(f.shifted, f.off)
	f.a, f.b = f.a[:0], f.b[:0]
	for j := range f.shifted {
		f.a = f.shifted[j].AppendTo(append(f.a, '|'))
	}
	for j := range st.Effects {
		f.b = st.Effects[j].AppendTo(append(f.b, '|'))
	}
	if string(f.a) != string(f.b) {
		f.out = append(f.out, violation(CheckReplay, st.Event.At, "step "+itoa(si)+" ("+st.Event.String()+") replayed to "+
			string(f.a)+" but recorded "+string(f.b)))
	}
}

func u(v uint64) string { return strconv.FormatUint(v, 10) }

func itoa(v int) string { return strconv.Itoa(v) }
