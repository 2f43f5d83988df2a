package check

import (
	"strings"
	"time"

	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/sim/record"
	"github.com/respire-go/respire/sim/scenario"
)

// The maintenance checkers judge the client against the notices each connection received
// (Result.Maint, recorded by the simulated network) with a model of their own: they share no
// code with the relaxation machine or the handoff they check.

// Maintenance checker names.
const (
	CheckMaintRelaxed  = scenario.CheckMaintRelaxed
	CheckMaintDrain    = scenario.CheckMaintDrain
	CheckMaintNoReplay = scenario.CheckMaintNoReplay
)

// timedOutPrefix begins the error of a simulated command or round trip whose timeout fired.
const timedOutPrefix = "sim: command timed out"

// maintCheckers returns the maintenance checkers, by name.
func maintCheckers(sc *scenario.Scenario) map[string]Checker {
	return map[string]Checker{
		CheckMaintRelaxed: MaintRelaxed{CommandTimeout: sc.Client.CommandTimeout, Relaxed: sc.Client.MaintenanceRelaxedTimeout, Window: sc.Client.MaintenanceWindowTimeout,
			RoundTrips: sc.Workload.Dedicated != nil && sc.Workload.Dedicated.RoundTripTimeout},
		CheckMaintDrain:    MaintDrain{Lag: sc.Runtime.LoopLag},
		CheckMaintNoReplay: MaintNoReplay{},
	}
}

// maintSelected lists the maintenance checkers a scenario with a maintenance timeline runs.
func maintSelected(sc *scenario.Scenario) []string {
	if len(sc.Maintenance) == 0 {
		return nil
	}
	return []string{CheckMaintRelaxed, CheckMaintDrain, CheckMaintNoReplay}
}

// MaintRelaxed checks each workload operation that timed out, or that completed after its own
// deadline, against the relaxation windows its connection received:
//
//   - a start notice (MIGRATING, FAILING_OVER, SMIGRATING) opens its kind's window for Window;
//     MOVING for its grace when shorter; a notice of the same kind restarts it; the completion
//     (MIGRATED, FAILED_OVER, SMIGRATED) closes it; the connection is relaxed while any is open;
//   - a command whose own deadline (its call plus CommandTimeout) falls in a relaxation that
//     began before it may live until its call plus max(CommandTimeout, Relaxed), or until that
//     relaxation ends (by its time, or by the completion notice that closes it), whichever comes
//     first; any other command until its own deadline.
//
// An operation that timed out before that instant was not given its relaxed time; one that
// timed out or completed after it was kept relaxed past the window.
//
// The batchers' batches (workload.batches) are judged as one command each, from their start, on
// the connection that took them (maint_dedicated.go). With RoundTrips
// (workload.dedicated.round_trip_timeout), each round trip of a dedicated push
// or transaction step is judged the same way, from when its commands were sent: the
// dedicated connection's own notices extend it (maint_dedicated.go).
type MaintRelaxed struct {
	CommandTimeout, Relaxed, Window time.Duration
	RoundTrips                      bool
}

// Name implements Checker.
func (MaintRelaxed) Name() string { return CheckMaintRelaxed }

// Check implements Checker.
func (c MaintRelaxed) Check(r *record.Result) []Violation {
	if c.CommandTimeout <= 0 {
		return nil
	}
	notices := map[fsm.ConnID][]record.MaintEvent{}
	for _, e := range r.Maint {
		if e.Kind == record.MaintNotice {
			notices[e.Conn] = append(notices[e.Conn], e)
		}
	}
	conn := map[uint64]fsm.ConnID{}
	for _, s := range r.Sends {
		if _, ok := conn[s.CmdID]; !ok {
			conn[s.CmdID] = s.Conn
		}
	}
	var out []Violation
	if c.RoundTrips {
		out = c.checkRoundTrips(r, notices)
	}
	out = append(out, c.checkBatches(r, notices)...)
	for i := range r.Ops {
		op := &r.Ops[i]
		timedOut := strings.HasPrefix(op.Err, timedOutPrefix)
		own := op.Call + c.CommandTimeout
		if op.Outcome == record.OpPending || (!timedOut && op.Return <= own) {
			continue
		}
		id, ok := conn[op.ID]
		if !ok {
			continue // never written: no connection relaxed it
		}
		end := c.end(notices[id], op.Call)
		switch {
		case timedOut && op.Return < end:
			out = append(out, violation(CheckMaintRelaxed, op.Return, "op "+u(op.ID)+" "+op.Name+" timed out "+
				(op.Return-op.Call).String()+" after its call on conn "+u(uint64(id))+", before its relaxed deadline "+
				(end-op.Call).String()))
		case op.Return > end:
			out = append(out, violation(CheckMaintRelaxed, op.Return, "op "+u(op.ID)+" "+op.Name+" ended "+
				(op.Return-op.Call).String()+" after its call on conn "+u(uint64(id))+", past its deadline "+
				(end-op.Call).String()+" (relaxed past the window?)"))
		}
	}
	return out
}

// relaxation is the model's state of one connection at an instant.
type relaxation struct {
	relaxed      bool
	since, until time.Duration
}

// at replays the notices received by t: which windows are open, and since when the connection
// is relaxed without a break.
func (c MaintRelaxed) at(notices []record.MaintEvent, t time.Duration) relaxation {
	var open [8]time.Duration // per starting kind: the window's end (0: closed)
	var st relaxation
	settle := func(now time.Duration) {
		var until time.Duration
		for k, end := range open {
			if end != 0 && end <= now {
				open[k] = 0
			}
			if open[k] > until {
				until = open[k]
			}
		}
		if until != 0 && !st.relaxed {
			st.since = now
		}
		st.relaxed, st.until = until != 0, until
	}
	for _, n := range notices {
		if n.At > t {
			break
		}
		settle(n.At)
		switch n.Notice {
		case fsm.MaintMoving, fsm.MaintMigrating, fsm.MaintFailingOver, fsm.MaintSlotMigrating:
			w := c.Window
			if n.Notice == fsm.MaintMoving && n.Time < w {
				w = n.Time
			}
			open[n.Notice] = n.At + w
			if w == 0 {
				open[n.Notice] = 0
			}
		case fsm.MaintMigrated:
			open[fsm.MaintMigrating] = 0
		case fsm.MaintFailedOver:
			open[fsm.MaintFailingOver] = 0
		case fsm.MaintSlotMigrated:
			open[fsm.MaintSlotMigrating] = 0
		}
		settle(n.At)
	}
	settle(t)
	return st
}

// end is when a command called at call on a connection that received notices must time out.
func (c MaintRelaxed) end(notices []record.MaintEvent, call time.Duration) time.Duration {
	own := call + c.CommandTimeout
	relaxedEnd := call + max(c.CommandTimeout, c.Relaxed)
	t := own
	for range 2 + 2*len(notices) {
		st := c.at(notices, t)
		if !st.relaxed || st.since >= own || t >= relaxedEnd {
			return t
		}
		next := min(relaxedEnd, st.until)
		// The caller asks again at the next notice (one that ends or shortens the window wakes
		// it; another leaves the answer as it was).
		for _, n := range notices {
			if n.At > t && n.At < next {
				next = n.At
				break
			}
		}
		t = next
	}
	return t
}

// MaintDrain checks the MOVING handoff's drain budget: a connection that received MOVING (its
// first) with grace g at t, once a replacement for its slot was ready at p after t, closes by
// max(t+g, p), plus the scenario's loop lag. What it had not answered then failed (never resent:
// MaintNoReplay).
type MaintDrain struct {
	Lag time.Duration
}

// Name implements Checker.
func (MaintDrain) Name() string { return CheckMaintDrain }

// Check implements Checker.
func (c MaintDrain) Check(r *record.Result) []Violation {
	var out []Violation
	moved := map[fsm.ConnID]bool{}
	for i, e := range r.Maint {
		if e.Kind != record.MaintNotice || e.Notice != fsm.MaintMoving || e.Slot < 0 || moved[e.Conn] {
			continue
		}
		moved[e.Conn] = true
		closed, ready := time.Duration(-1), time.Duration(-1)
		for _, f := range r.Maint[i+1:] {
			switch {
			case f.Kind == record.MaintClosed && f.Conn == e.Conn && closed < 0:
				closed = f.At
			case f.Kind == record.MaintReady && f.Slot == e.Slot && f.Conn != e.Conn && ready < 0 && closed < 0:
				ready = f.At
			}
		}
		if ready < 0 {
			continue // no replacement while it was open: the handoff was given up, or the run ended
		}
		budget := max(e.At+e.Time, ready) + c.Lag
		switch {
		case closed < 0 && r.End > budget:
			out = append(out, violation(CheckMaintDrain, budget, "conn "+u(uint64(e.Conn))+" received MOVING at "+
				e.At.String()+" with a "+e.Time.String()+" grace, its replacement was ready at "+ready.String()+
				", and it was still open at the end of the run"))
		case closed > budget:
			out = append(out, violation(CheckMaintDrain, closed, "conn "+u(uint64(e.Conn))+" received MOVING at "+
				e.At.String()+" with a "+e.Time.String()+" grace, its replacement was ready at "+ready.String()+
				", and it closed only at "+closed.String()))
		}
	}
	return out
}

// MaintNoReplay checks that no command written on a connection that received MOVING is written
// again on another connection, whatever reply it got: a MOVING handoff never resends. It judges
// writes (Result.Sends), not acceptance: a command the old connection accepted but never wrote
// moves to the replacement and is written once, there, which is allowed.
type MaintNoReplay struct{}

// Name implements Checker.
func (MaintNoReplay) Name() string { return CheckMaintNoReplay }

// Check implements Checker.
func (MaintNoReplay) Check(r *record.Result) []Violation {
	moved := map[fsm.ConnID]bool{}
	for _, e := range r.Maint {
		if e.Kind == record.MaintNotice && e.Notice == fsm.MaintMoving {
			moved[e.Conn] = true
		}
	}
	var out []Violation
	first := map[uint64]record.Send{}
	for _, s := range r.Sends {
		prev, ok := first[s.CmdID]
		if !ok {
			first[s.CmdID] = s
			continue
		}
		if moved[prev.Conn] && prev.Conn != s.Conn {
			out = append(out, violation(CheckMaintNoReplay, s.At, "command "+u(s.CmdID)+" written on conn "+
				u(uint64(prev.Conn))+", which received MOVING, and again on conn "+u(uint64(s.Conn))))
		}
	}
	return out
}
