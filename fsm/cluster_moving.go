package fsm

// MOVING handoff on a Cluster node (spec "Maintenance notifications"): a MOVING notice on one of
// a node's command connections hands that connection's slot off exactly as on a standalone
// client (maint_handoff.go): the node's own Mux runs the handoff, with no second machine. The
// node keeps its identity, its number and the slots it serves; only the slot's connection goes to
// the announced endpoint (to the node's address again, resolved anew, when the notice names
// none). The slot map still lists the node at its old address until a topology refresh
// corrects it: when a replacement is published at another endpoint, the Cluster machine asks
// for one, debounced as after a MOVED redirect. Until then, a connection of the node that fails
// later reconnects to the address in the map, and a MOVED redirect to the new address reaches the
// node that owns it there, as after any topology change the client has not seen yet.
//
// Dedicated (pool) connections and connections of a retired or unknown node ignore the notice.

// movingNoticed forwards a MOVING notice to the node machine that owns the connection, and asks
// for a topology refresh once the node's slot has switched to another endpoint.
func (c *Cluster) movingNoticed(ev *Event, out *Outbox) {
	if MachineOf(uint64(ev.Conn)) != MachineNodeMux {
		return
	}
	n := c.node(NodeOf(uint64(ev.Conn)))
	if n == nil || n.retired {
		return
	}
	c.forward(n, false, ev, out)
	if !ev.Endpoint.IsZero() && ev.Endpoint != n.addr {
		n.movingTo = ev.Endpoint
	}
}

// movingDial reports whether f is the Dial of a MOVING handoff to an announced endpoint: it keeps
// its Endpoint instead of the node's address.
func movingDial(f *Effect) bool { return f.Kind == Dial && !f.Endpoint.IsZero() }

// movedPublished asks for a debounced topology refresh when node n's MOVING handoff just
// published a replacement at another endpoint (a Close with Move among the node's effects from
// start on).
func (c *Cluster) movedPublished(n *clusterNode, start int, ev *Event, out *Outbox) {
	if n.movingTo.IsZero() {
		return
	}
	for i := start; i < len(out.Effects); i++ {
		if f := &out.Effects[i]; f.Kind == Close && f.Move {
			n.movingTo = Endpoint{}
			c.ref.trigger(c, triggerMoved, ev, out)
			return
		}
	}
}
