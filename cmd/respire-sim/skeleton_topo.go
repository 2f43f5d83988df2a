package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/respire-go/respire/engine"
	"github.com/respire-go/respire/fsm"
)

// The skeletons of Cluster and Sentinel captures. Each endpoint the capture names becomes a
// simulated node under a generated id (the mapping is written as comments), and the observed
// outages of each node become its faults, as for a standalone capture: refused dials after
// losses a kill and restart, refused dials alone a refusal window, losses alone a drop. A
// Sentinel capture's primary changes become failovers.

// nodeOutages tracks the outages of a capture per simulated node.
type nodeOutages struct {
	// ids maps a captured endpoint to its node id, and order lists the endpoints in order.
	ids   map[fsm.Endpoint]string
	order []fsm.Endpoint
	// first is when each node was first dialed (or named).
	first map[string]time.Duration
	// open is each node's current outage; all lists them all, with their node.
	open map[string]*outage
	all  []nodeOutage
}

// nodeOutage is one outage of one node.
type nodeOutage struct {
	node string
	o    *outage
}

func newNodeOutages() *nodeOutages {
	return &nodeOutages{ids: map[fsm.Endpoint]string{}, first: map[string]time.Duration{}, open: map[string]*outage{}}
}

// node returns the id of ep, naming it prefix<n> the first time, at time at.
func (n *nodeOutages) node(ep fsm.Endpoint, prefix string, at time.Duration) string {
	if id, ok := n.ids[ep]; ok {
		return id
	}
	count := 0
	for _, e := range n.order {
		if strings.HasPrefix(n.ids[e], prefix) {
			count++
		}
	}
	id := fmt.Sprintf("%s%d", prefix, count+1)
	n.ids[ep] = id
	n.order = append(n.order, ep)
	n.first[id] = at
	return id
}

// failed records a lost connection (refused false) or a failed dial (refused true) of node at at.
func (n *nodeOutages) failed(node string, at time.Duration, refused bool) {
	o := n.open[node]
	if o == nil {
		o = &outage{from: at, open: true}
		n.open[node] = o
		n.all = append(n.all, nodeOutage{node: node, o: o})
	}
	if refused {
		o.refused++
	} else {
		o.lostOther++
	}
}

// ready ends node's outage at at.
func (n *nodeOutages) ready(node string, at time.Duration) {
	if o := n.open[node]; o != nil {
		o.to, o.open = at, false
		delete(n.open, node)
	}
}

// forget drops node's current outage: something else explains it (a failover).
func (n *nodeOutages) forget(node string) {
	o := n.open[node]
	if o == nil {
		return
	}
	delete(n.open, node)
	for i, no := range n.all {
		if no.o == o {
			n.all = append(n.all[:i], n.all[i+1:]...)
			break
		}
	}
}

// faults returns the fault lines of every outage, open ones ending at end.
func (n *nodeOutages) faults(end time.Duration) string {
	var b strings.Builder
	for _, no := range n.all {
		o := no.o
		if o.open {
			o.to = end + time.Second
		}
		at := skeletonTime(skeletonLead + o.from)
		length := skeletonTime(max(o.to-o.from, time.Millisecond))
		switch {
		case o.refused > 0 && o.lostOther > 0:
			fmt.Fprintf(&b, "  - {at: %s, kill: {node: %s, restart_after: %s}}   # %d connections lost, %d dials failed\n",
				at, no.node, length, o.lostOther, o.refused)
		case o.refused > 0:
			fmt.Fprintf(&b, "  - {at: %s, refuse: {node: %s, for: %s}}   # %d dials failed\n", at, no.node, length, o.refused)
		default:
			fmt.Fprintf(&b, "  - {at: %s, drop: {node: %s}}   # %d connections lost\n", at, no.node, o.lostOther)
		}
	}
	return b.String()
}

// mapping returns the comment lines that map node ids to the captured endpoints.
func (n *nodeOutages) mapping() string {
	var b strings.Builder
	b.WriteString("# captured endpoints:\n")
	for _, ep := range n.order {
		id := n.ids[ep]
		fmt.Fprintf(&b, "#   %s = %s (first named at %s)\n", id, ep, skeletonTime(skeletonLead+n.first[id]))
	}
	return b.String()
}

// dataMachine reports whether conn belongs to a machine whose connections carry the
// application's commands (command slots and dedicated connections, standalone or per Cluster
// node).
func dataMachine(conn fsm.ConnID) bool {
	switch fsm.MachineOf(uint64(conn)) {
	case fsm.MachineMux, fsm.MachinePool, fsm.MachinePubSub, fsm.MachineShardedPubSub:
		return true
	case fsm.MachineCluster, fsm.MachineSentinel, fsm.MachineSentinelMonitor, fsm.MachineFence:
		return false
	}
	return true // a Cluster node's machines
}

// skeletonCluster returns the scenario YAML of a Cluster client's capture f: every endpoint
// the capture names (the seeds, each node dialed) becomes the primary of a shard of its own.
func skeletonCluster(f *engine.CaptureFile, name string) (string, error) {
	cfg := f.Header.Config
	nodes := newNodeOutages()
	for _, s := range cfg.Cluster.Seeds {
		nodes.node(fsm.MakeEndpoint(s.Host, s.Port), "n", 0)
	}
	conns := map[fsm.ConnID]string{}
	var observed []string
	origin := f.Steps[0].Event.At
	end := f.Steps[len(f.Steps)-1].Event.At - origin
	d, err := f.Replay(func(i int, ev *fsm.Event, effects []fsm.Effect) {
		at := ev.At - origin
		for j := range effects {
			if e := &effects[j]; e.Kind == fsm.Dial && e.Endpoint.Port != 0 && dataMachine(e.Conn) {
				conns[e.Conn] = nodes.node(e.Endpoint, "n", at)
			}
		}
		node, ok := conns[ev.Conn]
		if !ok {
			return
		}
		switch ev.Kind {
		case fsm.ConnLost, fsm.DialFailed:
			if len(observed) < maxObserved {
				observed = append(observed, fmt.Sprintf("%s %s: %s", skeletonTime(skeletonLead+at), node, f.Steps[i].Text))
			}
			nodes.failed(node, at, ev.Kind == fsm.DialFailed)
		case fsm.HandshakeDone:
			nodes.ready(node, at)
		}
	})
	if err := replayed(d, err); err != nil {
		return "", err
	}
	var b strings.Builder
	skeletonHead(&b, f, name, end)
	b.WriteString("topology:\n  kind: cluster\n  nodes: [")
	for i, ep := range nodes.order {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "{id: %s}", nodes.ids[ep])
	}
	b.WriteString("]\n  cluster:\n    shards:   # one shard per captured node: set the primaries, replicas and slots you know\n")
	for _, ep := range nodes.order {
		fmt.Fprintf(&b, "      - {primary: %s}\n", nodes.ids[ep])
	}
	b.WriteString(nodes.mapping())
	for _, ep := range nodes.order {
		if id := nodes.ids[ep]; nodes.first[id] > 0 {
			fmt.Fprintf(&b, "# %s was first dialed at %s: a topology change (a failover, a replacement) the\n#   capture shows; write it as a cluster fault (promote, replace) if it matters\n",
				id, skeletonTime(skeletonLead+nodes.first[id]))
		}
	}
	skeletonClient(&b, &cfg)
	skeletonTail(&b, observed, nodes.faults(end))
	return b.String(), nil
}

// skeletonSentinel returns the scenario YAML of a Sentinel client's capture f: the configured
// Sentinels, and a data node for each primary the client validated, the first one primary and
// the others its replicas, each change of primary a failover.
func skeletonSentinel(f *engine.CaptureFile, name string) (string, error) {
	cfg := f.Header.Config
	nodes := newNodeOutages()
	var sentinels []string
	for _, s := range cfg.Sentinel.Sentinels {
		sentinels = append(sentinels, nodes.node(fsm.MakeEndpoint(s.Host, s.Port), "s", 0))
	}
	var data []string
	var observed, failovers []string
	primary := ""
	// lastTrouble is when the current primary's connections last failed (a failover usually
	// shows there first), or -1.
	lastTrouble := time.Duration(-1)
	origin := f.Steps[0].Event.At
	end := f.Steps[len(f.Steps)-1].Event.At - origin
	d, err := f.Replay(func(i int, ev *fsm.Event, effects []fsm.Effect) {
		at := ev.At - origin
		if ev.Kind == fsm.Published && ev.Sentinel != nil && ev.Machine != fsm.MachineSentinelMonitor {
			id := nodes.node(ev.Sentinel.Primary, "r", at)
			if len(data) == 0 || !contains(data, id) {
				data = append(data, id)
			}
			if primary != "" && id != primary {
				when := at
				if lastTrouble >= 0 {
					when = lastTrouble
				}
				failovers = append(failovers, fmt.Sprintf("  - {at: %s, sentinel: {failover: {promote: %s}}}   # the client validated %s at %s\n",
					skeletonTime(skeletonLead+when), id, id, skeletonTime(skeletonLead+at)))
				nodes.forget(primary) // the failover explains the old primary's trouble
			}
			primary, lastTrouble = id, -1
			return
		}
		if primary == "" || !dataMachine(ev.Conn) {
			return
		}
		switch ev.Kind {
		case fsm.ConnLost, fsm.DialFailed:
			if len(observed) < maxObserved {
				observed = append(observed, fmt.Sprintf("%s %s", skeletonTime(skeletonLead+at), f.Steps[i].Text))
			}
			if lastTrouble < 0 {
				lastTrouble = at
			}
			nodes.failed(primary, at, ev.Kind == fsm.DialFailed)
		case fsm.HandshakeDone:
			nodes.ready(primary, at)
			lastTrouble = -1
		}
	})
	if err := replayed(d, err); err != nil {
		return "", err
	}
	if len(data) == 0 {
		data = append(data, nodes.node(fsm.MakeEndpoint("primary.unknown", 6379), "r", 0))
	}
	var b strings.Builder
	skeletonHead(&b, f, name, end)
	b.WriteString("topology:\n  kind: sentinel\n  nodes: [")
	for i, id := range append(append([]string(nil), data...), sentinels...) {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "{id: %s}", id)
	}
	b.WriteString("]\n")
	fmt.Fprintf(&b, "  sentinel: {primary_name: %s, primary: %s", yamlName(cfg.Sentinel.PrimaryName), data[0])
	if len(data) > 1 {
		fmt.Fprintf(&b, ", replicas: [%s]", strings.Join(data[1:], ", "))
	}
	fmt.Fprintf(&b, ", sentinels: [%s]}\n", strings.Join(sentinels, ", "))
	b.WriteString(nodes.mapping())
	skeletonClient(&b, &cfg)
	skeletonTail(&b, observed, strings.Join(failovers, "")+nodes.faults(end))
	return b.String(), nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// replayed turns the result of a capture's replay into the skeleton's error.
func replayed(d *engine.Divergence, err error) error {
	if err != nil {
		return err
	}
	if d != nil {
		return fmt.Errorf("the capture does not replay (%v): check it with respire-sim replay", d)
	}
	return nil
}
