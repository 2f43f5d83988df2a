package client

import (
	"context"
	"time"

	"github.com/respire-go/respire/internal/simbind"
)

// Maintenance relaxation of a simulated client's waits. A production wait re-arms its timer
// through relaxTimer when its budget fires; a simulated client waits through the host in
// virtual time instead (executeSim, awaitGroupSim, awaitGroupHost, roundTripSim), so it asks
// the same rule, relaxAt, with the host's virtual clock. There is no second copy of the rule for
// the simulator: a single command, a batch's run and a dedicated connection's round trip all
// get max(own, relaxed) from their start while the connection that took them is in a window,
// and a notice that shrinks the window ends a wait older than its own budget at once.

// waitRelaxedSim waits through the host until ready reports true or ctx ends, within budget of
// virtual time counted from now (zero or negative: none). When the budget passes it asks the
// relaxation of the connection that took the commands (relax; none: they time out) through
// relaxAt, at the host's virtual time, and while that keeps them alive it waits on until the
// relaxed deadline, or until a notice shrinks the window and it asks again. It returns Ready,
// Cancelled, or TimedOut once the relaxation no longer keeps the commands alive.
func (c *Client) waitRelaxedSim(ctx context.Context, ready func() bool, budget time.Duration, relax relaxOf) simbind.Wake {
	if budget <= 0 {
		return c.sim.Wait(ctx, ready, budget)
	}
	start := c.sim.MaintNow()
	wait, cond := budget, ready
	for {
		wake := c.sim.Wait(ctx, cond, wait)
		switch {
		case wake == simbind.Cancelled:
			return wake
		case ready():
			return simbind.Ready
		}
		// The budget (or the relaxed deadline) passed, or the window shrank: ask again.
		now := c.sim.MaintNow()
		next, shrunk, ok := relaxAt(relax.relax(), now, start, budget)
		if !ok {
			return simbind.TimedOut
		}
		// A zero wait would have no budget at all: wait at least a nanosecond of virtual time.
		wait = max(next.Sub(now), time.Nanosecond)
		cond = func() bool { return ready() || closedChan(shrunk) }
	}
}

// closedChan reports whether ch is closed (a host's ready function: it reads without blocking).
func closedChan(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
