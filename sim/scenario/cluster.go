package scenario

import (
	"strconv"
	"strings"
	"time"

	"github.com/respire-go/respire/engine"
	"github.com/respire-go/respire/fsm"
)

// The simulated Redis Cluster's part of the schema: the cluster topology (ClusterSpec), the
// cluster fault kind (ClusterFault: slot migrations, promotions, node replacements, restarts,
// CLUSTERDOWN windows) and the dial-count expectations (DialExpect).

// TopologyCluster is a Redis Cluster: shards of a primary and replicas (Topology.Cluster).
const TopologyCluster = "cluster"

// MaxClusterShards bounds ClusterSpec.Shards; MaxClusterNodes bounds a cluster topology's nodes.
const (
	MaxClusterShards = 64
	MaxClusterNodes  = 256
)

// ClusterSpec describes a simulated Redis Cluster. Every node it names is one of
// topology.nodes; a node of topology.nodes that no shard names is a spare, outside the Cluster
// until an action brings it in (a replacement, a slot migration to it). Each node's endpoint is
// "<id>:6379".
type ClusterSpec struct {
	// Shards are the Cluster's shards, at least one.
	Shards []ShardSpec `yaml:"shards"`
	// Seeds are the client's seed hosts (node ids, shard endpoints or DNS names, at port 6379).
	// Default: every shard's primary.
	Seeds []string `yaml:"seeds,omitempty"`
	// DNS are host names that resolve, when dialed, to the first of their nodes that is not
	// killed (the first one when all are). A replacement makes them resolve to the new node.
	DNS []DNSSpec `yaml:"dns,omitempty"`
}

// ShardSpec is one shard.
type ShardSpec struct {
	// Primary is the primary's node id.
	Primary string `yaml:"primary"`
	// Replicas are its replicas' node ids.
	Replicas []string `yaml:"replicas,omitempty"`
	// Slots are the slot ranges it serves, each "first..last" or one slot. Default: an even
	// split of the 16384 slots among the shards that set none, in shard order.
	Slots []string `yaml:"slots,omitempty"`
	// Endpoint, when set, is a host name that always resolves to the shard's current primary
	// (as a managed service's shard endpoint does), and which the Cluster announces as that
	// primary's endpoint in CLUSTER SLOTS and redirects.
	Endpoint string `yaml:"endpoint,omitempty"`
}

// DNSSpec is one DNS name of the simulated network.
type DNSSpec struct {
	// Name is the host name.
	Name string `yaml:"name"`
	// Nodes are the node ids it resolves to, in preference order.
	Nodes []string `yaml:"nodes"`
}

// ClusterFault is one change of a simulated Cluster (the fault kind "cluster"): exactly one
// action.
type ClusterFault struct {
	// Migrate moves slots to another shard.
	Migrate *MigrateAction `yaml:"migrate,omitempty"`
	// Promote makes a replica its shard's primary.
	Promote *PromoteAction `yaml:"promote,omitempty"`
	// Replace puts a spare node in a node's place, at the spare's address.
	Replace *ReplaceAction `yaml:"replace,omitempty"`
	// Restart restarts every node of the Cluster.
	Restart *RestartAction `yaml:"restart,omitempty"`
	// Down makes the Cluster answer CLUSTERDOWN for a window.
	Down *DownAction `yaml:"down,omitempty"`
}

// MigrateAction moves slots, with their keys, to the shard whose primary is To. A spare To
// becomes the primary of a new shard.
//
// With Ask, the slots are MIGRATING on the source and IMPORTING on the target for that window:
// their keys move at its start, the source answers ASK for them, the target serves a command
// only after ASKING (MOVED back to the source otherwise), and at its end the slots belong to the
// target (the source answers MOVED). Without Ask, the slots move at once: MOVED only.
type MigrateAction struct {
	// Slots are the slot ranges to move, each "first..last" or one slot.
	Slots []string `yaml:"slots"`
	// To is the target shard's primary, or a spare node.
	To string `yaml:"to"`
	// Ask is the MIGRATING/IMPORTING window; omitted: none.
	Ask *TimeRange `yaml:"ask,omitempty"`
}

// Old-primary behaviours of PromoteAction.Old.
const (
	// OldMoved: the demoted primary answers every keyed command MOVED to the new primary, as a
	// Redis replica does.
	OldMoved = "moved"
	// OldReadOnly: the demoted primary answers writes READONLY (reads MOVED).
	OldReadOnly = "readonly"
)

// PromoteAction makes a replica the primary of its shard (a failover); the old primary becomes
// one of its replicas. Replication is synchronous in the simulator: the promotion loses no
// acknowledged write.
type PromoteAction struct {
	// Node is the replica to promote.
	Node string `yaml:"node"`
	// Old is how the old primary answers afterwards: moved (default) or readonly.
	Old string `yaml:"old,omitempty"`
}

// ReplaceAction puts the spare node By in Node's place: its role, its slots, its dataset and the
// DNS names and shard endpoint that resolved to it; By has its own node id and address. Node
// leaves the Cluster; what its address does afterwards is for other faults to say (kill: it
// refuses; blackhole: it swallows).
type ReplaceAction struct {
	// Node is the node replaced.
	Node string `yaml:"node"`
	// By is the spare that takes its place.
	By string `yaml:"by"`
}

// RestartAction kills every node of the Cluster (connections reset, connects refused) and
// restarts them For later, with their datasets. For EmptySlots after the restart, the nodes
// answer CLUSTER SLOTS with an empty array and keyed commands with CLUSTERDOWN, as a Cluster
// whose nodes have not yet agreed on a configuration does.
type RestartAction struct {
	// For is how long the nodes are down (positive).
	For TimeRange `yaml:"for"`
	// EmptySlots is the window after the restart with empty CLUSTER SLOTS replies; omitted:
	// none.
	EmptySlots *TimeRange `yaml:"empty_slots,omitempty"`
}

// DownAction makes every node answer keyed commands with "CLUSTERDOWN The cluster is down" for
// For. CLUSTER SLOTS still answers.
type DownAction struct {
	// For is the window's length (positive).
	For TimeRange `yaml:"for"`
}

// Kind returns the YAML name of the action, or "".
func (f *ClusterFault) Kind() string {
	if k := f.kinds(); len(k) > 0 {
		return k[0]
	}
	return ""
}

// ClusterActions lists the YAML names of the cluster actions.
var ClusterActions = []string{"migrate", "promote", "replace", "restart", "down"}

func (f *ClusterFault) kinds() []string {
	var out []string
	for i, set := range []bool{f.Migrate != nil, f.Promote != nil, f.Replace != nil, f.Restart != nil, f.Down != nil} {
		if set {
			out = append(out, ClusterActions[i])
		}
	}
	return out
}

// Span returns how long the action's fault window lasts (zero: it ends at once). Meaningful
// after Resolve.
func (f *ClusterFault) Span() time.Duration {
	switch {
	case f.Migrate != nil && f.Migrate.Ask != nil:
		return f.Migrate.Ask.Value()
	case f.Restart != nil:
		d := f.Restart.For.Value()
		if f.Restart.EmptySlots != nil {
			d += f.Restart.EmptySlots.Value()
		}
		return d
	case f.Down != nil:
		return f.Down.For.Value()
	}
	return 0
}

// resolve fixes the action's ranges with two draws.
func (f *ClusterFault) resolve(forDraw, afterDraw float64) {
	switch {
	case f.Migrate != nil && f.Migrate.Ask != nil:
		*f.Migrate.Ask = f.Migrate.Ask.resolve(forDraw)
	case f.Restart != nil:
		f.Restart.For = f.Restart.For.resolve(forDraw)
		if f.Restart.EmptySlots != nil {
			*f.Restart.EmptySlots = f.Restart.EmptySlots.resolve(afterDraw)
		}
	case f.Down != nil:
		f.Down.For = f.Down.For.resolve(forDraw)
	}
}

// DialExpect bounds the dials (connection attempts, whatever their outcome) the client makes to
// one endpoint in a window of virtual time: "no dial to X after t" is {endpoint: X, after: t,
// max: 0}. Checked by the dials checker.
type DialExpect struct {
	// Endpoint is "host:port", as the client dials it (a DNS name is not resolved).
	Endpoint string `yaml:"endpoint"`
	// After starts the window (inclusive; default 0).
	After time.Duration `yaml:"after,omitempty"`
	// Before ends the window (exclusive; default: the end of the run).
	Before time.Duration `yaml:"before,omitempty"`
	// Min and Max bound the count; either may be omitted.
	Min *int `yaml:"min,omitempty"`
	Max *int `yaml:"max,omitempty"`
}

// IsCluster reports whether the scenario simulates a Redis Cluster.
func (sc *Scenario) IsCluster() bool { return sc.Topology.Kind == TopologyCluster }

// ParseSlots parses slot ranges ("first..last" or one slot) into fsm.SlotRange values.
func ParseSlots(specs []string) ([]fsm.SlotRange, error) {
	out := make([]fsm.SlotRange, 0, len(specs))
	for _, s := range specs {
		lo, hi, isRange := strings.Cut(strings.TrimSpace(s), "..")
		if !isRange {
			hi = lo
		}
		first, err1 := strconv.Atoi(strings.TrimSpace(lo))
		last, err2 := strconv.Atoi(strings.TrimSpace(hi))
		if err1 != nil || err2 != nil || first < 0 || last < first || last >= fsm.SlotCount {
			return nil, &Error{Msg: "slot range " + strconv.Quote(s) + " is not \"first..last\" within 0..16383"}
		}
		out = append(out, fsm.SlotRange{First: uint16(first), Last: uint16(last)})
	}
	return out, nil
}

// ShardSlots returns the slot ranges of every shard of a valid cluster topology, with the
// default even split filled in.
func (c *ClusterSpec) ShardSlots() [][]fsm.SlotRange {
	out := make([][]fsm.SlotRange, len(c.Shards))
	var unset []int
	for i := range c.Shards {
		if len(c.Shards[i].Slots) == 0 {
			unset = append(unset, i)
			continue
		}
		out[i], _ = ParseSlots(c.Shards[i].Slots)
	}
	if len(unset) == 0 {
		return out
	}
	// The even split covers the slots no shard claims, in order.
	var claimed [fsm.SlotCount]bool
	for _, rs := range out {
		for _, r := range rs {
			for s := int(r.First); s <= int(r.Last); s++ {
				claimed[s] = true
			}
		}
	}
	var free []int
	for s := range claimed {
		if !claimed[s] {
			free = append(free, s)
		}
	}
	for k, i := range unset {
		lo, hi := len(free)*k/len(unset), len(free)*(k+1)/len(unset)
		for j := lo; j < hi; j++ {
			s := uint16(free[j])
			if n := len(out[i]); n > 0 && out[i][n-1].Last+1 == s {
				out[i][n-1].Last = s
				continue
			}
			out[i] = append(out[i], fsm.SlotRange{First: s, Last: s})
		}
	}
	return out
}

// clusterSeeds returns the client's Cluster seeds (nil for a standalone topology).
func (sc *Scenario) clusterSeeds() []engine.Endpoint {
	c := sc.Topology.Cluster
	if !sc.IsCluster() || c == nil {
		return nil
	}
	hosts := c.Seeds
	if len(hosts) == 0 {
		for _, s := range c.Shards {
			hosts = append(hosts, s.Primary)
		}
	}
	seeds := make([]engine.Endpoint, len(hosts))
	for i, h := range hosts {
		seeds[i] = engine.Endpoint{Host: h, Port: NodePort}
	}
	return seeds
}

// applyClusterDefaults fills in a cluster topology's defaults: the client is a Cluster client,
// and the default mix leaves out the multi-key commands, whose keys lie in different slots.
func (sc *Scenario) applyClusterDefaults() {
	if !sc.IsCluster() {
		return
	}
	sc.Client.UseCluster = true
}

// validateCluster checks a cluster topology; the standalone checks stay in validateTopology.
func (sc *Scenario) validateCluster() error {
	t := &sc.Topology
	c := t.Cluster
	if c == nil {
		return fieldErr("topology.cluster", "is required for a cluster topology")
	}
	if len(t.Nodes) > MaxClusterNodes {
		return fieldErr("topology.nodes", "a cluster topology has at most "+strconv.Itoa(MaxClusterNodes)+" nodes")
	}
	if len(c.Shards) == 0 || len(c.Shards) > MaxClusterShards {
		return fieldErr("topology.cluster.shards", "must have 1 to "+strconv.Itoa(MaxClusterShards)+" shards")
	}
	used := map[string]string{}
	names := map[string]string{}
	useNode := func(field, id string) error {
		if sc.node(id) < 0 {
			return fieldErr(field, "unknown node "+strconv.Quote(id))
		}
		if prev, ok := used[id]; ok {
			return fieldErr(field, "node "+strconv.Quote(id)+" is already in the Cluster ("+prev+")")
		}
		used[id] = field
		return nil
	}
	var owner [fsm.SlotCount]int
	for i := range c.Shards {
		s := &c.Shards[i]
		f := "topology.cluster.shards[" + strconv.Itoa(i) + "]"
		if err := useNode(f+".primary", s.Primary); err != nil {
			return err
		}
		for j, r := range s.Replicas {
			if err := useNode(f+".replicas["+strconv.Itoa(j)+"]", r); err != nil {
				return err
			}
		}
		rs, err := ParseSlots(s.Slots)
		if err != nil {
			return fieldErr(f+".slots", err.(*Error).Msg)
		}
		for _, r := range rs {
			for slot := int(r.First); slot <= int(r.Last); slot++ {
				if owner[slot] != 0 {
					return fieldErr(f+".slots", "slot "+strconv.Itoa(slot)+" is also shard "+strconv.Itoa(owner[slot]-1)+"'s")
				}
				owner[slot] = i + 1
			}
		}
		if s.Endpoint != "" {
			if err := sc.checkHostName(f+".endpoint", s.Endpoint, names); err != nil {
				return err
			}
		}
	}
	for i, d := range c.DNS {
		f := "topology.cluster.dns[" + strconv.Itoa(i) + "]"
		if err := sc.checkHostName(f+".name", d.Name, names); err != nil {
			return err
		}
		if len(d.Nodes) == 0 {
			return fieldErr(f+".nodes", "must name at least one node")
		}
		for j, n := range d.Nodes {
			if sc.node(n) < 0 {
				return fieldErr(f+".nodes["+strconv.Itoa(j)+"]", "unknown node "+strconv.Quote(n))
			}
		}
	}
	if len(c.Seeds) > fsm.MaxClusterSeeds {
		return fieldErr("topology.cluster.seeds", "at most "+strconv.Itoa(fsm.MaxClusterSeeds)+" seeds")
	}
	seen := map[string]bool{}
	for i, h := range c.Seeds {
		f := "topology.cluster.seeds[" + strconv.Itoa(i) + "]"
		if sc.node(h) < 0 && names[h] == "" {
			return fieldErr(f, "unknown host "+strconv.Quote(h)+" (want a node id, a shard endpoint or a DNS name)")
		}
		if seen[h] {
			return fieldErr(f, "repeats seed "+strconv.Quote(h))
		}
		seen[h] = true
	}
	if !sc.Client.UseCluster {
		return fieldErr("client.use_cluster", "a cluster topology needs a Cluster client")
	}
	if w := &sc.Workload; w.Mix.MGet > 0 || w.Mix.MSet > 0 {
		return fieldErr("workload.mix", "mget and mset are not simulated on a Cluster: their keys lie in different slots")
	}
	if sc.Workload.Dedicated != nil {
		return fieldErr("workload.dedicated", "dedicated workloads are not simulated on a Cluster yet")
	}
	if ps := sc.Workload.PubSub; ps != nil {
		// Only sharded pub/sub: the simulated nodes do not broadcast PUBLISH to one another.
		for i, s := range ps.Subscribers {
			if s.Kind != SubscribeShard {
				return fieldErr("workload.pubsub.subscribers["+strconv.Itoa(i)+"].kind", "only shard subscribers are simulated on a Cluster")
			}
		}
		if p := ps.Publisher; p != nil && len(p.Channels) > 0 {
			return fieldErr("workload.pubsub.publisher.channels", "only shard channels are simulated on a Cluster")
		}
	}
	return nil
}

// checkHostName checks a shard endpoint or DNS name: a host name no node or other name has.
func (sc *Scenario) checkHostName(field, name string, names map[string]string) error {
	switch {
	case name == "" || strings.ContainsAny(name, " \t\r\n:"):
		return fieldErr(field, "must be a non-empty host name without spaces or colons")
	case sc.node(name) >= 0:
		return fieldErr(field, "host name "+strconv.Quote(name)+" is a node id")
	case names[name] != "":
		return fieldErr(field, "host name "+strconv.Quote(name)+" is already "+names[name])
	}
	names[name] = field
	return nil
}

// validateClusterFault checks a cluster fault (field is its path, "faults[3].cluster").
func (sc *Scenario) validateClusterFault(field string, f *ClusterFault) error {
	if !sc.IsCluster() {
		return fieldErr(field, "needs a cluster topology")
	}
	kinds := f.kinds()
	switch {
	case len(kinds) == 0:
		return fieldErr(field, "needs one action (one of "+strings.Join(ClusterActions, ", ")+")")
	case len(kinds) > 1:
		return fieldErr(field, "has several actions ("+strings.Join(kinds, ", ")+"); use one entry each")
	}
	field += "." + kinds[0]
	node := func(name, id string) error {
		if sc.node(id) < 0 {
			return fieldErr(field+"."+name, "unknown node "+strconv.Quote(id))
		}
		return nil
	}
	switch {
	case f.Migrate != nil:
		m := f.Migrate
		if len(m.Slots) == 0 {
			return fieldErr(field+".slots", "must name at least one slot")
		}
		if _, err := ParseSlots(m.Slots); err != nil {
			return fieldErr(field+".slots", err.(*Error).Msg)
		}
		var ask error
		if m.Ask != nil {
			ask = validateSpan(field+".ask", m.Ask, true)
		}
		return firstError(node("to", m.To), ask)
	case f.Promote != nil:
		var old error
		if o := f.Promote.Old; o != "" && o != OldMoved && o != OldReadOnly {
			old = fieldErr(field+".old", "must be moved or readonly")
		}
		return firstError(node("node", f.Promote.Node), old)
	case f.Replace != nil:
		var same error
		if f.Replace.Node == f.Replace.By {
			same = fieldErr(field+".by", "must be another node")
		}
		return firstError(node("node", f.Replace.Node), node("by", f.Replace.By), same)
	case f.Restart != nil:
		var empty error
		if f.Restart.EmptySlots != nil {
			empty = validateSpan(field+".empty_slots", f.Restart.EmptySlots, true)
		}
		return firstError(validateSpan(field+".for", &f.Restart.For, true), empty)
	case f.Down != nil:
		return validateSpan(field+".for", &f.Down.For, true)
	}
	return nil
}

// validateDials checks the dial expectations.
func (sc *Scenario) validateDials() error {
	for i := range sc.Expect.Dials {
		d := &sc.Expect.Dials[i]
		f := "expect.dials[" + strconv.Itoa(i) + "]"
		host, port, ok := strings.Cut(d.Endpoint, ":")
		if p, err := strconv.Atoi(port); !ok || host == "" || err != nil || p <= 0 || p > 65535 {
			return fieldErr(f+".endpoint", "must be host:port")
		}
		switch {
		case d.After < 0:
			return fieldErr(f+".after", "must not be negative")
		case d.Before < 0 || (d.Before != 0 && d.Before <= d.After):
			return fieldErr(f+".before", "must come after after")
		case d.Min == nil && d.Max == nil:
			return fieldErr(f, "needs min or max")
		}
		if err := (&Bounds{Min: d.Min, Max: d.Max}).validate(f); err != nil {
			return err
		}
	}
	return nil
}
