package sim

import (
	"github.com/respire-go/respire/engine"
	"github.com/respire-go/respire/sim/node"
	"github.com/respire-go/respire/sim/record"
	"github.com/respire-go/respire/sim/scenario"
)

// The simulated Redis Cluster in the world: built from the topology's cluster section (shards,
// shard endpoints, DNS names) over the run's nodes, changed by the "cluster" faults, and
// consulted when a connect resolves its host.

// buildCluster makes the world's nodes a Cluster when the topology is one.
func (w *world) buildCluster() {
	spec := w.sc.Topology.Cluster
	if !w.sc.IsCluster() || spec == nil {
		return
	}
	cl := node.NewCluster(scenario.NodePort)
	w.cluster = cl
	for _, s := range w.nodes {
		cl.Join(s.Node)
	}
	slots := spec.ShardSlots()
	for i, sh := range spec.Shards {
		var replicas []*node.Node
		for _, r := range sh.Replicas {
			replicas = append(replicas, w.nodeByID(r).Node)
		}
		cl.AddShard(w.nodeByID(sh.Primary).Node, replicas, sh.Endpoint, slots[i])
	}
	for _, d := range spec.DNS {
		var nodes []*node.Node
		for _, id := range d.Nodes {
			nodes = append(nodes, w.nodeByID(id).Node)
		}
		cl.AddDNS(d.Name, nodes)
	}
}

// nodeByID returns the server named id, or nil.
func (w *world) nodeByID(id string) *server {
	for _, s := range w.nodes {
		if s.ID() == id {
			return s
		}
	}
	return nil
}

// serverOf returns the server of node n.
func (w *world) serverOf(n *node.Node) *server {
	for _, s := range w.nodes {
		if s.Node == n {
			return s
		}
	}
	return nil
}

// clusterStart applies a cluster fault's action.
func (fs *faultState) clusterStart() {
	w := fs.w
	a := fs.f.Cluster
	cl := w.cluster
	switch {
	case a.Migrate != nil:
		slots, _ := scenario.ParseSlots(a.Migrate.Slots)
		cl.Migrate(slots, w.nodeByID(a.Migrate.To).Node, a.Migrate.Ask != nil)
	case a.Promote != nil:
		cl.Promote(w.nodeByID(a.Promote.Node).Node, a.Promote.Old == scenario.OldReadOnly)
	case a.Replace != nil:
		old := w.nodeByID(a.Replace.Node)
		if cl.Replace(old.Node, w.nodeByID(a.Replace.By).Node) {
			w.departed = append(w.departed, old)
		}
	case a.Restart != nil:
		for _, n := range cl.Nodes() {
			n.Kill()
		}
		if a.Restart.EmptySlots != nil {
			w.k.after(a.Restart.For.Value(), clusterRestarted{fs}, 0)
		}
	case a.Down != nil:
		cl.SetDown(true)
	}
	if a.Span() == 0 {
		fs.finish()
	}
}

// clusterStop ends a cluster fault's window.
func (fs *faultState) clusterStop() {
	a := fs.f.Cluster
	cl := fs.w.cluster
	switch {
	case a.Migrate != nil:
		slots, _ := scenario.ParseSlots(a.Migrate.Slots)
		cl.FinishMigration(slots)
	case a.Restart != nil && a.Restart.EmptySlots == nil:
		for _, n := range cl.Nodes() {
			n.Restart()
		}
	case a.Restart != nil:
		cl.SetEmpty(false)
	case a.Down != nil:
		cl.SetDown(false)
	}
}

// clusterRestarted restarts a restart fault's nodes into their empty-slots window.
type clusterRestarted struct{ fs *faultState }

func (r clusterRestarted) Run(uint64) bool {
	cl := r.fs.w.cluster
	cl.SetEmpty(true)
	for _, n := range cl.Nodes() {
		n.Restart()
	}
	r.fs.w.tr.End(r.fs.w.tr.Begin("fault").Word("cluster-restarted").Uint("fault", uint64(r.fs.idx)))
	return true
}

// recordDial records a dial of the client (Result.Dials), and implements the dial-departed
// plant: after a replacement, each dial comes with one to the replaced node's address.
func (w *world) recordDial(c *simConn) {
	w.res.Dials = append(w.res.Dials, record.Dial{Conn: c.id, Endpoint: c.ep.String(), Machine: c.machine, At: w.k.now})
	if !w.sc.Planted(scenario.PlantDialDeparted) {
		return
	}
	for _, s := range w.departed {
		ep := engine.Endpoint{Host: s.ID(), Port: scenario.NodePort}.String()
		w.tr.Plant("dial-departed", uint64(c.id))
		w.res.Dials = append(w.res.Dials, record.Dial{Endpoint: ep, Machine: c.machine, At: w.k.now})
	}
}
