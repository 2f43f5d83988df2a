package client

import (
	"context"
	"time"

	"github.com/respire-go/respire/engine"
	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/internal/simbind"
)

// Dedicated connections, blocking commands and pub/sub of a simulated client (simtest): the
// same rent, sends, subscriptions and abandonment as production, with each wait made through
// the host in virtual time instead of a select, so that the caller's task yields while it
// waits.

// awaitCallsSim waits for the calls of cls in order, within budget (zero: none) and ctx, the
// budget extended while relax's connection is in a maintenance window (waitRelaxedSim). It
// takes the completion of every call that completed and returns how many did, in order (len(cls)
// when all did), and why the wait ended.
func (c *Client) awaitCallsSim(ctx context.Context, cls []*call, budget time.Duration, relax relaxOf) (int, simbind.Wake) {
	all := func() bool {
		for _, cl := range cls {
			if len(cl.done) == 0 {
				return false
			}
		}
		return true
	}
	wake := c.waitRelaxedSim(ctx, all, budget, relax)
	n := 0
	for n < len(cls) && len(cls[n].done) > 0 {
		<-cls[n].done
		n++
	}
	return n, wake
}

// roundTripSim is roundTrip's wait for a simulated client.
func (d *DedicatedConn) roundTripSim(ctx context.Context, budget time.Duration, cls []*call) error {
	n, wake := d.c.awaitCallsSim(ctx, cls, budget, relaxOf{conn: d.conn})
	switch {
	case n == len(cls):
		return d.settle(cls)
	case wake == simbind.Cancelled:
		return d.abandon(cls, n, ctx.Err())
	}
	return d.abandon(cls, n, nil)
}

// awaitGroupHost is awaitGroup for a simulated client: the group's commands are already sent
// on the dedicated connection conn, whose relaxation extends the budget in a maintenance window.
func (c *Client) awaitGroupHost(ctx context.Context, g *callGroup, budget time.Duration, conn relaxOf) (done bool, ctxErr error, timedOut bool) {
	switch c.waitRelaxedSim(ctx, func() bool { return len(g.done) > 0 }, budget, conn) {
	case simbind.Ready:
		<-g.done
		return true, nil, false
	case simbind.Cancelled:
		return false, ctx.Err(), false
	}
	return false, nil, true
}

// rentSim waits for the answer to rent id through the host. When ctx ends first the rent is
// withdrawn, its answer awaited (the machine answers every rent once) and a connection granted
// meanwhile given back.
func (c *Client) rentSim(ctx context.Context, id fsm.WaiterID, answer chan engine.Grant) (engine.Grant, error) {
	if c.sim.Wait(ctx, func() bool { return len(answer) > 0 }, 0) == simbind.Ready {
		return <-answer, nil
	}
	c.eng.Cancel(fsm.MachinePool, id)
	c.sim.Wait(context.Background(), func() bool { return len(answer) > 0 }, 0)
	if g := <-answer; g.Outcome == fsm.OutcomeGranted {
		c.eng.Return(g.ConnID, true)
	}
	return engine.Grant{}, ctx.Err()
}

// subscribeWaitSim waits for the answer to a subscription through the host, within
// ConnectTimeout plus CommandTimeout of virtual time (none with NoTimeout) and ctx: the
// answer, ctx's error, or expired when the budget passed first.
func (c *Client) subscribeWaitSim(ctx context.Context, answer chan engine.Grant) (g engine.Grant, ctxErr error, expired bool) {
	var budget time.Duration
	if c.opts.CommandTimeout != NoTimeout {
		budget = c.opts.ConnectTimeout + c.opts.CommandTimeout
	}
	switch c.sim.Wait(ctx, func() bool { return len(answer) > 0 }, budget) {
	case simbind.Ready:
		return <-answer, nil, false
	case simbind.Cancelled:
		return engine.Grant{}, ctx.Err(), false
	}
	return engine.Grant{}, nil, true
}
