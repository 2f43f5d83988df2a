package client

import (
	"context"

	"github.com/cockroachdb/errors"

	"github.com/respire-go/respire/engine"
	"github.com/respire-go/respire/engine/config"
	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/netio/topo"
)

// Replica reads of a Cluster client: a read-only command of one slot, under a policy other than
// Primary, asks the router of the slot's shard (engine.ClusterReads) where to run, and runs on
// that replica (engine.SubmitRead) or on the shard's primary (by slot, as any command). See
// docs/replicas.md, "Cluster replicas".

// startClusterReads sets up the replica reads of a Cluster client (not in the simulator, whose
// callers do not route reads).
func (c *Client) startClusterReads() error {
	o := &c.opts
	if !o.UseCluster || c.sim != nil {
		return nil
	}
	ro := o.replicaOptions()
	cfg, err := config.ResolveReplicas(&ro)
	if err != nil {
		return sharedErr(err)
	}
	q := engine.DefaultSentinelQueryTimeout
	if o.CommandTimeout > 0 {
		q = o.CommandTimeout
	}
	rc := engine.ClusterReadConfig{Router: cfg, SettleWait: max(o.ConnectTimeout, 0) + q}
	if o.HedgedReads != nil {
		if rc.Meter, err = engine.NewHedgeMeter(o.MeterProvider); err != nil {
			return errors.Wrap(err, "respire: creating the hedge metrics")
		}
	}
	cr, err := engine.NewClusterReads(c.eng, rc)
	if err != nil {
		return errors.Wrap(err, "respire: configuring Cluster replica reads")
	}
	c.creads = cr
	return nil
}

// closeClusterReads stops the Cluster read routers.
func (c *Client) closeClusterReads() {
	if c.creads != nil {
		c.creads.Close()
	}
}

// routesClusterRead reports whether a Cluster call follows a read policy other than Primary.
func (c *Client) routesClusterRead(cl *call) bool {
	return c.creads != nil && cl.readable && !cl.blocking && cl.node == 0 && c.policyOfCall(cl) != fsm.ReadPrimary
}

// clusterReadRejections is how many times a read selects again after a replica refused it in a
// way that proves it did not run (MOVED: the replica no longer serves the slot; LOADING or
// MASTERDOWN under a preferred policy): once. A second refusal is the read's answer.
const clusterReadRejections = 1

// executeClusterRead runs a read of one slot where its policy sends it, and reports whether it
// did: a keyless or cross-slot read takes the ordinary path (false), and so does a read whose
// shard has no known replica, unless its policy is Replica (it then fails with ErrNoReadServer).
// A selection whose connection cannot be acquired (nothing was sent) cools that node down and
// selects again, at most once per candidate; a read that may have run is never sent again.
func (c *Client) executeClusterRead(ctx context.Context, cl *call) (bool, error) {
	slot, err := engine.FrameSlot(cl.cmd.Frame)
	if err != nil || slot == engine.Keyless {
		return false, nil
	}
	policy := c.policyOfCall(cl)
	var acquireErr error
	rejections := 0
	hedge := c.opts.HedgedReads != nil && cl.hedgeable
	for range fsm.MaxReplicaCandidates + 1 + clusterReadRejections {
		pick, w, err := c.creads.SelectWatched(ctx, slot, policy, hedge)
		switch {
		case errors.Is(err, engine.ErrNoClusterReplicas) && acquireErr == nil:
			if policy != fsm.ReadReplica {
				return false, nil // the primary, as for the Primary policy
			}
			c.putCall(cl)
			return true, &ConnectionError{Err: &noReadServer{reason: fsm.NoCandidate}}
		case err != nil:
			c.putCall(cl)
			switch {
			case ctx.Err() != nil && errors.Is(err, ctx.Err()):
				return true, err
			case acquireErr != nil:
				return true, acquireErr // no fallback: the original failure
			}
			return true, &ConnectionError{Err: readRefused(err)}
		}
		var retry bool
		if w != nil {
			pick, retry, err = c.executeClusterHedged(ctx, cl, pick, w) // cluster_replica_hedge.go
		} else {
			retry, err = c.executePick(ctx, cl, pick)
		}
		if retry {
			acquireErr = err
			c.creads.Failed(pick)
			continue
		}
		if err != nil {
			if connectionFailed(err) {
				c.creads.Failed(pick)
			}
			return true, err
		}
		if pick.Replica && rejections < clusterReadRejections && c.replicaRefused(&cl.cmd, policy) {
			// Nothing ran: the replica cools down (and must answer ROLE again), and the read
			// selects once more. The map already learnt a MOVED (SubmitRead).
			rejections++
			c.creads.Failed(pick)
			continue
		}
		return true, nil
	}
	c.putCall(cl)
	return true, acquireErr
}

// replicaRefused reports whether a replica's reply proves that the read did not run and that
// another selection may serve it: MOVED, or LOADING and MASTERDOWN under a policy that may
// fall back.
func (c *Client) replicaRefused(cmd *engine.Command, policy fsm.ReadFrom) bool {
	if !cmd.Reply.IsError() {
		return false
	}
	switch topo.ClassifyRejection(cmd.Reply) {
	case topo.RejectionMoved:
		return true
	case topo.RejectionLoading, topo.RejectionMasterDown:
		return policy != fsm.ReadReplica
	}
	return false
}

// executePick submits the call to the node of pick and waits as execute does. retry reports a
// definite failure to acquire a connection, before anything was sent, and err is that failure:
// the caller still owns the call and may select again. Otherwise the call is the caller's on
// success and recycled on error, as with execute.
func (c *Client) executePick(ctx context.Context, cl *call, pick engine.ReadPick) (retry bool, err error) {
	ep := endpointOf(pick.Endpoint)
	cl.cmd.Reset()
	if pick.Replica {
		c.eng.SubmitRead(&cl.cmd, pick.Node)
	} else {
		c.eng.Submit(&cl.cmd)
	}
	if answered, ctxErr := c.awaitReply(ctx, cl); !answered { // maint.go: relaxed in a maintenance window
		return false, c.abandonPick(cl, ep, ctxErr)
	}
	cmd := &cl.cmd
	if cmd.Err == nil {
		return false, nil
	}
	if s := cmd.Sender(); s != (engine.Endpoint{}) {
		ep = endpointOf(s)
	}
	var ae *engine.AcquireError
	if !cmd.MaybeSent() && errors.As(cmd.Err, &ae) && !c.closed.Load() {
		return true, acquireFailure(ep, c.opts.ConnectTimeout, ae)
	}
	err = c.commandFailure(cmd)
	c.putCall(cl)
	return false, err
}

// abandonPick is Client.abandon for a read sent to the node at ep: the caller stops waiting
// (ctxErr set) or the command timeout passed (ctxErr nil).
func (c *Client) abandonPick(cl *call, ep Endpoint, ctxErr error) error {
	cmd := &cl.cmd
	a := c.eng.Abandon(cmd)
	if cl.timer != nil {
		cl.timer.Stop()
	}
	if a.Wait {
		<-cl.done // the reply won the race
		return c.completion(cl)
	}
	return c.abandonedErr(cl, a, ep, ctxErr)
}

// connectionFailed reports whether a read's error says its node's connection failed (not a
// timeout or a cancellation, which say nothing about the node's health).
func connectionFailed(err error) bool {
	var ce *ConnectionError
	var ue *UnknownOutcomeError
	return errors.As(err, &ce) || errors.As(err, &ue) && !errors.Is(err, context.Canceled) &&
		!errors.Is(err, context.DeadlineExceeded)
}
