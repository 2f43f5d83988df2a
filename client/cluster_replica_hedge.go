package client

import (
	"context"

	"github.com/cockroachdb/errors"

	"github.com/respire-go/respire/engine"
)

// Hedged reads and read-routing snapshots of a Cluster client: each shard's router
// (engine.ClusterReads) watches its eligible reads, and engine.HedgedRead runs a watched one
// exactly as for a standalone client, its hedge going to another candidate of the same shard.
// See docs/replicas.md, "Cluster replicas".

// executeClusterHedged runs a read that the router of its shard watches for a hedge, selected
// as pick, and returns the pick whose attempt settled it. Its results mean what executePick's
// do: retry reports that every attempt failed to acquire a connection before anything was sent
// (the caller still owns cl and selects again); otherwise cl holds the settled reply on success
// and is recycled on error. cl itself is never sent: each attempt is a copy.
func (c *Client) executeClusterHedged(ctx context.Context, cl *call, pick engine.ReadPick, w *engine.ReadWatch) (engine.ReadPick, bool, error) {
	h := engine.NewClusterHedgedRead(pick, w, &cl.cmd)
	h.Start(pick.Candidate())
	if settled, ctxErr := c.awaitHedged(ctx, cl, h); !settled {
		return pick, false, c.leaveHedged(cl, h, ctxErr, siblingsOf(pick))
	}
	h.Release()
	x, target := h.Result()
	if x == nil { // the reads closed
		name := cl.cmd.Name
		c.putCall(cl)
		return pick, false, closedHedged(name, h, siblingsOf(pick))
	}
	settled := pick.Sibling(target)
	if x.Err == nil {
		cl.cmd.Reply, x.Reply = x.Reply, cl.cmd.Reply
		return settled, false, nil
	}
	ep := endpointOf(settled.Endpoint)
	if s := x.Sender(); s != (engine.Endpoint{}) {
		ep = endpointOf(s)
	}
	var ae *engine.AcquireError
	if !h.Sent() && errors.As(x.Err, &ae) && !c.closed.Load() {
		return settled, true, acquireFailure(ep, c.opts.ConnectTimeout, ae)
	}
	err := c.commandFailure(x)
	c.putCall(cl)
	return settled, false, err
}

// siblingsOf returns the endpoint of each candidate of pick's shard, by index.
func siblingsOf(pick engine.ReadPick) func(target int) Endpoint {
	return func(target int) Endpoint { return endpointOf(pick.Sibling(target).Endpoint) }
}

// clusterReadRoutingSnapshot is ReadRoutingSnapshot on a Cluster client.
func (c *Client) clusterReadRoutingSnapshot() *ReadRoutingSnapshot {
	b, ok := c.creads.LastBand()
	if !ok {
		return nil
	}
	return c.clusterSnapshot(&b)
}

// ClusterReadRoutingSnapshots returns, on a Cluster client, each shard's last completed read
// selection (a shard's router makes one with each read routed by a policy other than Primary),
// ordered by the shard primary's endpoint; nil on other clients and before any selection. Each
// snapshot has the form ReadRoutingSnapshot has, with its Slot and Shard. It does no I/O.
func (c *Client) ClusterReadRoutingSnapshots() []ReadRoutingSnapshot {
	if c.creads == nil {
		return nil
	}
	var out []ReadRoutingSnapshot
	for _, b := range c.creads.Bands() {
		out = append(out, *c.clusterSnapshot(&b))
	}
	return out
}

func (c *Client) clusterSnapshot(b *engine.ClusterBand) *ReadRoutingSnapshot {
	s := &ReadRoutingSnapshot{Policy: ReadFrom(b.Policy), Slot: b.Slot, Shard: endpointOf(b.Primary)}
	if origin, ok := c.creads.Origin(); ok {
		s.CapturedAt = origin.Add(b.At)
	}
	for _, ep := range b.Endpoints {
		s.EligibleEndpoints = append(s.EligibleEndpoints, endpointOf(ep))
	}
	return s
}
