package engine

import (
	"sync/atomic"
	"time"

	"github.com/cockroachdb/errors"

	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/netio/topo"
)

// ClusterConfig makes an engine a Redis Cluster client's (Config.Cluster). The engine then
// drives one fsm.Cluster machine, which runs the command slots and the dedicated pool of every
// node it tracks, beside the regular pub/sub episode; Config.Endpoint is not used.
type ClusterConfig struct {
	// Seeds are the configured endpoints (TCP: host and port), 1 to fsm.MaxClusterSeeds.
	Seeds []Endpoint
	// RefreshInterval is the period of the periodic topology refresh; zero disables the timer
	// only.
	RefreshInterval time.Duration
	// CandidateTimeout bounds one discovery candidate: its connection and its topology query
	// (zero: fsm.DefaultClusterCandidateTimeout).
	CandidateTimeout time.Duration
	// RetiredGrace is how long a departed node's endpoint may still be dialed to follow a
	// redirect (zero: fsm.DefaultClusterRetiredGrace).
	RetiredGrace time.Duration
}

// machineConfig returns the Cluster machine's configuration for c.
func (c Config) clusterMachineConfig() fsm.ClusterConfig {
	cc := c.Cluster
	seeds := make([]fsm.Endpoint, len(cc.Seeds))
	for i, s := range cc.Seeds {
		seeds[i] = fsm.MakeEndpoint(s.Host, s.Port)
	}
	pool := c.Pool
	if pool.MaxWaiters == 0 {
		pool.MaxWaiters = c.MaxWaiters
	}
	return fsm.ClusterConfig{Seeds: seeds, Slots: c.Slots, Policy: c.Policy, MaxWaiters: c.MaxWaiters,
		Lifetime: c.Lifetime, LifetimeJitter: c.LifetimeJitter, Pool: pool,
		RefreshInterval: cc.RefreshInterval, CandidateTimeout: cc.CandidateTimeout, RetiredGrace: cc.RetiredGrace,
		EpisodeBase: c.EpisodeBase}
}

// clusterState is the engine's side of a Cluster client: the loop's view of each node's
// routes, and the snapshot the hot path reads.
type clusterState struct {
	slots int
	// cmap is the last map the machine published (loop-owned).
	cmap *fsm.ClusterMap
	// nodes are the routes of each tracked node, by number (loop-owned).
	nodes map[uint32]*nodeRoutes
	snap  atomic.Pointer[clusterSnap]
	// timers numbers the redirect retries' timers.
	timers atomic.Uint64
	// shardConn is the sharded pub/sub connection dialed last and shardAddr its node
	// (loop-owned): when the map moves the shard channels' slot elsewhere, the connection is
	// dropped, and its recovery resubscribes on the new owner after a gap marker.
	shardConn fsm.ConnID
	shardAddr Endpoint
	// readOnly records, for each connection a route holds, whether READONLY was sent on it for
	// a replica read (cluster_replica.go). Rebuilt at each publish from the routes, so that it
	// holds only live connections (loop-owned; the flags are shared with the snapshots).
	readOnly map[fsm.ConnID]*atomic.Bool
}

// nodeRoutes is the loop's view of one node's command slots.
type nodeRoutes struct {
	routes []route
	// ids are the routes' connection ids (0: none).
	ids []fsm.ConnID
}

// clusterSnap is the immutable routing table of a Cluster client, published after each step
// that changed a route or the map. Callers read it without locks.
type clusterSnap struct {
	cmap *fsm.ClusterMap
	// nodes are the map's nodes, in its order, with their ready connections.
	nodes []nodeView
	// byAddr maps every alias of every node to its index in nodes, for redirects.
	byAddr    map[fsm.Endpoint]int
	primaries []int
	connected bool
	closed    bool
}

// nodeView is one node's routes in a snapshot.
type nodeView struct {
	num   uint32
	addr  fsm.Endpoint
	slots []slotView
	rr    atomic.Uint32
	// readOnly[i] says whether READONLY was sent on slots[i]'s connection (nil: no
	// connection).
	readOnly []*atomic.Bool
}

// ready reports whether the node has a ready connection.
func (v *nodeView) ready() bool {
	for i := range v.slots {
		if v.slots[i].conn != nil {
			return true
		}
	}
	return false
}

func newClusterState(slots int) *clusterState {
	cs := &clusterState{slots: slots, nodes: make(map[uint32]*nodeRoutes)}
	cs.snap.Store(&clusterSnap{})
	return cs
}

// route applies a node machine's Route effect.
func (cs *clusterState) route(e *Engine, f *fsm.Effect) {
	n := cs.nodes[f.Node]
	if n == nil {
		if f.State == fsm.SlotRetired {
			return // a forgotten node's last word
		}
		n = &nodeRoutes{routes: make([]route, cs.slots), ids: make([]fsm.ConnID, cs.slots)}
		cs.nodes[f.Node] = n
	}
	if f.Slot < 0 || f.Slot >= len(n.routes) {
		return
	}
	r := &n.routes[f.Slot]
	r.state = f.State
	r.conn = nil
	n.ids[f.Slot] = 0
	if f.Conn != 0 {
		r.conn = e.conns[f.Conn]
		n.ids[f.Slot] = f.Conn
	}
}

// published records a new map: nodes it no longer lists are forgotten.
func (cs *clusterState) published(m *fsm.ClusterMap) {
	cs.cmap = m
	for num := range cs.nodes {
		if m.Index(num) < 0 {
			delete(cs.nodes, num)
		}
	}
}

// health is the aggregate health of node num: connected when every slot is ready.
func (cs *clusterState) health(num uint32) fsm.EndpointState {
	n := cs.nodes[num]
	if n == nil {
		return fsm.EndpointDisconnected
	}
	for _, r := range n.routes {
		if r.state != fsm.SlotReady {
			return fsm.EndpointDisconnected
		}
	}
	return fsm.EndpointConnected
}

// publish builds and stores the snapshot.
func (cs *clusterState) publish(closed bool) {
	s := &clusterSnap{cmap: cs.cmap, closed: closed}
	ro := make(map[fsm.ConnID]*atomic.Bool, len(cs.readOnly))
	defer func() { cs.readOnly = ro }()
	if m := cs.cmap; m != nil && !closed {
		s.nodes = make([]nodeView, len(m.Nodes))
		s.byAddr = make(map[fsm.Endpoint]int, 2*len(m.Nodes))
		for i := range m.Nodes {
			mn := &m.Nodes[i]
			v := &s.nodes[i]
			v.num, v.addr = mn.Num, mn.Addr
			for _, a := range mn.Aliases {
				if _, taken := s.byAddr[a]; !taken || mn.Member {
					s.byAddr[a] = i
				}
			}
			if mn.Member && mn.Role == fsm.RolePrimary {
				s.primaries = append(s.primaries, i)
			}
			n := cs.nodes[mn.Num]
			if n == nil {
				continue
			}
			v.slots = make([]slotView, len(n.routes))
			v.readOnly = make([]*atomic.Bool, len(n.routes))
			for j, r := range n.routes {
				v.slots[j].conn = r.conn
				if r.conn != nil && n.ids[j] != 0 {
					v.readOnly[j] = cs.readOnlyFlag(n.ids[j], ro)
				}
				v.slots[j].offer = offerOf(r.conn)
				v.slots[j].awaitsUse = r.state.AwaitsUse() && r.state != fsm.SlotFresh
				if r.conn != nil {
					s.connected = true
				}
			}
		}
	}
	cs.snap.Store(s)
}

// pubsubEndpoint chooses where the regular pub/sub episode of a Cluster client connects: a
// primary with a ready command connection, else any primary, else the first seed. Any node
// serves regular pub/sub: Redis Cluster broadcasts PUBLISH to every node.
func (e *Engine) pubsubEndpoint() Endpoint {
	s := e.cl.snap.Load()
	for _, i := range s.primaries {
		if s.nodes[i].ready() {
			return endpointOf(s.nodes[i].addr)
		}
	}
	if len(s.primaries) > 0 {
		return endpointOf(s.nodes[s.primaries[0]].addr)
	}
	return e.cfg.Cluster.Seeds[0]
}

func endpointOf(ep fsm.Endpoint) Endpoint { return Endpoint{Host: ep.Host, Port: ep.Port} }

// ClusterMap returns the slot map the Cluster client routes by, or nil before the first
// topology (and for a standalone engine).
func (e *Engine) ClusterMap() *fsm.ClusterMap {
	if e.cl == nil {
		return nil
	}
	return e.cl.snap.Load().cmap
}

// dialEndpoint is where a Dial effect connects: the node's endpoint for a Cluster node's
// machine, the chosen node for a Cluster client's pub/sub, the configured endpoint otherwise.
func (e *Engine) dialEndpoint(f *fsm.Effect) Endpoint {
	switch {
	case !f.Endpoint.IsZero():
		return endpointOf(f.Endpoint)
	case e.cl != nil && f.Machine == fsm.MachineShardedPubSub:
		ep := e.shardedEndpoint()
		e.cl.shardConn, e.cl.shardAddr = f.Conn, ep
		return ep
	case e.cl != nil:
		return e.pubsubEndpoint()
	case e.sn != nil:
		return e.sentinelEndpoint()
	}
	return e.cfg.Endpoint
}

// shardedEndpoint is where a Cluster client's sharded pub/sub connects: the node serving the
// slot of its shard channels (a Cluster client's shard channels share one slot), else any
// primary.
func (e *Engine) shardedEndpoint() Endpoint {
	if ep, ok := e.shardOwner(); ok {
		return ep
	}
	return e.pubsubEndpoint()
}

// shardOwner returns the node serving the slot of the sharded episode's channels in the map
// the loop holds.
func (e *Engine) shardOwner() (Endpoint, bool) {
	topics := e.machines.eps[1].Topics()
	if len(topics) == 0 || e.cl.cmap == nil {
		return Endpoint{}, false
	}
	i := e.cl.cmap.Owner(int(topo.KeySlotString(topics[0].Name)))
	if i < 0 {
		return Endpoint{}, false
	}
	return endpointOf(e.cl.cmap.Nodes[i].Addr), true
}

// errShardMoved is why a sharded pub/sub connection is dropped when its slot moved.
var errShardMoved = errors.New("respire: the shard channels' slot moved to another Cluster node")

// followShards drops the sharded pub/sub connection when the map the loop just received serves
// its channels' slot from another node: the episode's recovery reconnects to the new owner and
// resubscribes, with a gap marker first.
func (e *Engine) followShards() {
	if e.cl.shardConn == 0 || e.conns[e.cl.shardConn] == nil {
		return
	}
	if ep, ok := e.shardOwner(); ok && ep != e.cl.shardAddr {
		e.Abort(e.cl.shardConn, errShardMoved)
		e.cl.shardConn = 0
	}
}

// effectEndpoint is the endpoint an Emit or Record effect is about.
func (e *Engine) effectEndpoint(f *fsm.Effect) Endpoint {
	if !f.Endpoint.IsZero() {
		return endpointOf(f.Endpoint)
	}
	if e.cl != nil {
		if p := e.pubsubEndpointFor(f); p != (Endpoint{}) {
			return p
		}
	}
	if e.sn != nil {
		return e.sentinelEndpoint()
	}
	return e.cfg.Endpoint
}

// pubsubEndpointFor returns the endpoint of a Cluster client's pub/sub connection an effect is
// about, or the zero Endpoint.
func (e *Engine) pubsubEndpointFor(f *fsm.Effect) Endpoint {
	if f.Machine == fsm.MachinePubSub || f.Machine == fsm.MachineShardedPubSub {
		return e.pubsubEndpoint()
	}
	return Endpoint{}
}

// aggregateOf is the aggregate health reported with observations of paths other than the
// command slots: the standalone slots', or a Cluster node's (disconnected for a node unknown
// or not named).
func (e *Engine) aggregateOf(node uint32) fsm.EndpointState {
	if e.cl == nil {
		return e.aggregate()
	}
	return e.cl.health(node)
}
