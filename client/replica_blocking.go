package client

import (
	"context"

	"github.com/cockroachdb/errors"

	"github.com/respire-go/respire/engine"
	"github.com/respire-go/respire/fsm"
)

// Blocking reads on replicas (a Cluster client's: cluster_replica_blocking.go): a read-only
// blocking command (XREAD BLOCK, ...) under a policy other than Primary rents a dedicated connection from the server the router selects, as a
// non-blocking read is routed. A replica's connection must answer ROLE as a replica before the
// command is sent on it; one that does not (a promoted replica, a refused ROLE) is discarded,
// the replica cools down, and the read selects again: nothing was sent. Cancelling the read
// discards the connection (CLIENT UNBLOCK is not sent to replicas). A blocking read is never
// sent twice.

// errReplicaRole: a replica's dedicated connection did not answer ROLE as a replica.
var errReplicaRole = engine.ErrReplicaRole

// routesBlockingRead reports whether a blocking call rents its connection through the read
// router.
func (c *Client) routesBlockingRead(cl *call) bool {
	return (c.creads != nil || c.replicas != nil && !c.opts.UseCluster) && cl.readable && cl.blocking && cl.node == 0 &&
		c.policyOfCall(cl) != fsm.ReadPrimary
}

// replicaRent returns how blocking read cl rents its dedicated connection: from the server its
// policy selects. It has the shape of rentFor's answer.
func (c *Client) replicaRent(cl *call) func(context.Context, func(*DedicatedConn) error) error {
	if c.creads != nil {
		return c.clusterReplicaRent(cl) // cluster_replica_blocking.go
	}
	policy := c.policyOfCall(cl)
	return func(ctx context.Context, fn func(*DedicatedConn) error) error {
		d, err := c.rentReplica(ctx, policy)
		if err != nil {
			return err
		}
		c.armStandaloneRoleSwitch(d, policy) // replica_fallback.go
		if src := c.replicas.src; src != nil && d.eng != nil {
			// A Sentinel replica that leaves the set drains this read before its engine closes.
			defer src.lease(d.eng)()
		}
		return c.withRented(d, fn)
	}
}

// rentReplica rents a validated dedicated connection from the server policy selects, selecting
// again through the engine's read path (engine.ReadRoute: at most once per candidate) when a
// rent or a replica's ROLE check fails.
func (c *Client) rentReplica(ctx context.Context, policy fsm.ReadFrom) (*DedicatedConn, error) {
	rs := c.replicas
	g := rs.cur.Load()
	if g == nil {
		var err error
		if g, err = c.awaitReplicas(ctx, policy); err != nil {
			return nil, err
		}
		if g == nil { // no replica known: the primary serves it
			return c.Dedicated(ctx)
		}
	}
	rt := g.router.Route(policy, false)
	for {
		target, _, err := rt.Select(ctx)
		if err != nil {
			var rr *engine.ReadRefusal
			if errors.As(err, &rr) {
				return nil, &ConnectionError{Endpoint: c.readEndpoint(g, 0), Err: readRefused(err)}
			}
			return nil, err // ctx's, or the last selection's failure
		}
		if target == 0 {
			return c.Dedicated(ctx)
		}
		d, err := c.rentOn(ctx, rt.Engine(), c.readEndpoint(g, target))
		if err == nil {
			if err = d.checkReplicaRole(ctx); err == nil {
				return d, nil
			}
			d.discard()
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		rt.Unusable(err)
	}
}

// rentOn rents a dedicated connection from eng, the server at ep.
func (c *Client) rentOn(ctx context.Context, eng *engine.Engine, ep Endpoint) (*DedicatedConn, error) {
	if c.closed.Load() {
		return nil, ErrClosed
	}
	answer := make(chan engine.Grant, 1)
	id := eng.Rent(func(g engine.Grant) { answer <- g })
	g, err := awaitGrant(ctx, eng, id, answer)
	if err != nil {
		return nil, err
	}
	if err := c.granted(eng, g, ep); err != nil {
		return nil, err
	}
	d := &DedicatedConn{c: c, id: g.ConnID, conn: g.Conn, eng: eng, ep: ep}
	d.Commands = Commands{x: d}
	return d, nil
}

// checkReplicaRole sends ROLE on d and checks that the server is a replica.
func (d *DedicatedConn) checkReplicaRole(ctx context.Context) error {
	cl := d.c.getCall()
	cl.begin("ROLE", 1, anyReply)
	if err := d.exchange(ctx, cl); err != nil {
		return err
	}
	err := engine.CheckReplicaRole(cl.cmd.Reply) // the rule the simulator runs too
	d.c.putCall(cl)
	if err != nil {
		return &ConnectionError{Endpoint: d.endpoint(), Err: err}
	}
	return nil
}

// engine returns the engine d was rented from.
func (d *DedicatedConn) engine() *engine.Engine {
	if d.eng != nil {
		return d.eng
	}
	return d.c.eng
}

// endpoint returns the server d is connected to (the client's endpoint unless rented from a
// replica).
func (d *DedicatedConn) endpoint() Endpoint {
	if d.eng != nil {
		return d.ep
	}
	return d.c.ep
}
