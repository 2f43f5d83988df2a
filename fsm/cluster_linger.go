package fsm

import "slices"

// Retired Cluster nodes whose grace ended while a dedicated connection of theirs was still
// rented: the node lingers (spec "Read from replicas": removing a replica drains accepted
// blocking reads; disposal aborts them).
//
//   - At the end of RetiredGrace the node's command slots are disposed, as for any retired node.
//     Its pool, already retired (no rent pending, idle connections closed, new rents refused),
//     is kept while it has rented connections: a blocking read on one finishes its work.
//   - The node stays tracked, so that its number is not handed out again and its connections'
//     events still reach its pool; it stays retired, so no command, rent or redirect reaches it,
//     and it is never published.
//   - When its last rented connection is returned (healthy or not, the retired pool closes it),
//     its pool is disposed and the node is forgotten.
//   - Disposing the Cluster machine (the client's Close) disposes lingering pools with the rest,
//     closing their rented connections at once: the reads on them abort.
//   - A lingering node counts against maxTrackedNodes while it lingers.

// rentedConns returns the number of rented connections of n's pool.
func (n *clusterNode) rentedConns() int {
	_, rented, _, _ := n.pool.Counts()
	return rented
}

// forget ends n's retirement grace with ev (Disposed): its command slots are disposed, and so is
// its pool unless it still has rented connections, in which case n lingers. The caller keeps a
// lingering node tracked and stops tracking any other.
func (c *Cluster) forget(n *clusterNode, ev *Event, out *Outbox) {
	if !n.retired || n.lingering {
		panic("fsm: Cluster node " + n.addr.String() + " forgotten while active or lingering")
	}
	c.forward(n, false, ev, out)
	c.dirty = true
	if n.rentedConns() > 0 {
		n.lingering = true
		return
	}
	c.forward(n, true, ev, out)
}

// stepLingering handles a connection event or a timer of lingering node n, and reports whether
// it did (false when n is not lingering). Its command slots are gone: what reaches them is
// treated as for a forgotten node. Its pool steps the event, and is disposed with the node
// forgotten once no connection of it is rented any more.
func (c *Cluster) stepLingering(n *clusterNode, pool bool, ev *Event, out *Outbox) bool {
	if !n.lingering {
		return false
	}
	if !pool {
		if ev.Kind == HandshakeDone || ev.Kind == DialSucceeded || ev.Kind == Returned {
			out.push(Close).Conn = ev.Conn
		}
		return true
	}
	c.forward(n, true, ev, out)
	if n.rentedConns() > 0 {
		return true
	}
	d := Event{Kind: Disposed, At: ev.At}
	c.forward(n, true, &d, out)
	if i := slices.Index(c.nodes, n); i >= 0 {
		c.nodes = slices.Delete(c.nodes, i, i+1)
	}
	return true
}
