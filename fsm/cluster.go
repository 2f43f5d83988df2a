package fsm

import (
	"errors"
	"slices"
	"strconv"
	"time"
)

// Bounds and timings of the Cluster machine. The spec fixes the refresh numbers; the others are
// respire's bounds.
const (
	// MaxClusterSeeds bounds ClusterConfig.Seeds.
	MaxClusterSeeds = 256
	// MaxClusterStrangers bounds the redirect targets a Cluster machine tracks before a topology
	// names them: a MOVED or ASK to an endpoint no member has beyond that fails with
	// ErrTooManyNodes.
	MaxClusterStrangers = 64
	// DefaultClusterRefreshInterval is the period of the periodic refresh when
	// ClusterConfig.RefreshInterval is zero and the timer is not disabled.
	DefaultClusterRefreshInterval = 60 * time.Second
	// ClusterRefreshJitter is the largest fraction of the interval that the periodic refresh
	// comes early: each period is the interval minus up to 10 %.
	ClusterRefreshJitter = 0.1
	// ClusterLossSpacing spaces refreshes triggered by the loss of a primary's connection: at
	// most one per second.
	ClusterLossSpacing = time.Second
	// ClusterMovedDebounce spaces refreshes triggered by MOVED redirects: a MOVED within 5 s of
	// the last refresh's start reuses it and waits for the debounce to end.
	ClusterMovedDebounce = 5 * time.Second
	// ClusterRetryFirst and ClusterRetryMax bound the backoff after a failed refresh: 5 s,
	// doubling after each further failure, at most 60 s, until a refresh succeeds.
	ClusterRetryFirst = 5 * time.Second
	// ClusterRetryMax is the longest wait after failed refreshes.
	ClusterRetryMax = 60 * time.Second
	// ClusterPassDeadline bounds one discovery round (a refresh pass), candidates and delays
	// included.
	ClusterPassDeadline = 60 * time.Second
	// DefaultClusterCandidateTimeout bounds one candidate of a round (its connection and its
	// topology query) when ClusterConfig.CandidateTimeout is zero.
	DefaultClusterCandidateTimeout = 20 * time.Second
	// DefaultClusterRetiredGrace is how long after leaving the topology a node's endpoint may
	// still be dialed to follow a redirect, when ClusterConfig.RetiredGrace is zero. After it no
	// connection goes there again, unless a topology names the endpoint anew.
	DefaultClusterRetiredGrace = 10 * time.Second
	// ClusterRedirects is the redirect budget of one command: MOVED, ASK, READONLY, TRYAGAIN
	// and CLUSTERDOWN retries, and re-routes after a node retired before it took the command,
	// together at most five.
	ClusterRedirects = 5
)

// Errors of the Cluster machine; match them with errors.Is.
var (
	// ErrSlotUncovered: no node the client knows serves the command's slot (the topology
	// leaves it uncovered, or its primary has no endpoint). A refresh is triggered.
	ErrSlotUncovered = errors.New("respire: no known Cluster node serves the slot")
	// ErrRetiredEndpoint: a redirect named an endpoint that left the topology more than its
	// grace ago; it is not dialed again until a topology names it.
	ErrRetiredEndpoint = errors.New("respire: the endpoint left the Cluster topology and is not dialed again")
	// ErrTooManyNodes: following a redirect would track more than MaxClusterStrangers endpoints
	// unknown to the topology.
	ErrTooManyNodes = errors.New("respire: too many Cluster redirect targets unknown to the topology")
	// ErrCandidateTimeout: a discovery candidate did not connect and answer its topology query
	// within the candidate timeout.
	ErrCandidateTimeout = errors.New("respire: the Cluster topology query timed out")
	// ErrPassDeadline: a discovery round reached its 60 s deadline.
	ErrPassDeadline = errors.New("respire: the Cluster discovery round reached its 60s deadline")
)

// ClusterConfig configures a Cluster. Validate checks it; NewCluster refuses an invalid one.
type ClusterConfig struct {
	// Seeds are the configured endpoints, 1 to MaxClusterSeeds, dialable, canonical (as
	// MakeEndpoint returns them) and without duplicates. A seed is never judged stale: it stays
	// the last candidate of every discovery round.
	Seeds []Endpoint
	// Slots is the number of command connections to each node, 1 to MaxSlots.
	Slots int
	// Policy is the reconnect policy of the nodes' machines and of discovery rounds, or nil.
	Policy *Policy
	// MaxWaiters bounds the pending demands of each node machine and the Cluster machine's own
	// waiters (zero: DefaultMaxWaiters; not negative).
	MaxWaiters int
	// Lifetime and LifetimeJitter recycle the nodes' connections (see MuxConfig).
	Lifetime, LifetimeJitter time.Duration
	// Pool bounds each node's dedicated pool; its Policy, IDBase, EpisodeBase, Lifetime and
	// LifetimeJitter are set by the Cluster machine.
	Pool PoolConfig
	// RefreshInterval is the period of the periodic refresh; zero disables the timer only (the
	// triggers of lost primaries, MOVED redirects and failed refreshes remain). Not negative.
	RefreshInterval time.Duration
	// CandidateTimeout bounds one candidate of a discovery round: its connection and its topology
	// query (zero: DefaultClusterCandidateTimeout; not negative).
	CandidateTimeout time.Duration
	// RetiredGrace is how long a departed node's endpoint may still be dialed to follow a
	// redirect (zero: DefaultClusterRetiredGrace; not negative).
	RetiredGrace time.Duration
	// EpisodeBase offsets the episode ids of discovery rounds and dedicated rents.
	EpisodeBase uint64
}

// Validate reports the first invalid field of c, or nil. NewCluster panics with this error.
func (c *ClusterConfig) Validate() error {
	bad := func(field, reason string) error {
		return &ConfigError{Config: "ClusterConfig", Field: field, Reason: reason}
	}
	switch {
	case len(c.Seeds) == 0:
		return bad("Seeds", "must name at least one endpoint")
	case len(c.Seeds) > MaxClusterSeeds:
		return bad("Seeds", "must name at most "+strconv.Itoa(MaxClusterSeeds)+" endpoints")
	case c.Slots < 1:
		return bad("Slots", "must be at least 1")
	case c.Slots > MaxSlots:
		return bad("Slots", "must be at most "+strconv.Itoa(MaxSlots))
	case c.MaxWaiters < 0:
		return bad("MaxWaiters", "must not be negative")
	case c.RefreshInterval < 0:
		return bad("RefreshInterval", "must not be negative")
	case c.CandidateTimeout < 0:
		return bad("CandidateTimeout", "must not be negative")
	case c.RetiredGrace < 0:
		return bad("RetiredGrace", "must not be negative")
	}
	for i, s := range c.Seeds {
		switch {
		case !s.Dialable():
			return bad("Seeds", "seed "+strconv.Itoa(i)+" has no host or no port")
		case s != MakeEndpoint(s.Host, s.Port):
			return bad("Seeds", "seed "+strconv.Itoa(i)+" is not in canonical form (use MakeEndpoint)")
		case slices.Contains(c.Seeds[:i], s):
			return bad("Seeds", "seed "+strconv.Itoa(i)+" repeats an earlier one")
		}
	}
	if err := validateLifetime("ClusterConfig", c.Lifetime, c.LifetimeJitter); err != nil {
		return err
	}
	pool := c.Pool
	pool.IDBase, pool.EpisodeBase, pool.Policy = 0, 0, nil
	if err := pool.Validate(); err != nil {
		var ce *ConfigError
		if errors.As(err, &ce) {
			return bad("Pool."+ce.Field, ce.Reason)
		}
		return err
	}
	return validatePolicy("ClusterConfig", c.Policy)
}

// nodeKind says why a Cluster machine tracks a node.
type nodeKind uint8

const (
	// nodeMember: a topology names it.
	nodeMember nodeKind = iota
	// nodeSeed: a configured seed that no topology names, tried by a discovery round.
	nodeSeed
	// nodeStranger: the target of a redirect that no topology names yet.
	nodeStranger
)

// clusterNode is one node a Cluster machine tracks, with its own command slots and pool.
type clusterNode struct {
	num  uint32
	id   NodeID
	addr Endpoint
	// aliases are the endpoints that name the node: its topology aliases, or addr alone.
	aliases []Endpoint
	role    Role
	kind    nodeKind
	mux     *Mux
	pool    *Pool
	// retired: the node receives no new work; its accepted commands drain. It is forgotten at
	// forgetAt.
	retired  bool
	forgetAt time.Duration
	// lingering: the grace ended while a connection of its pool was rented; its command slots
	// are disposed, and it is forgotten when no connection of its pool is rented any more
	// (cluster_linger.go).
	lingering bool
	// movingTo is the endpoint a MOVING notice announced for one of the node's connections,
	// until a handoff publishes a replacement (cluster_moving.go); zero otherwise.
	movingTo Endpoint
}

// waiterKind says what a Cluster waiter waits for.
type waiterKind uint8

const (
	// waitRoute: a demand for a node's command slots (Machine MachineNodeMux) or pool
	// (MachineNodePool), waiting for a topology to route it.
	waitRoute waiterKind = iota
	// waitTopology: a NeedTopology demand, waiting for a refresh pass.
	waitTopology
	// waitConnect: a NeedAll demand, waiting for a topology and then for every primary.
	waitConnect
)

// clusterWaiter is a demand the Cluster machine holds itself.
type clusterWaiter struct {
	ev   Event
	kind waiterKind
	// pending are the internal demands of a connect waiter still outstanding, by node.
	pending []internalDemand
	// started: a connect waiter's primaries were asked.
	started bool
}

// internalDemand is a demand the Cluster machine made of a node machine for itself.
type internalDemand struct {
	waiter WaiterID
	node   uint32
}

// routedWaiter records which node machine holds a caller's forwarded demand.
type routedWaiter struct {
	node uint32
	pool bool
}

// Purposes of the Cluster machine's own demands of node machines.
const (
	purposeWarm uint8 = iota + 1
	purposeRound
	purposeConnect
)

// Cluster is a Cluster client's topology machine: it holds the slot map and the nodes, and runs
// every node's command-slot machine (Mux) and dedicated pool (Pool) as its own sub-machines, so
// that one event loop and one journal drive the whole client. Its identifiers carry
// MachineCluster; its nodes' carry MachineNodeMux or MachineNodePool and the node's number
// (NodeIDBase), so events route to the right node without bookkeeping.
//
// Rules (spec "Cluster discovery fallback", "Periodic Cluster refresh", "Cluster topology
// refresh", and the incident of retired nodes):
//   - Discovery rounds (cluster_round.go): one policy budget per round across known primaries,
//     replicas and configured seeds; the first candidate is immediate; candidate depletion is
//     distinct from exhaustion; one round at a time, shared by every trigger and waiter.
//   - Refresh (cluster_refresh.go): every RefreshInterval minus up to 10 %, at most one per
//     second after a primary's connection is lost, MOVED debounced 5 s, 5 s to 60 s backoff
//     after a failed round, a 60 s deadline per round; a failed round keeps the last map.
//   - Nodes (cluster_nodes.go): a node absent from a conclusive topology is retired at once:
//     its machines stop taking work and dialing, its accepted commands drain, and it is
//     forgotten after RetiredGrace. Its endpoint is then never dialed again for a redirect,
//     unless a topology names it anew. Configured seeds are never judged stale, and are dialed
//     only as a round's candidates, at most once per round.
type Cluster struct {
	cfg ClusterConfig
	ids ids
	// episodes is the episode counter shared by rounds and the nodes' pools.
	episodes uint64
	rules    attemptRules

	topo  Topology
	known bool
	nodes []*clusterNode
	// lastNum is the last node number handed out.
	lastNum uint32
	version uint64
	dirty   bool

	retired []retiredEndpoint
	// sweep is the timer of the next retirement sweep, due at sweepAt.
	sweep   TimerID
	sweepAt time.Duration

	routed   map[WaiterID]routedWaiter
	internal map[WaiterID]uint8
	waiters  []*clusterWaiter
	cursor   int

	round round
	ref   refresher

	closed bool
}

// NewCluster returns a Cluster machine for cfg. It panics with cfg.Validate's *ConfigError when
// cfg is invalid.
func NewCluster(cfg ClusterConfig) *Cluster {
	if err := cfg.Validate(); err != nil {
		panic(err)
	}
	if cfg.MaxWaiters == 0 {
		cfg.MaxWaiters = DefaultMaxWaiters
	}
	if cfg.CandidateTimeout == 0 {
		cfg.CandidateTimeout = DefaultClusterCandidateTimeout
	}
	if cfg.RetiredGrace == 0 {
		cfg.RetiredGrace = DefaultClusterRetiredGrace
	}
	cfg.Seeds = slices.Clone(cfg.Seeds)
	c := &Cluster{
		cfg:      cfg,
		ids:      newIDs(IDBase(MachineCluster), cfg.EpisodeBase),
		routed:   make(map[WaiterID]routedWaiter),
		internal: make(map[WaiterID]uint8),
	}
	c.ids.shared = &c.episodes
	c.rules = attemptRules{policy: cfg.Policy, source: SourceClusterDiscovery, scope: ScopeClusterDiscovery,
		episodes: true, ids: &c.ids, candidates: true}
	c.ref.interval = cfg.RefreshInterval
	return c
}

// Topology returns the topology the machine holds.
func (c *Cluster) Topology() Topology { return c.topo }

// Known reports whether a topology was ever applied.
func (c *Cluster) Known() bool { return c.known }

// NodeCount returns the number of tracked nodes, retired ones not yet forgotten included.
func (c *Cluster) NodeCount() int { return len(c.nodes) }

// isInternal reports whether w is one of the Cluster machine's own waiter ids (they carry its
// machine bits; callers' waiter ids never do).
func isInternal(w WaiterID) bool { return MachineOf(uint64(w)) == MachineCluster }

// Step applies ev and appends the resulting effects to out.
func (c *Cluster) Step(ev *Event, out *Outbox) {
	switch ev.Kind {
	case Retired:
		c.shutdown(true, out)
		return
	case Disposed:
		c.shutdown(false, out)
		return
	}
	if c.closed {
		c.stepClosed(ev, out)
		return
	}
	switch ev.Kind {
	case DialSucceeded, HandshakeDone, DialFailed, ConnLost, Returned:
		c.stepConn(ev, out)
	case TimerFired:
		c.stepTimer(ev, out)
	case Demanded:
		c.demanded(ev, out)
	case Withdrew:
		c.withdrew(ev, out)
	case Noticed:
		if n := c.activeNode(ev.Node); n != nil {
			c.forward(n, false, ev, out)
		}
	case Replied, QueryFailed:
		c.round.answered(c, ev, out)
	case Moved:
		c.moved(ev, out)
	case SlotsMigrated:
		c.slotsMigrated(ev, out)
	case MovingNoticed:
		c.movingNoticed(ev, out) // cluster_moving.go
	}
	c.maybePublish(out)
}

// stepConn routes a connection event to the node machine whose identifier it carries.
func (c *Cluster) stepConn(ev *Event, out *Outbox) {
	m := MachineOf(uint64(ev.Conn))
	n := c.node(NodeOf(uint64(ev.Conn)))
	if n == nil || !isNodeMachine(m) {
		// A node forgotten since: close what it left behind.
		if ev.Kind == HandshakeDone || ev.Kind == DialSucceeded || ev.Kind == Returned {
			out.push(Close).Conn = ev.Conn
		}
		return
	}
	pool := m == MachineNodePool
	if c.stepLingering(n, pool, ev, out) {
		return
	}
	lost := ev.Kind == ConnLost && !pool && !n.retired && n.kind == nodeMember && n.role == RolePrimary &&
		n.mux.readyConn(ev.Conn)
	start := len(out.Effects)
	c.forward(n, pool, ev, out)
	if ev.Kind == HandshakeDone && !pool {
		c.movedPublished(n, start, ev, out) // cluster_moving.go
	}
	if lost {
		c.ref.trigger(c, triggerLoss, ev, out)
	}
}

// stepTimer routes a timer to its node machine or to the Cluster machine's own timers.
func (c *Cluster) stepTimer(ev *Event, out *Outbox) {
	if ev.Timer == 0 {
		return
	}
	if m := MachineOf(uint64(ev.Timer)); isNodeMachine(m) {
		if n := c.node(NodeOf(uint64(ev.Timer))); n != nil && !c.stepLingering(n, m == MachineNodePool, ev, out) {
			c.forward(n, m == MachineNodePool, ev, out)
		}
		return
	}
	switch {
	case ev.Timer == c.sweep:
		c.sweep = 0
		c.sweepRetired(ev.At, out)
	case c.round.owns(ev.Timer):
		c.round.timer(c, ev, out)
	default:
		c.ref.timer(c, ev, out)
	}
}

// demanded handles a caller's demand: a connection of the node serving a slot or an endpoint
// (MachineNodeMux, MachineNodePool), every primary (NeedAll) or a fresh topology
// (NeedTopology).
func (c *Cluster) demanded(ev *Event, out *Outbox) {
	switch {
	case ev.Machine == MachineCluster && ev.Need == NeedAll:
		c.hold(ev, waitConnect, out)
		if c.known {
			c.startConnect(c.waiters[len(c.waiters)-1], ev, out)
		} else {
			c.ref.trigger(c, triggerInitial, ev, out)
		}
	case ev.Machine == MachineCluster && ev.Need == NeedTopology:
		if c.known && !c.round.running && c.ref.backingOff() {
			// A failed refresh backs off; other refreshes wait for its retry, and so would this
			// demand: it fails at once with the last failure instead.
			c.complete(ev.Waiter, OutcomeFailed, c.ref.lastErr, out)
			return
		}
		if c.hold(ev, waitTopology, out) {
			t := triggerDemand
			if !c.known {
				t = triggerInitial
			}
			c.ref.trigger(c, t, ev, out)
		}
	case ev.Machine == MachineNodeMux || ev.Machine == MachineNodePool:
		c.route(ev, out)
	default:
		c.complete(ev.Waiter, OutcomeFailed, errUnroutable, out)
	}
}

var errUnroutable = errors.New("respire: a Cluster demand must name a node machine")

// route forwards a demand to the node it names (by endpoint, or by number), or to the node
// serving its slot, or holds it until a topology can route it.
func (c *Cluster) route(ev *Event, out *Outbox) {
	pool := ev.Machine == MachineNodePool
	var n *clusterNode
	switch {
	case !ev.Endpoint.IsZero():
		var err error
		if n, err = c.nodeAt(ev.Endpoint, ev.At, out); err != nil {
			c.complete(ev.Waiter, OutcomeFailed, err, out)
			return
		}
	case ev.Node != 0:
		// A command for one node (every primary's share of a command for all of them).
		if n = c.activeNode(ev.Node); n == nil {
			c.complete(ev.Waiter, OutcomeClosed, nil, out)
			return
		}
	case !c.known:
		if c.hold(ev, waitRoute, out) {
			c.ref.trigger(c, triggerInitial, ev, out)
		}
		return
	default:
		if n = c.serving(ev.Slot); n == nil {
			c.complete(ev.Waiter, OutcomeFailed, ErrSlotUncovered, out)
			c.ref.trigger(c, triggerMoved, ev, out)
			return
		}
	}
	c.routed[ev.Waiter] = routedWaiter{node: n.num, pool: pool}
	c.forward(n, pool, ev, out)
}

// serving returns the active node serving slot, or any primary for a keyless demand (slot < 0),
// rotating among them.
func (c *Cluster) serving(slot int) *clusterNode {
	if slot >= 0 {
		owner, ok := c.topo.Owner(uint16(slot))
		if !ok {
			return nil
		}
		return c.memberNode(owner.ID, owner.Addr)
	}
	var primaries []*clusterNode
	for _, n := range c.nodes {
		if !n.retired && n.kind == nodeMember && n.role == RolePrimary {
			primaries = append(primaries, n)
		}
	}
	if len(primaries) == 0 {
		return nil
	}
	c.cursor++
	return primaries[c.cursor%len(primaries)]
}

// hold keeps a demand until a topology or a refresh pass answers it, and reports whether it is
// held: beyond MaxWaiters it is answered with OutcomeOverflow instead.
func (c *Cluster) hold(ev *Event, kind waiterKind, out *Outbox) bool {
	if len(c.waiters) >= c.cfg.MaxWaiters {
		c.complete(ev.Waiter, OutcomeOverflow, nil, out)
		return false
	}
	w := &clusterWaiter{ev: *ev, kind: kind}
	w.ev.Topics = nil
	c.waiters = append(c.waiters, w)
	return true
}

// withdrew withdraws a caller's demand, wherever it waits.
func (c *Cluster) withdrew(ev *Event, out *Outbox) {
	if r, ok := c.routed[ev.Waiter]; ok {
		if n := c.node(r.node); n != nil {
			c.forward(n, r.pool, ev, out)
			return
		}
		delete(c.routed, ev.Waiter)
		return
	}
	for i, w := range c.waiters {
		if w.ev.Waiter != ev.Waiter {
			continue
		}
		c.waiters = slices.Delete(c.waiters, i, i+1)
		c.withdrawInternal(w.pending, ev, out)
		c.complete(ev.Waiter, OutcomeCancelled, nil, out)
		return
	}
}

// withdrawInternal withdraws internal demands that are no longer wanted.
func (c *Cluster) withdrawInternal(demands []internalDemand, ev *Event, out *Outbox) {
	for _, d := range demands {
		if _, ok := c.internal[d.waiter]; !ok {
			continue
		}
		delete(c.internal, d.waiter)
		if n := c.node(d.node); n != nil {
			w := Event{Kind: Withdrew, At: ev.At, Draw: ev.Draw, Waiter: d.waiter}
			c.forward(n, false, &w, out)
		}
	}
}

// startConnect asks every primary for all of its slots on behalf of a connect waiter.
func (c *Cluster) startConnect(w *clusterWaiter, ev *Event, out *Outbox) {
	w.started = true
	for _, n := range c.nodes {
		if n.retired || n.kind != nodeMember || n.role != RolePrimary {
			continue
		}
		d := internalDemand{waiter: WaiterID(c.ids.next()), node: n.num}
		w.pending = append(w.pending, d)
		c.internal[d.waiter] = purposeConnect
	}
	if len(w.pending) == 0 {
		c.release(w)
		c.complete(w.ev.Waiter, OutcomeFailed, ErrSlotUncovered, out)
		return
	}
	for _, d := range slices.Clone(w.pending) {
		if n := c.node(d.node); n != nil {
			dem := Event{Kind: Demanded, At: ev.At, Draw: ev.Draw, Waiter: d.waiter, Need: NeedAll}
			c.forward(n, false, &dem, out)
		}
	}
}

// connectAnswered records a node's answer to a connect waiter's internal demand.
func (c *Cluster) connectAnswered(f *Effect, out *Outbox) {
	for _, w := range c.waiters {
		if w.kind != waitConnect {
			continue
		}
		i := slices.IndexFunc(w.pending, func(d internalDemand) bool { return d.waiter == f.Waiter })
		if i < 0 {
			continue
		}
		w.pending = slices.Delete(w.pending, i, i+1)
		if f.Outcome != OutcomeGranted {
			c.release(w)
			c.withdrawInternal(w.pending, &Event{}, out)
			c.complete(w.ev.Waiter, f.Outcome, f.Err, out)
			return
		}
		if len(w.pending) == 0 {
			c.release(w)
			c.complete(w.ev.Waiter, OutcomeGranted, nil, out)
		}
		return
	}
}

// release forgets a held waiter.
func (c *Cluster) release(w *clusterWaiter) {
	if i := slices.Index(c.waiters, w); i >= 0 {
		c.waiters = slices.Delete(c.waiters, i, i+1)
	}
}

// complete answers a caller's waiter.
func (c *Cluster) complete(w WaiterID, o Outcome, err error, out *Outbox) {
	f := out.push(Complete)
	f.Waiter, f.Outcome, f.Err, f.Machine = w, o, err, MachineCluster
}

// forward steps one node machine with ev and adopts its effects: they are labelled with the
// node (Node, Endpoint, Machine), the completions of the Cluster machine's own demands are taken
// out and handled, and the completions of callers' demands end their routing.
func (c *Cluster) forward(n *clusterNode, pool bool, ev *Event, out *Outbox) {
	start := len(out.Effects)
	m := MachineNodeMux
	if pool {
		m = MachineNodePool
		n.pool.Step(ev, out)
	} else {
		n.mux.Step(ev, out)
	}
	var done []Effect
	kept := start
	for i := start; i < len(out.Effects); i++ {
		f := out.Effects[i]
		f.Node, f.Machine = n.num, m
		if !movingDial(&f) {
			f.Endpoint = n.addr
		}
		if f.Kind == Complete {
			if isInternal(f.Waiter) {
				done = append(done, f)
				continue
			}
			delete(c.routed, f.Waiter)
		}
		out.Effects[kept] = f
		kept++
	}
	out.Effects = out.Effects[:kept]
	for i := range done {
		c.internalAnswered(&done[i], ev, out)
	}
}

// internalAnswered handles a node machine's answer to one of the Cluster machine's own demands.
func (c *Cluster) internalAnswered(f *Effect, ev *Event, out *Outbox) {
	purpose, ok := c.internal[f.Waiter]
	if !ok {
		return
	}
	delete(c.internal, f.Waiter)
	switch purpose {
	case purposeRound:
		c.round.granted(c, f, ev, out)
	case purposeConnect:
		c.connectAnswered(f, out)
	}
}

// moved takes a MOVED redirect: the slot moves at once to the member the redirect names, and a
// debounced refresh confirms it.
func (c *Cluster) moved(ev *Event, out *Outbox) {
	if !c.known || ev.Slot < 0 || ev.Slot >= SlotCount {
		return
	}
	if !ev.Endpoint.IsZero() {
		if m, ok := c.topo.Lookup(ev.Endpoint); ok {
			if owner, has := c.topo.Owner(uint16(ev.Slot)); !has || owner.ID != m.ID {
				m.Role, m.Primary = RolePrimary, ""
				r := TopologyReply{Query: QueryMoved, Shards: []ReplyShard{{
					Ranges: []SlotRange{{First: uint16(ev.Slot), Last: uint16(ev.Slot)}}, Nodes: []Node{m}}}}
				if t, ch := c.topo.Apply(r); ch.Verdict != VerdictInconclusive {
					c.topo, c.dirty = t, true
					c.syncNodes(&ch, ev, out)
				}
			}
		}
	}
	c.ref.trigger(c, triggerMoved, ev, out)
}

// stepClosed answers what reaches a retired or disposed machine.
func (c *Cluster) stepClosed(ev *Event, out *Outbox) {
	switch ev.Kind {
	case Demanded:
		c.complete(ev.Waiter, OutcomeClosed, nil, out)
	case HandshakeDone, DialSucceeded, Returned:
		out.push(Close).Conn = ev.Conn
	}
}

// shutdown retires (drain) or disposes the machine: the round and every timer stop, every node
// retires or is disposed, and every waiter is answered.
func (c *Cluster) shutdown(drain bool, out *Outbox) {
	if c.closed && drain {
		return
	}
	if !c.closed {
		c.closed = true
		c.round.stop(c, out)
		c.ref.stop(out)
		if c.sweep != 0 {
			out.push(CancelTimer).Timer = c.sweep
			c.sweep = 0
		}
		for _, w := range c.waiters {
			c.complete(w.ev.Waiter, OutcomeClosed, nil, out)
		}
		c.waiters = nil
	}
	kind := Retired
	if !drain {
		kind = Disposed
	}
	ev := Event{Kind: kind}
	for _, n := range c.nodes {
		c.forward(n, false, &ev, out)
		c.forward(n, true, &ev, out)
		n.retired = true
	}
	c.internal = make(map[WaiterID]uint8)
	if !drain {
		c.nodes = nil
	}
	c.dirty = true
	c.maybePublish(out)
}
