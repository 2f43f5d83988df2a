package client

import (
	"context"

	"github.com/cockroachdb/errors"

	"github.com/respire-go/respire/engine"
	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/internal/simbind"
)

// The simulator's seam (internal/simbind): simtest builds a client whose engine runs on the
// simulator's virtual clock and network, and whose callers are the simulator's tasks, run one at
// a time. Such a client differs from a production client in three places only:
//   - create takes the engine's runtime and transport from the host, and the host steps the
//     engine instead of a loop goroutine (client.go);
//   - a command or a batch waits through the host (executeSim and awaitGroupSim below) instead
//     of a select, so that its CommandTimeout runs in virtual time and its task yields while it
//     waits; so do a dedicated connection's rent, commands, batches and blocking commands, a
//     subscription and its messages (simseam_dedicated.go), and Settle; the host hands the
//     simulated pub/sub connections' frames to the client's router (BindPubSub);
//   - Close lets the host step the disposal instead of waiting for the loop (client.go).
//
// A production client has no host: it pays one nil comparison per command.

func init() {
	simbind.Create = func(ctx context.Context, opts any, host simbind.Host, connect bool) (any, error) {
		o, ok := opts.(Options)
		if !ok || host == nil {
			return nil, errors.New("respire: simbind.Create needs a client.Options and a host")
		}
		c, err := create(o, host)
		if err != nil {
			return nil, err
		}
		if connect {
			if err := c.connect(ctx); err != nil {
				_ = c.Close()
				return nil, err
			}
		}
		return c, nil
	}
}

// errNotSimulated reports an option the simulator does not model yet.
func errNotSimulated(option string) error {
	return configErr(option, "is not supported by the simulator (simtest) yet")
}

// simSupported checks that o asks only for what a simulated client can do: a standalone
// endpoint, without the features whose goroutines or transports the simulator does not drive.
func (o *Options) simSupported() error {
	switch {
	case o.UseCluster && o.SplitCrossSlotCommands:
		return errNotSimulated("SplitCrossSlotCommands")
	case o.UseCluster && o.Database != 0:
		return errNotSimulated("Database (with UseCluster)")
	case len(o.ReplicaEndpoints) > 0:
		return errNotSimulated("ReplicaEndpoints")
	case o.Credentials != nil:
		return errNotSimulated("Credentials")
	case o.HedgedReads != nil:
		return errNotSimulated("HedgedReads")
	case o.DedicatedPool.UnblockOnCancel:
		return errNotSimulated("DedicatedPool.UnblockOnCancel")
	}
	return nil
}

// errSimUnsupported refuses a feature that a simulated client does not offer yet: its waits
// are not routed through the host, so its caller could not yield to the simulated world.
func errSimUnsupported(feature string) error {
	return errors.Newf("respire: %s are not supported by the simulator (simtest) yet", errors.Safe(feature))
}

// connectSim waits for the eager connect through the host.
func (c *Client) connectSim(ctx context.Context, id fsm.WaiterID, answer chan engine.Grant) error {
	if c.sim.Wait(ctx, func() bool { return len(answer) > 0 }, 0) == simbind.Ready {
		return c.grantErr(<-answer)
	}
	c.eng.Release(id)
	return ctx.Err()
}

// executeSim is execute for a simulated client: the same submission, completion and
// abandonment, with the wait in virtual time through the host, relaxed as a production call's
// during a maintenance window (waitRelaxedSim). Each command gets a command id for the
// simulated nodes' apply log.
func (c *Client) executeSim(ctx context.Context, cl *call) error {
	if cl.blocking {
		c.putCall(cl)
		return errSimUnsupported("blocking commands")
	}
	if _, wide := widePolicies[cl.cmd.Name]; wide && c.opts.UseCluster && cl.node == 0 {
		c.putCall(cl)
		return errSimUnsupported("commands sent to every Cluster node")
	}
	cl.cmd.Reset()
	cl.cmd.ID = c.sim.CommandID()
	if cl.node != 0 {
		c.eng.SubmitNode(&cl.cmd, cl.node)
	} else {
		c.eng.Submit(&cl.cmd)
	}
	switch c.waitRelaxedSim(ctx, func() bool { return len(cl.done) > 0 }, c.opts.CommandTimeout, relaxOf{lead: &cl.cmd}) {
	case simbind.Ready:
		<-cl.done
		return c.completion(cl)
	case simbind.Cancelled:
		return c.abandonSim(cl, ctx.Err())
	default:
		return c.abandonSim(cl, nil)
	}
}

// awaitGroupSim submits a batch's commands for a simulated client, each with a command id, and
// waits for the group through the host, as awaitGroup does with a select (relaxed in a
// maintenance window as awaitGroup is: waitRelaxedSim). When the wait is
// interrupted, nothing can complete a call until the task yields again, so the batch's settle
// never waits for a completion in flight.
func (c *Client) awaitGroupSim(ctx context.Context, g *callGroup, cmds []*engine.Command) (done bool, ctxErr error, timedOut bool) {
	for _, cmd := range cmds {
		cmd.ID = c.sim.CommandID()
	}
	return c.submitGroupSim(ctx, g, cmds)
}

// awaitPipeSim is awaitGroupSim for a pipeline sent as one command (batch_pipe.go): each of its n
// commands gets its own command id (engine.Multi.IDs, which the simulator attributes each
// command and reply by), the pipeline the first.
func (c *Client) awaitPipeSim(ctx context.Context, p *pipe, n int) (done bool, ctxErr error, timedOut bool) {
	ids := p.ids[:0]
	for range n {
		ids = append(ids, c.sim.CommandID())
	}
	p.ids, p.multi.IDs, p.cmd.ID = ids, ids, ids[0]
	return c.submitGroupSim(ctx, p.grp, p.one[:])
}

// submitGroupSim submits cmds, their ids set, and waits for the group g through the host.
func (c *Client) submitGroupSim(ctx context.Context, g *callGroup, cmds []*engine.Command) (done bool, ctxErr error, timedOut bool) {
	c.eng.SubmitGroup(cmds)
	switch c.waitRelaxedSim(ctx, func() bool { return len(g.done) > 0 }, c.opts.CommandTimeout, relaxOf{lead: cmds[0]}) {
	case simbind.Ready:
		<-g.done
		return true, nil, false
	case simbind.Cancelled:
		return false, ctx.Err(), false
	}
	return false, nil, true
}

// abandonSim is abandon for a simulated client: in the simulator nothing completes a command
// while its caller runs, so the reply can only have won the race if it is already there.
func (c *Client) abandonSim(cl *call, ctxErr error) error {
	if len(cl.done) > 0 {
		<-cl.done
		return c.completion(cl)
	}
	return c.abandon(cl, ctxErr)
}
