package fsm

import (
	"slices"
	"time"
)

// The nodes a Cluster machine tracks, and their retirement: the rules that make the incident of
// retired Cluster nodes (spec/incident-retired-cluster-nodes.md) impossible by construction.
//
//   - A node is tracked for one of three reasons (nodeKind): a topology names it (a member), it
//     is a configured seed being tried by a discovery round, or it is the target of a redirect
//     that no topology names yet (a stranger). Each tracked node has its own command slots and
//     pool, numbered so that their identifiers route back to it.
//   - A conclusive topology that does not name a member retires it at once: its machines are
//     retired (scheduled attempts cancelled, nothing dialed again, accepted commands drained),
//     and the node is forgotten RetiredGrace later. A partial topology retires only a member
//     whose ID it gives another endpoint.
//   - The endpoints of retired nodes, and the retired endpoints of every topology change, are
//     remembered (at most MaxTopologyNodes, oldest forgotten first). After RetiredGrace, a
//     redirect to such an endpoint fails with ErrRetiredEndpoint instead of dialing it, and a
//     stranger at it is retired; a topology that names the endpoint again clears it.
//   - Configured seeds are never judged stale: a redirect may always reach them, and every
//     round may try them last. A seed that no topology names is retired when the round that
//     tried it ends (once a topology is known), so it holds no connection and is dialed at most
//     once per round, and rounds are spaced by the refresh rules (5 s to 60 s after failures).
//   - Nothing here reads a clock: retirement and grace are measured on the events' time, the
//     runtime's monotonic (or virtual) time.

// retiredEndpoint is an endpoint that left the topology at time at.
type retiredEndpoint struct {
	ep Endpoint
	at time.Duration
}

// maxTrackedNodes bounds the nodes a Cluster machine tracks at once, retired ones not yet
// forgotten included.
const maxTrackedNodes = 2*MaxTopologyNodes + MaxClusterSeeds + MaxClusterStrangers

// node returns the tracked node numbered num, retired or not, or nil.
func (c *Cluster) node(num uint32) *clusterNode {
	if num == 0 {
		return nil
	}
	i, ok := slices.BinarySearchFunc(c.nodes, num, func(n *clusterNode, num uint32) int {
		switch {
		case n.num < num:
			return -1
		case n.num > num:
			return 1
		}
		return 0
	})
	if !ok {
		return nil
	}
	return c.nodes[i]
}

// activeNode returns the tracked node numbered num unless it is retired.
func (c *Cluster) activeNode(num uint32) *clusterNode {
	if n := c.node(num); n != nil && !n.retired {
		return n
	}
	return nil
}

// memberNode returns the active member with the given ID at addr.
func (c *Cluster) memberNode(id NodeID, addr Endpoint) *clusterNode {
	for _, n := range c.nodes {
		if !n.retired && n.kind == nodeMember && n.id == id && n.addr == addr {
			return n
		}
	}
	return nil
}

// unclaimed returns an active seed or stranger at one of m's aliases: the node m turns out to
// be, whose connections it keeps.
func (c *Cluster) unclaimed(m *Node) *clusterNode {
	for _, n := range c.nodes {
		if !n.retired && n.kind != nodeMember && m.Matches(n.addr) {
			return n
		}
	}
	return nil
}

// isSeed reports whether ep is a configured seed.
func (c *Cluster) isSeed(ep Endpoint) bool { return slices.Contains(c.cfg.Seeds, ep) }

// nodeAt returns the node a redirect to ep reaches: the member ep names, an active seed or
// stranger at ep, or a new stranger. It refuses an endpoint retired more than RetiredGrace ago
// (ErrRetiredEndpoint) and a stranger beyond MaxClusterStrangers (ErrTooManyNodes).
func (c *Cluster) nodeAt(ep Endpoint, now time.Duration, out *Outbox) (*clusterNode, error) {
	if m, ok := c.topo.Lookup(ep); ok {
		if n := c.memberNode(m.ID, m.Addr); n != nil {
			return n, nil
		}
	}
	strangers := 0
	for _, n := range c.nodes {
		if n.retired {
			continue
		}
		if n.addr == ep || slices.Contains(n.aliases, ep) {
			return n, nil
		}
		if n.kind == nodeStranger {
			strangers++
		}
	}
	if !c.dialAllowed(ep, now) {
		return nil, ErrRetiredEndpoint
	}
	if strangers >= MaxClusterStrangers {
		return nil, ErrTooManyNodes
	}
	n := c.addNode(ep, nodeStranger)
	if n == nil {
		return nil, ErrTooManyNodes
	}
	return n, nil
}

// dialAllowed reports whether a new node at ep may be dialed at now: always for a seed,
// otherwise unless ep left the topology more than RetiredGrace ago.
func (c *Cluster) dialAllowed(ep Endpoint, now time.Duration) bool {
	if c.isSeed(ep) {
		return true
	}
	for _, r := range c.retired {
		if r.ep == ep && now >= r.at+c.cfg.RetiredGrace {
			return false
		}
	}
	return true
}

// nextNum returns a free node number: the next after the last one, wrapping after
// MaxNodeNumber and skipping numbers in use.
func (c *Cluster) nextNum() uint32 {
	for {
		c.lastNum++
		if c.lastNum > MaxNodeNumber {
			c.lastNum = 1
		}
		if c.node(c.lastNum) == nil {
			return c.lastNum
		}
	}
}

// addNode starts tracking a node at addr, with fresh command slots and a fresh pool, or returns
// nil when maxTrackedNodes are tracked already.
func (c *Cluster) addNode(addr Endpoint, kind nodeKind) *clusterNode {
	if len(c.nodes) >= maxTrackedNodes {
		return nil
	}
	num := c.nextNum()
	mux := NewMux(MuxConfig{Slots: c.cfg.Slots, Policy: c.cfg.Policy, MaxWaiters: c.cfg.MaxWaiters,
		IDBase: NodeIDBase(MachineNodeMux, num), Lifetime: c.cfg.Lifetime, LifetimeJitter: c.cfg.LifetimeJitter})
	pcfg := c.cfg.Pool
	pcfg.Policy, pcfg.IDBase, pcfg.EpisodeBase = c.cfg.Policy, NodeIDBase(MachineNodePool, num), c.cfg.EpisodeBase
	pcfg.Lifetime, pcfg.LifetimeJitter = c.cfg.Lifetime, c.cfg.LifetimeJitter
	if pcfg.MaxWaiters == 0 {
		pcfg.MaxWaiters = c.cfg.MaxWaiters
	}
	pool := NewPool(pcfg)
	pool.ids.shared = &c.episodes
	n := &clusterNode{num: num, addr: addr, aliases: []Endpoint{addr}, kind: kind, mux: mux, pool: pool}
	i, _ := slices.BinarySearchFunc(c.nodes, num, func(n *clusterNode, num uint32) int { return int(n.num) - int(num) })
	c.nodes = slices.Insert(c.nodes, i, n)
	c.dirty = true
	return n
}

// syncNodes brings the tracked nodes in line with the topology after ch: every member with a
// dialable endpoint is tracked (adopting a seed or stranger it turns out to be, so that its
// connections are kept), new primaries start connecting, and what the topology no longer names
// retires (see the top of this file).
func (c *Cluster) syncNodes(ch *TopologyChange, ev *Event, out *Outbox) {
	matched := make(map[uint32]bool, len(c.topo.nodes))
	for i := range c.topo.nodes {
		m := &c.topo.nodes[i]
		if !m.Addr.Dialable() {
			continue
		}
		n := c.memberNode(m.ID, m.Addr)
		if n == nil {
			n = c.unclaimed(m)
		}
		fresh := n == nil
		if fresh {
			if n = c.addNode(m.Addr, nodeMember); n == nil {
				continue
			}
		}
		wasPrimary := !fresh && n.kind == nodeMember && n.role == RolePrimary
		aliases := m.Aliases()
		if fresh || n.id != m.ID || n.kind != nodeMember || n.role != m.Role || !slices.Equal(n.aliases, aliases) {
			c.dirty = true
		}
		n.id, n.kind, n.role, n.aliases = m.ID, nodeMember, m.Role, aliases
		matched[n.num] = true
		if m.Role == RolePrimary && !wasPrimary {
			c.warm(n, ev, out)
		}
	}
	for _, n := range slices.Clone(c.nodes) {
		if n.retired || matched[n.num] {
			continue
		}
		switch {
		case ch.Verdict == VerdictConclusive:
			if n.kind == nodeSeed && c.round.running {
				continue // the round still tries it; it retires when the round ends
			}
			c.retire(n, ev, out)
		case n.kind == nodeMember:
			if m, ok := c.topo.Node(n.id); !ok || m.Addr != n.addr {
				c.retire(n, ev, out)
			}
		}
	}
	for _, ep := range ch.Retired {
		c.remember(ep, ev.At)
	}
	c.clearRejoined()
	c.armSweep(ev, out)
}

// warm starts connecting a new primary's command slots, so that the first command finds them
// ready. The answer is not waited for: a failure is visible through the node's own health.
func (c *Cluster) warm(n *clusterNode, ev *Event, out *Outbox) {
	w := WaiterID(c.ids.next())
	c.internal[w] = purposeWarm
	dem := Event{Kind: Demanded, At: ev.At, Draw: ev.Draw, Waiter: w, Need: NeedAny}
	c.forward(n, false, &dem, out)
}

// retire stops n taking new work: its machines are retired (attempts cancelled, accepted
// commands drained), its endpoint is remembered unless a member or a seed still uses it, and it
// is forgotten RetiredGrace later.
func (c *Cluster) retire(n *clusterNode, ev *Event, out *Outbox) {
	if n.retired {
		return
	}
	n.retired = true
	n.forgetAt = ev.At + c.cfg.RetiredGrace
	r := Event{Kind: Retired, At: ev.At, Draw: ev.Draw}
	c.forward(n, false, &r, out)
	c.forward(n, true, &r, out)
	if !c.isSeed(n.addr) {
		c.remember(n.addr, ev.At)
	}
	c.dirty = true
}

// retireSeeds retires the seeds that a round tried and that no topology names.
func (c *Cluster) retireSeeds(ev *Event, out *Outbox) {
	for _, n := range slices.Clone(c.nodes) {
		if !n.retired && n.kind == nodeSeed {
			c.retire(n, ev, out)
		}
	}
	c.armSweep(ev, out)
}

// remember records that ep left the topology at at, unless a member still answers to it. The
// earliest departure is kept; beyond MaxTopologyNodes entries the oldest is forgotten.
func (c *Cluster) remember(ep Endpoint, at time.Duration) {
	if _, ok := c.topo.Lookup(ep); ok {
		return
	}
	for _, r := range c.retired {
		if r.ep == ep {
			return
		}
	}
	if len(c.retired) >= MaxTopologyNodes {
		c.retired = slices.Delete(c.retired, 0, 1)
	}
	c.retired = append(c.retired, retiredEndpoint{ep: ep, at: at})
}

// clearRejoined forgets the departures of endpoints that name a member again.
func (c *Cluster) clearRejoined() {
	c.retired = slices.DeleteFunc(c.retired, func(r retiredEndpoint) bool {
		_, ok := c.topo.Lookup(r.ep)
		return ok
	})
}

// armSweep arms the sweep timer for the next moment something expires: a retired node to
// forget, or a remembered endpoint whose grace ends.
func (c *Cluster) armSweep(ev *Event, out *Outbox) {
	next, ok := time.Duration(0), false
	consider := func(at time.Duration) {
		if at > ev.At && (!ok || at < next) {
			next, ok = at, true
		}
	}
	for _, n := range c.nodes {
		if n.retired && !n.lingering {
			consider(n.forgetAt)
			if n.forgetAt <= ev.At {
				next, ok = ev.At, true
			}
		}
	}
	for _, r := range c.retired {
		consider(r.at + c.cfg.RetiredGrace)
	}
	if c.sweep != 0 && ok && c.sweepAt == next {
		return
	}
	if c.sweep != 0 {
		out.push(CancelTimer).Timer = c.sweep
		c.sweep = 0
	}
	if !ok {
		return
	}
	c.sweep, c.sweepAt = c.ids.timer(), next
	f := out.push(ArmTimer)
	f.Timer, f.After = c.sweep, next-ev.At
}

// sweepRetired forgets the retired nodes whose grace is over (disposing what they still hold,
// except a pool with rented connections: the node lingers until they are returned,
// cluster_linger.go) and retires the strangers at endpoints whose grace is over.
func (c *Cluster) sweepRetired(now time.Duration, out *Outbox) {
	ev := Event{Kind: Disposed, At: now}
	kept := c.nodes[:0]
	var gone []*clusterNode
	for _, n := range c.nodes {
		if n.retired && !n.lingering && n.forgetAt <= now {
			gone = append(gone, n)
			if n.rentedConns() == 0 {
				continue
			}
		}
		kept = append(kept, n)
	}
	c.nodes = kept
	for _, n := range gone {
		c.forget(n, &ev, out)
	}
	for _, n := range slices.Clone(c.nodes) {
		if !n.retired && n.kind == nodeStranger && !c.dialAllowed(n.addr, now) {
			c.retire(n, &Event{At: now}, out)
		}
	}
	c.armSweep(&Event{At: now}, out)
}

// maybePublish publishes the slot map when the topology or the tracked nodes changed.
func (c *Cluster) maybePublish(out *Outbox) {
	if !c.dirty {
		return
	}
	c.dirty = false
	c.version++
	m := &ClusterMap{Version: c.version, Topology: c.topo}
	for _, n := range c.nodes {
		if n.retired {
			continue
		}
		m.Nodes = append(m.Nodes, MapNode{Num: n.num, ID: n.id, Addr: n.addr, Aliases: n.aliases,
			Role: n.role, Member: n.kind == nodeMember})
	}
	if t := c.topo; t.owner != nil {
		index := make([]uint16, len(t.nodes))
		for i := range t.nodes {
			if n := c.memberNode(t.nodes[i].ID, t.nodes[i].Addr); n != nil {
				index[i] = uint16(m.Index(n.num) + 1)
			}
		}
		owner := new([SlotCount]uint16)
		for s, o := range t.owner {
			if o != 0 && index[o-1] != 0 {
				owner[s] = index[o-1]
				m.routed++
			}
		}
		if m.routed > 0 {
			m.owner = owner
		}
	}
	out.push(Publish).Map = m
}

// anyReady reports whether one of m's slots has a ready connection.
func (m *Mux) anyReady() bool { return m.pickReadyNoRotate() >= 0 }

func (m *Mux) pickReadyNoRotate() int {
	for i := range m.slots {
		if m.slots[i].a.phase == attemptReady {
			return i
		}
	}
	return -1
}

// readyConn reports whether c is the ready connection of one of m's slots.
func (m *Mux) readyConn(c ConnID) bool {
	i := m.slotOf(c)
	return i >= 0 && m.slots[i].a.phase == attemptReady
}
