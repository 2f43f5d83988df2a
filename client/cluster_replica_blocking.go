package client

import (
	"context"

	"github.com/cockroachdb/errors"

	"github.com/respire-go/respire/engine"
	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/netio/topo"
)

// Blocking reads on Cluster replicas: a read-only blocking command (XREAD BLOCK) of one slot,
// under a policy other than Primary, rents a dedicated connection from the node that the
// router of the slot's shard selects (engine.ClusterReads): the shard's primary through the
// slot routing, or a replica's own dedicated pool (engine.RentNode). Before the command is
// sent, a replica's connection sends READONLY and must answer ROLE as a replica, in one round
// trip; one that does not is discarded, the replica cools down, and the read selects again:
// nothing was sent. A blocking read has no response timeout, and cancelling one on a replica
// discards its connection (CLIENT UNBLOCK would have to reach that replica).

// clusterReplicaRent returns how blocking read cl of a Cluster client rents its connection.
// It has the shape of rentFor's answer.
func (c *Client) clusterReplicaRent(cl *call) func(context.Context, func(*DedicatedConn) error) error {
	policy := c.policyOfCall(cl)
	return func(ctx context.Context, fn func(*DedicatedConn) error) error {
		slot, err := slotOfCall(cl)
		if err != nil {
			var cse *engine.CrossSlotError
			if errors.As(err, &cse) {
				return c.crossSlotError(&cl.cmd, cse)
			}
			return err
		}
		d, pick, err := c.rentClusterRead(ctx, slot, policy)
		if err != nil {
			return err
		}
		if switchesRoles(policy) { // replica_fallback.go
			if pick.Replica {
				d.armRoleSwitch(func(ctx context.Context) (*DedicatedConn, error) { return c.dedicatedSlot(ctx, slot) },
					func() { c.creads.Failed(pick) })
			} else {
				d.armRoleSwitch(func(ctx context.Context) (*DedicatedConn, error) {
					d2, _, err := c.rentClusterRead(ctx, slot, fsm.ReadReplica)
					return d2, err
				}, nil)
			}
		}
		err = c.withRented(d, fn)
		var se *ServerError
		if errors.As(err, &se) && se.Code == "MOVED" {
			// The command did not run: the map learns the move, and a replica that refused it
			// cools down (it must answer ROLE again before its next read).
			c.eng.NoteMoved(se.Message)
			if pick.Replica {
				c.creads.Failed(pick)
			}
		}
		return err
	}
}

// rentClusterRead rents a dedicated connection for a blocking read of slot from the node
// policy selects, selecting again (at most once per candidate of the shard, plus one) when a
// rent or a replica's check fails. A shard with no known replica serves the read from its
// primary, except under Replica (ErrNoReadServer). pick is the selection, zero for the
// primary's fallback.
func (c *Client) rentClusterRead(ctx context.Context, slot int, policy fsm.ReadFrom) (*DedicatedConn, engine.ReadPick, error) {
	var last error
	for range fsm.MaxReplicaCandidates + 1 {
		pick, err := c.creads.Select(ctx, slot, policy)
		switch {
		case errors.Is(err, engine.ErrNoClusterReplicas) && last == nil:
			if policy == fsm.ReadReplica {
				return nil, pick, &ConnectionError{Err: &noReadServer{reason: fsm.NoCandidate}}
			}
			d, err := c.dedicatedSlot(ctx, slot)
			return d, pick, err
		case err != nil:
			switch {
			case ctx.Err() != nil && errors.Is(err, ctx.Err()):
				return nil, pick, err
			case last != nil:
				return nil, pick, last // no fallback: the original failure
			}
			return nil, pick, &ConnectionError{Err: readRefused(err)}
		}
		var d *DedicatedConn
		if pick.Replica {
			if d, err = c.rentNode(ctx, pick); err == nil {
				if err = d.checkClusterReplica(ctx); err == nil {
					return d, pick, nil
				}
				d.discard()
			}
		} else if d, err = c.dedicatedSlot(ctx, slot); err == nil {
			return d, pick, nil
		}
		if ctx.Err() != nil {
			return nil, pick, ctx.Err()
		}
		if c.closed.Load() {
			return nil, pick, ErrClosed
		}
		c.creads.Failed(pick)
		last = err
	}
	return nil, engine.ReadPick{}, last
}

// rentNode rents a dedicated connection of the Cluster node of pick.
func (c *Client) rentNode(ctx context.Context, pick engine.ReadPick) (*DedicatedConn, error) {
	if c.closed.Load() {
		return nil, ErrClosed
	}
	ep := endpointOf(pick.Endpoint)
	answer := make(chan engine.Grant, 1)
	id := c.eng.RentNode(pick.Node, func(g engine.Grant) { answer <- g })
	g, err := awaitGrant(ctx, c.eng, id, answer)
	if err != nil {
		return nil, err
	}
	if err := c.granted(c.eng, g, ep); err != nil {
		return nil, err
	}
	// eng set: the connection is a replica's (its endpoint is ep, and a cancelled blocking
	// read discards it rather than sending CLIENT UNBLOCK).
	d := &DedicatedConn{c: c, id: g.ConnID, conn: g.Conn, eng: c.eng, ep: ep}
	d.Commands = Commands{x: d}
	return d, nil
}

// checkClusterReplica sends READONLY and ROLE on d in one round trip, and checks that the
// node accepted READONLY and is a replica. READONLY covers a connection opened while the node
// was a primary (a demoted primary's), whose handshake had none.
func (d *DedicatedConn) checkClusterReplica(ctx context.Context) error {
	if err := d.acquire(); err != nil {
		return err
	}
	defer d.release()
	ro, role := d.c.getCall(), d.c.getCall()
	ro.begin("READONLY", 1, anyReply)
	role.begin("ROLE", 1, anyReply)
	cls := [2]*call{ro, role}
	if err := d.roundTrip(ctx, d.budget(), cls[:]); err != nil {
		return err
	}
	defer d.recycle(cls[:])
	if ro.cmd.Reply.IsError() {
		return &ConnectionError{Endpoint: d.endpoint(), Err: errReplicaRole}
	}
	r, err := topo.ParseRole(role.cmd.Reply)
	switch {
	case err != nil:
		return &ConnectionError{Endpoint: d.endpoint(), Err: err}
	case r.Role != fsm.RoleReplica:
		return &ConnectionError{Endpoint: d.endpoint(), Err: errReplicaRole}
	}
	return nil
}
