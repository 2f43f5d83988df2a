package record

import (
	"time"

	"github.com/respire-go/respire/fsm"
)

// ClientGen marks where a client generation starts: the scenario's actions (scenario.
// ClientAction) close the client and create new ones, and each new client's engine numbers its
// connections, timers, waiters and episodes from 1 again. The runner keeps the run's
// identifiers unique by adding GenOffset(Gen) to every identifier of generation Gen, in the
// steps it records, the trace and the records; a checker that steps machines (the journal replay)
// takes the offset off again to replay each generation into fresh machines.
type ClientGen struct {
	// Gen is the generation: 1 for the first client created after the initial one.
	Gen int
	// Step is the index of the generation's first step in the run's journal (Result.Steps
	// when the run kept it whole; see Result.StepBase).
	Step int
	// At is when the client was created.
	At time.Duration
}

// GenShift places the generation in the identifiers: below the 8 machine bits of a client
// machine's identifiers (fsm.MachineOf), above the 2^48 identifiers one generation may use.
const GenShift = 48

// GenOffset returns what generation gen adds to the identifiers of its engine. Adding
// -GenOffset(gen) (two's complement) takes it off again.
func GenOffset(gen int) uint64 { return uint64(gen) << GenShift }

// ShiftEvent adds off to the identifiers ev carries (its connection, timer and waiter); zero
// identifiers stay zero.
func ShiftEvent(ev *fsm.Event, off uint64) {
	if off == 0 {
		return
	}
	ev.Conn = fsm.ConnID(shift(uint64(ev.Conn), off))
	ev.Timer = fsm.TimerID(shift(uint64(ev.Timer), off))
	ev.Waiter = fsm.WaiterID(shift(uint64(ev.Waiter), off))
}

// ShiftEffects adds off to the identifiers the effects carry (connection, timer, waiter and
// the episode of an observation); zero identifiers stay zero.
func ShiftEffects(effects []fsm.Effect, off uint64) {
	if off == 0 {
		return
	}
	for i := range effects {
		f := &effects[i]
		f.Conn = fsm.ConnID(shift(uint64(f.Conn), off))
		f.Timer = fsm.TimerID(shift(uint64(f.Timer), off))
		f.Waiter = fsm.WaiterID(shift(uint64(f.Waiter), off))
		f.Lifecycle.Episode = shift(f.Lifecycle.Episode, off)
	}
}

func shift(id, off uint64) uint64 {
	if id == 0 {
		return 0
	}
	return id + off
}

// GenOf returns the generation step i of the run's journal belongs to (0 for the initial
// client).
func (r *Result) GenOf(step int) int {
	g := 0
	for _, c := range r.Clients {
		if c.Step > step {
			break
		}
		g = c.Gen
	}
	return g
}
