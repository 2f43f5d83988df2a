package client

import (
	"context"

	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/netio/resp"
	"github.com/respire-go/respire/netio/topo"
)

// The role switch of blocking reads: under PrimaryPreferred or ReplicaPreferred, a blocking
// read that a server refused with LOADING, MASTERDOWN or CLUSTERDOWN (errors that prove it did
// not run) runs once more on a connection of the other role: a replica's refusal goes to the
// primary, the primary's to a replica. If no connection of the other role can be rented, the
// original refusal is the read's answer. A cancelled read never switches, and a switched read
// never switches again.

// switchesRoles reports whether a blocking read under policy may switch roles once.
func switchesRoles(policy fsm.ReadFrom) bool {
	return policy == fsm.ReadPrimaryPreferred || policy == fsm.ReadReplicaPreferred
}

// roleRefusal reports whether reply is a refusal that lets a blocking read switch roles.
func roleRefusal(v *resp.Value) bool {
	if !v.IsError() {
		return false
	}
	switch topo.ClassifyRejection(*v) {
	case topo.RejectionLoading, topo.RejectionMasterDown, topo.RejectionClusterDown:
		return true
	}
	return false
}

// armRoleSwitch lets the blocking read that d runs switch roles once: other rents a connection
// of the other role, and refused (may be nil) learns that d's server refused the read.
func (d *DedicatedConn) armRoleSwitch(other func(context.Context) (*DedicatedConn, error), refused func()) {
	d.roleSwitch = func(ctx context.Context, cl *call) (bool, error) {
		if ctx.Err() != nil || !roleRefusal(&cl.cmd.Reply) {
			return false, nil
		}
		d.roleSwitch = nil // once
		if refused != nil {
			refused()
		}
		d2, err := other(ctx)
		if err != nil {
			return false, nil // no fallback connection: the original refusal stands
		}
		return true, d.c.withRented(d2, func(d2 *DedicatedConn) error { return d2.exchangeBlocking(ctx, cl) })
	}
}

// armStandaloneRoleSwitch arms d, rented for a blocking read under policy by a standalone or
// Sentinel client: a replica's connection (d.eng set) switches to the primary, the primary's to
// a validated replica (when replicas are known).
func (c *Client) armStandaloneRoleSwitch(d *DedicatedConn, policy fsm.ReadFrom) {
	if !switchesRoles(policy) {
		return
	}
	if d.eng != nil {
		d.armRoleSwitch(c.Dedicated, nil)
		return
	}
	if c.replicas.cur.Load() == nil {
		return
	}
	d.armRoleSwitch(func(ctx context.Context) (*DedicatedConn, error) { return c.rentReplica(ctx, fsm.ReadReplica) }, nil)
}
