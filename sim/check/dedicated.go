package check

import (
	"errors"
	"sort"
	"strings"
	"time"

	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/netio/resp"
	"github.com/respire-go/respire/netio/wire"
	"github.com/respire-go/respire/sim/record"
)

// Checker names of dedicated connections.
const (
	// CheckRentBudget: a rent makes at most MaxAttempts+1 connection attempts (one without a
	// policy), numbered 0, 1, 2... on its own, and an operation's rents together stay within
	// that budget.
	CheckRentBudget = "rent-budget"
	// CheckRentPermanent: a permanent rejection (WRONGPASS, NOAUTH, NOPERM, ERR, a protocol
	// error) is tried once: the rent is answered at once and nothing dials for it again.
	CheckRentPermanent = "rent-permanent"
	// CheckDedicatedNoResend: an operation writes its blocking command or EXEC at most once, so
	// one whose connection failed is never sent again.
	CheckDedicatedNoResend = "dedicated-no-resend"
	// CheckPool: the dedicated pool's bounds and lifecycle: connecting + rented + idle +
	// backoff reservations within MaximumSize, idle within MaximumIdle, one owner per
	// connection (never granted twice before its return, and written to only by the operation
	// holding it), every rent answered exactly once and never dialed for afterwards, no
	// Disconnected event for a withdrawal or shutdown, nothing dialed or armed after disposal,
	// every operation ended.
	CheckPool = "pool"
	// CheckExpectDedicated: the scenario's expect.dedicated bounds.
	CheckExpectDedicated = "expect-dedicated"
)

// rentRecord is what the steps say about one rent (a pool Demanded).
type rentRecord struct {
	waiter fsm.WaiterID
	// dials are its connection attempts: the step index, the attempt number and the connection.
	dials []rentDial
	// answers are the steps that answered it, with their outcomes.
	answers []rentAnswer
	// permanentStep is the step of its first permanent failure, or -1.
	permanentStep int
}

type rentDial struct {
	step    int
	at      time.Duration
	attempt int
	conn    fsm.ConnID
}

type rentAnswer struct {
	step    int
	outcome fsm.Outcome
}

// rentIndex reconstructs the rents from the engine steps: pool demands, the dials and answers
// the pool attributes to each, and the failures of their attempts.
func rentIndex(r *record.Result) (map[fsm.WaiterID]*rentRecord, []fsm.WaiterID) {
	rents := map[fsm.WaiterID]*rentRecord{}
	var order []fsm.WaiterID
	connRent := map[fsm.ConnID]fsm.WaiterID{}
	get := func(w fsm.WaiterID) *rentRecord {
		if rents[w] == nil {
			rents[w] = &rentRecord{waiter: w, permanentStep: -1}
			order = append(order, w)
		}
		return rents[w]
	}
	for i := range r.Steps {
		st := &r.Steps[i]
		ev := &st.Event
		if ev.Kind == fsm.Demanded && ev.Machine == fsm.MachinePool {
			get(ev.Waiter)
		}
		if ev.Kind == fsm.DialFailed && fsm.MachineOf(uint64(ev.Conn)) == fsm.MachinePool {
			if w, ok := connRent[ev.Conn]; ok && permanentFailure(ev.Err) {
				if rr := get(w); rr.permanentStep < 0 {
					rr.permanentStep = i
				}
			}
		}
		for _, f := range st.Effects {
			if f.Machine != fsm.MachinePool {
				continue
			}
			switch f.Kind {
			case fsm.Dial:
				connRent[f.Conn] = f.Waiter
				rr := get(f.Waiter)
				rr.dials = append(rr.dials, rentDial{step: i, at: ev.At, attempt: f.Attempt, conn: f.Conn})
			case fsm.Complete:
				rr := get(f.Waiter)
				rr.answers = append(rr.answers, rentAnswer{step: i, outcome: f.Outcome})
			}
		}
	}
	return rents, order
}

// permanentFailure classifies a connection failure independently of the code under test: a
// handshake rejection whose code is not one of Redis's transient codes, or a malformed reply.
func permanentFailure(err error) bool {
	var he *wire.HandshakeError
	if errors.As(err, &he) {
		switch he.Code {
		case "LOADING", "BUSY", "CLUSTERDOWN", "TRYAGAIN", "MASTERDOWN":
			return false
		}
		return !strings.Contains(he.Message, "max number of clients")
	}
	var pe *resp.ProtocolError
	return errors.As(err, &pe)
}

// rentBudget is the number of attempts a rent may make under p, or 0 for unlimited.
func rentBudget(p *fsm.Policy) int {
	switch {
	case p == nil:
		return 1
	case p.MaxAttempts == 0:
		return 0
	}
	return p.MaxAttempts + 1
}

// RentBudget checks attempts per rent and per operation (see CheckRentBudget).
type RentBudget struct {
	// Policy is the scenario's reconnect policy, or nil.
	Policy *fsm.Policy
}

// Name implements Checker.
func (RentBudget) Name() string { return CheckRentBudget }

// Check implements Checker.
func (c RentBudget) Check(r *record.Result) []Violation {
	var out []Violation
	budget := rentBudget(c.Policy)
	rents, order := rentIndex(r)
	for _, w := range order {
		rr := rents[w]
		for i, d := range rr.dials {
			if d.attempt != i {
				out = append(out, violation(CheckRentBudget, d.at, "rent "+u(uint64(w))+" dialed attempt "+itoa(d.attempt)+
					" as its attempt "+itoa(i+1)+": each rent numbers its own attempts from 0"))
			}
		}
		if budget > 0 && len(rr.dials) > budget {
			out = append(out, violation(CheckRentBudget, rr.dials[budget].at, "rent "+u(uint64(w))+" made "+itoa(len(rr.dials))+
				" connection attempts, budget "+itoa(budget)))
		}
	}
	if budget == 0 {
		return out
	}
	for _, op := range r.Dedicated {
		if n, at := opDials(&op, rents); n > budget {
			out = append(out, violation(CheckRentBudget, at, "op "+itoa(op.ID)+" "+op.Kind+" made "+itoa(n)+" connection attempts across "+
				itoa(len(op.Waiters))+" rents, budget "+itoa(budget)))
		}
	}
	return out
}

// RentPermanent checks that permanent failures are tried once (see CheckRentPermanent).
type RentPermanent struct{}

// Name implements Checker.
func (RentPermanent) Name() string { return CheckRentPermanent }

// Check implements Checker.
func (RentPermanent) Check(r *record.Result) []Violation {
	var out []Violation
	rents, order := rentIndex(r)
	for _, w := range order {
		rr := rents[w]
		if rr.permanentStep < 0 {
			continue
		}
		at := r.Steps[rr.permanentStep].Event.At
		answered := false
		for _, a := range rr.answers {
			answered = answered || (a.step == rr.permanentStep && a.outcome == fsm.OutcomeFailed)
		}
		if !answered {
			out = append(out, violation(CheckRentPermanent, at, "rent "+u(uint64(w))+" was not answered at once after a permanent failure"))
		}
		for _, d := range rr.dials {
			if d.step >= rr.permanentStep {
				out = append(out, violation(CheckRentPermanent, d.at, "rent "+u(uint64(w))+" dialed attempt "+itoa(d.attempt)+
					" after a permanent failure"))
			}
		}
	}
	// An operation whose rent was rejected permanently dials no more for it.
	for _, op := range r.Dedicated {
		first := -1
		for _, w := range op.Waiters {
			if rr := rents[w]; rr != nil && rr.permanentStep >= 0 && (first < 0 || rr.permanentStep < first) {
				first = rr.permanentStep
			}
		}
		if first < 0 {
			continue
		}
		for _, w := range op.Waiters {
			rr := rents[w]
			if rr == nil || rr.permanentStep == first {
				continue
			}
			for _, d := range rr.dials {
				if d.step > first {
					out = append(out, violation(CheckRentPermanent, d.at, "op "+itoa(op.ID)+" dialed again (rent "+u(uint64(w))+
						") after a permanent failure"))
				}
			}
		}
	}
	return out
}

// DedicatedNoResend checks that blocking commands and EXEC are never resent (see
// CheckDedicatedNoResend).
type DedicatedNoResend struct{}

// Name implements Checker.
func (DedicatedNoResend) Name() string { return CheckDedicatedNoResend }

// onceOnly are the commands an operation must never write twice.
var onceOnly = map[string]bool{"BLPOP": true, "BRPOP": true, "BLMOVE": true, "BZPOPMIN": true, "XREAD": true, "EXEC": true}

// Check implements Checker.
func (DedicatedNoResend) Check(r *record.Result) []Violation {
	var out []Violation
	sends := dedicatedSends(r)
	for _, op := range r.Dedicated {
		written := map[string][]record.Send{}
		var names []string
		for _, cmd := range op.Cmds {
			if !onceOnly[cmd.Name] {
				continue
			}
			if len(written[cmd.Name]) == 0 {
				names = append(names, cmd.Name)
			}
			written[cmd.Name] = append(written[cmd.Name], sends[cmd.ID]...)
		}
		for _, name := range names {
			ws := written[name]
			if len(ws) <= 1 {
				continue
			}
			msg := "op " + itoa(op.ID) + " wrote its " + name + " " + itoa(len(ws)) + " times:"
			for _, s := range ws {
				msg += " command " + u(s.CmdID) + " on conn " + u(uint64(s.Conn)) + " at " + s.At.String() + ";"
			}
			out = append(out, violation(CheckDedicatedNoResend, ws[1].At, strings.TrimSuffix(msg, ";")))
		}
	}
	return out
}

// Pool checks the dedicated pool's bounds and lifecycle (see CheckPool).
type Pool struct {
	// Config is the pool's configuration.
	Config fsm.PoolConfig
}

// Name implements Checker.
func (Pool) Name() string { return CheckPool }

// Connection states of the pool model.
const (
	pcDialing = iota + 1
	pcClosing
	pcReady
	pcRented
	pcReturning
	pcIdle
)

// Check implements Checker. Each engine's pool is judged on its own steps: the client's, and
// with replication each replica engine's (a blocking read on a replica rents from that
// replica's pool), with the same configuration.
func (c Pool) Check(r *record.Result) []Violation {
	// holds are, per connection, the intervals during which a rent held it.
	holds := map[fsm.ConnID][]holdInterval{}
	out := c.checkSteps(r.Steps, r.End, holds)
	for _, steps := range candidateSteps(r) {
		out = append(out, c.checkSteps(steps, r.End, holds)...)
	}
	for _, op := range r.Dedicated {
		if op.Outcome == "" {
			out = append(out, violation(CheckPool, op.Call, "op "+itoa(op.ID)+" "+op.Kind+" never ended"))
		}
	}
	out = append(out, checkHolders(r, holds)...)
	return out
}

// candidateSteps returns the steps of each replica engine of a run with replication, by
// candidate in increasing order.
func candidateSteps(r *record.Result) [][]record.Step {
	by := map[int][]record.Step{}
	var order []int
	for i := range r.Candidates {
		k := r.Candidates[i].Candidate
		if _, ok := by[k]; !ok {
			order = append(order, k)
		}
		by[k] = append(by[k], r.Candidates[i].Step)
	}
	sort.Ints(order)
	out := make([][]record.Step, 0, len(order))
	for _, k := range order {
		out = append(out, by[k])
	}
	return out
}

// checkSteps runs the pool model over one engine's steps, and adds the holds it sees to holds.
func (c Pool) checkSteps(steps []record.Step, end time.Duration, holds map[fsm.ConnID][]holdInterval) []Violation {
	var out []Violation
	state := map[fsm.ConnID]int{}
	owner := map[fsm.ConnID]fsm.WaiterID{}
	timers := map[fsm.TimerID]fsm.WaiterID{}
	answered := map[fsm.WaiterID]bool{}
	demanded := map[fsm.WaiterID]bool{}
	disposed := false
	// overCharged and overIdle are the excesses already reported: a bound is reported when it is
	// first exceeded and whenever the excess grows, not at every step it lasts.
	overCharged, overIdle := 0, 0
	for i := range steps {
		st := &steps[i]
		ev := &st.Event
		at := ev.At
		pool := fsm.MachineOf(uint64(ev.Conn)) == fsm.MachinePool
		switch ev.Kind {
		case fsm.Demanded:
			if ev.Machine == fsm.MachinePool {
				demanded[ev.Waiter] = true
			}
		case fsm.DialFailed:
			if pool && (state[ev.Conn] == pcDialing || state[ev.Conn] == pcClosing) {
				delete(state, ev.Conn)
			}
		case fsm.ConnLost:
			if pool {
				switch state[ev.Conn] {
				case pcDialing, pcClosing, pcIdle:
					delete(state, ev.Conn)
				}
			}
		case fsm.HandshakeDone:
			if pool && state[ev.Conn] == pcDialing {
				state[ev.Conn] = pcReady
			}
		case fsm.Returned:
			if pool && state[ev.Conn] == pcRented {
				state[ev.Conn] = pcReturning
				delete(owner, ev.Conn)
			}
			if h := holds[ev.Conn]; len(h) > 0 && h[len(h)-1].to < 0 {
				h[len(h)-1].to = at
			}
		case fsm.TimerFired:
			delete(timers, ev.Timer)
		case fsm.Disposed:
			disposed = true
		}
		for _, f := range st.Effects {
			if f.Machine != fsm.MachinePool {
				continue
			}
			switch f.Kind {
			case fsm.Dial:
				if disposed {
					out = append(out, violation(CheckPool, at, "dedicated dial after disposal"))
				}
				if answered[f.Waiter] {
					out = append(out, violation(CheckPool, at, "rent "+u(uint64(f.Waiter))+" dialed after it was answered"))
				}
				state[f.Conn] = pcDialing
			case fsm.ArmTimer:
				if f.Waiter == 0 {
					continue // the idle-retirement scan
				}
				if disposed {
					out = append(out, violation(CheckPool, at, "rent timer armed after disposal"))
				}
				timers[f.Timer] = f.Waiter
			case fsm.CancelTimer:
				delete(timers, f.Timer)
			case fsm.Close:
				switch state[f.Conn] {
				case pcDialing:
					state[f.Conn] = pcClosing
				case pcClosing:
					if ev.Kind == fsm.HandshakeDone && ev.Conn == f.Conn {
						delete(state, f.Conn)
					}
				default:
					delete(state, f.Conn)
					delete(owner, f.Conn)
				}
			case fsm.Complete:
				if answered[f.Waiter] {
					out = append(out, violation(CheckPool, at, "rent "+u(uint64(f.Waiter))+" answered twice"))
				}
				answered[f.Waiter] = true
				if f.Outcome != fsm.OutcomeGranted {
					continue
				}
				if w, ok := owner[f.Conn]; ok {
					out = append(out, violation(CheckPool, at, "conn "+u(uint64(f.Conn))+" granted to rent "+u(uint64(f.Waiter))+
						" while rent "+u(uint64(w))+" holds it"))
				}
				state[f.Conn] = pcRented
				owner[f.Conn] = f.Waiter
				holds[f.Conn] = append(holds[f.Conn], holdInterval{waiter: f.Waiter, from: at, to: -1})
			case fsm.Emit:
				l := f.Lifecycle
				if l.Source == fsm.SourceDedicated && l.SourceState == fsm.SourceDisconnected &&
					((ev.Kind == fsm.Withdrew && ev.Machine == fsm.MachinePool) || ev.Kind == fsm.Retired || ev.Kind == fsm.Disposed) {
					out = append(out, violation(CheckPool, at, "a withdrawal or shutdown emitted a dedicated Disconnected event"))
				}
				if l.Source == fsm.SourceDedicated && (l.Slot != -1 || l.Episode == 0) {
					out = append(out, violation(CheckPool, at, "a dedicated event without its episode, or with a slot"))
				}
			}
		}
		charged, idle := len(timers), 0
		for id, s := range state {
			switch s {
			case pcReturning:
				state[id] = pcIdle
				idle++
			case pcIdle:
				idle++
			case pcReady:
				// A ready attempt neither granted nor closed: count it.
			}
			charged++
		}
		switch {
		case c.Config.MaximumSize == 0 || charged <= c.Config.MaximumSize:
			overCharged = 0
		case charged > overCharged:
			overCharged = charged
			out = append(out, violation(CheckPool, at, "dedicated capacity "+itoa(charged)+" above maximum_size "+itoa(c.Config.MaximumSize)))
		}
		switch {
		case idle <= c.Config.MaximumIdle:
			overIdle = 0
		case idle > overIdle:
			overIdle = idle
			out = append(out, violation(CheckPool, at, itoa(idle)+" idle dedicated connections above maximum_idle "+itoa(c.Config.MaximumIdle)))
		}
	}
	for w := range demanded {
		if !answered[w] {
			out = append(out, violation(CheckPool, end, "rent "+u(uint64(w))+" was never answered"))
		}
	}
	return out
}

// holdInterval is a time during which a rent held a connection: from its grant to its return
// (to < 0: never returned). A holder writes before it sees its last reply, so strictly before
// its return.
type holdInterval struct {
	waiter   fsm.WaiterID
	from, to time.Duration
}

// checkHolders checks that every command of a dedicated operation was written on a connection
// that one of the operation's rents held at that moment.
func checkHolders(r *record.Result, holds map[fsm.ConnID][]holdInterval) []Violation {
	var out []Violation
	sends := dedicatedSends(r)
	for _, op := range r.Dedicated {
		mine := map[fsm.WaiterID]bool{}
		for _, w := range op.Waiters {
			mine[w] = true
		}
		for _, cmd := range op.Cmds {
			for _, s := range sends[cmd.ID] {
				held := false
				for _, h := range holds[s.Conn] {
					held = held || (mine[h.waiter] && h.from <= s.At && (h.to < 0 || s.At < h.to))
				}
				if !held {
					out = append(out, violation(CheckPool, s.At, "op "+itoa(op.ID)+" wrote "+cmd.Name+" (command "+u(cmd.ID)+
						") on conn "+u(uint64(s.Conn))+", which it did not hold"))
				}
			}
		}
	}
	return out
}

// opDials counts the connection attempts of an operation's rents, and says when the last was.
func opDials(op *record.DedicatedOp, rents map[fsm.WaiterID]*rentRecord) (n int, last time.Duration) {
	for _, w := range op.Waiters {
		if rr := rents[w]; rr != nil && len(rr.dials) > 0 {
			n += len(rr.dials)
			last = rr.dials[len(rr.dials)-1].at
		}
	}
	return n, last
}

// dedicatedSends returns the writes of each dedicated command, in order.
func dedicatedSends(r *record.Result) map[uint64][]record.Send {
	sends := map[uint64][]record.Send{}
	for _, s := range r.Sends {
		if s.CmdID >= record.DedicatedIDBase {
			sends[s.CmdID] = append(sends[s.CmdID], s)
		}
	}
	return sends
}
