package workload

import (
	"time"

	"github.com/respire-go/respire/engine"
	"github.com/respire-go/respire/sim/record"
	"github.com/respire-go/respire/sim/scenario"
)

// Round-trip timeouts of the renters (workload.dedicated.round_trip_timeout): each push and
// each transaction step waits for its replies for client.command_timeout from when it sent its
// commands, as client.DedicatedConn's calls do, and, when that fires, asks its connection's
// maintenance relaxation for more time (engine.Relax.Extend, the rule the client's waits ask
// too). Blocking pops have no reply budget.

// roundTripTimedOut is the error of an operation whose round trip timed out (the prefix the
// maint-relaxed-deadlines checker recognizes, as for the callers' commands).
const roundTripTimedOut = "sim: command timed out (round trip)"

// armRoundTrip arms the round-trip timer of the step just sent, when the workload asks for one
// and the step is not a blocking pop.
func (run *dedicatedRun) armRoundTrip() {
	dw := run.r.dw
	own := dw.w.Scenario.Client.CommandTimeout
	run.rt = 0
	if !dw.spec.RoundTripTimeout || own <= 0 || (run.op().Kind != "PUSH" && run.op().Kind != "TX") {
		return
	}
	run.schedule(own)
}

// schedule arms the step's timer to fire after d.
func (run *dedicatedRun) schedule(d time.Duration) {
	dw := run.r.dw
	dw.rtSeq++
	run.rt = dw.rtSeq
	dw.w.Sched.After(d, run.r, renterRoundTrip|run.rt)
}

// roundTripTimer is the step timer seq firing: unless the step completed meanwhile, the
// relaxation may keep it alive; otherwise the operation ends with an unknown outcome.
func (r *renter) roundTripTimer(seq uint64) bool {
	run := r.cur
	if run == nil || run.ended || run.rt != seq || run.pending == 0 {
		return false
	}
	return run.expire()
}

// relax returns the maintenance relaxation of the step's connection, or nil.
func (run *dedicatedRun) relax() *engine.Relax {
	if rl, ok := run.conn.(engine.Relaxer); ok {
		return rl.Relax()
	}
	return nil
}

// expire asks the relaxation of the step's connection for more time (the maint-ignore-
// relaxation plant never asks): while it keeps the step alive the timer is re-armed for when to
// ask again; otherwise the renter stops waiting, as after its deadline.
func (run *dedicatedRun) expire() bool {
	dw := run.r.dw
	w := dw.w
	now := w.Sched.Now()
	if rl := run.relax(); rl != nil && !w.Scenario.Planted(scenario.PlantMaintIgnoreRelaxation) {
		wake, ok := rl.Extend(record.MaintEpoch.Add(now), record.MaintEpoch.Add(run.stepStart), w.Scenario.Client.CommandTimeout)
		if ok {
			at := wake.Sub(record.MaintEpoch)
			run.schedule(max(at-now, time.Nanosecond))
			w.Trace.End(w.Trace.Begin("dop relaxed").Int("id", run.op().ID).Str("until", at.String()))
			return true
		}
	}
	run.rt = 0
	for _, cmd := range run.cmds {
		cmd.Leave()
	}
	run.end(record.DedicatedUnknown, roundTripTimedOut)
	return true
}

// Recheck is called when a notice ended or shortened relaxation rl: every renter whose step rl
// keeps alive past its own budget asks again now, as the client's waits do when
// engine.Relax.Shrunk is closed.
func (dw *Renters) Recheck(rl *engine.Relax) {
	if dw == nil || !dw.spec.RoundTripTimeout {
		return
	}
	now := dw.w.Sched.Now()
	for _, r := range dw.renters {
		run := r.cur
		if run == nil || run.ended || run.rt == 0 || run.pending == 0 || run.relax() != rl ||
			now < run.stepStart+dw.w.Scenario.Client.CommandTimeout {
			continue
		}
		run.expire()
	}
}
