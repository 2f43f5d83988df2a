package scenario

import (
	"errors"
	"reflect"
	"strconv"
	"time"

	"github.com/respire-go/respire/engine"
	"github.com/respire-go/respire/engine/config"
	"github.com/respire-go/respire/fsm"
)

// Reading from replicas (issue 17): a standalone topology whose primary (its first node) has
// replicas (topology.replication), the client's replica-read options (client.read_from and
// its kin, client.Options field for field), and a timeline of replication events
// (replica_events: a replica's link to the primary goes down or comes back, a replica is
// promoted). The client reads through the engine's read router over one engine per
// candidate; the replica checkers (sim/check/replica_reads.go) judge what it did.

// MaxReplicaEvents bounds Scenario.ReplicaEvents.
const MaxReplicaEvents = 256

// MaxReplicaLatency bounds the extra latency of a replicated node.
const MaxReplicaLatency = time.Minute

// ReplicationSpec makes the first node of a standalone topology a primary with replicas.
type ReplicationSpec struct {
	// PrimaryLatency is extra one-way latency on every connection to the primary (default 0).
	PrimaryLatency time.Duration `yaml:"primary_latency,omitempty"`
	// PrimaryZone is the availability zone the primary reports in INFO SERVER ("": none).
	PrimaryZone string `yaml:"primary_zone,omitempty"`
	// Replicas are the primary's replicas, each a node of topology.nodes other than the first,
	// in the order the client lists them (client.Options.ReplicaEndpoints). One to
	// fsm.MaxReplicaCandidates-1.
	Replicas []ReplicaSpec `yaml:"replicas"`
}

// ReplicaSpec is one replica of ReplicationSpec.
type ReplicaSpec struct {
	// ID names the replica: a node of topology.nodes.
	ID string `yaml:"id"`
	// Latency is extra one-way latency on every connection to the replica (default 0; at most
	// MaxReplicaLatency), on top of network.latency.
	Latency time.Duration `yaml:"latency,omitempty"`
	// Zone is the availability zone the replica reports in INFO SERVER ("": none).
	Zone string `yaml:"zone,omitempty"`
	// NoServeStale turns replica-serve-stale-data off: while its link is down the replica
	// answers data commands with MASTERDOWN instead of its stale copy.
	NoServeStale bool `yaml:"no_serve_stale,omitempty"`
}

// HedgedReadsSpec is client.HedgedReadOptions (client.hedged_reads), field for field.
type HedgedReadsSpec struct {
	// Delay is how long a read waits for its answer before a hedge goes (0: 10ms).
	Delay time.Duration `yaml:"delay,omitempty"`
	// MaximumExtraLoadPercent caps the hedges (0: 5; else 1 to 100).
	MaximumExtraLoadPercent int `yaml:"maximum_extra_load_percent,omitempty"`
}

// ReplicaEvent is one entry of the replication timeline: exactly one of its actions, at At.
type ReplicaEvent struct {
	// At is when the event happens (virtual time).
	At time.Duration `yaml:"at"`
	// LinkDown brings the named replica's link to its primary down: it keeps its copy of the
	// data as it is and serves it stale (or MASTERDOWN, with no_serve_stale).
	LinkDown string `yaml:"link_down,omitempty"`
	// LinkUp brings the named replica's link back: it follows the primary again.
	LinkUp string `yaml:"link_up,omitempty"`
	// Promote makes the named replica the primary; the old primary becomes a replica (its
	// writes answer READONLY). The client's configuration is not told: its candidate 0 stays
	// the node it was configured with.
	Promote string `yaml:"promote,omitempty"`
}

// Replica checkers (sim/check/replica_reads.go), selected for every scenario with replication.
const (
	CheckReplicaNoWrite = "replica-no-write"
	CheckReplicaPolicy  = "replica-policy"
	CheckReplicaHedges  = "replica-hedges"
	CheckReplicaReplay  = "replica-replay"
)

// Plants of the replica checkers: each makes the simulated application do what a buggy client
// would.
const (
	// PlantReplicaWrite sends one write of the workload to the first replica's engine instead
	// of the primary's. Caught by replica-no-write.
	PlantReplicaWrite Plant = "replica-write"
	// PlantReplicaReadOnPrimary sends one read the router routed to a replica to the primary
	// instead. Caught by replica-policy (under the Replica policy).
	PlantReplicaReadOnPrimary Plant = "replica-read-on-primary"
	// PlantReplicaExtraHedges sends, for every read the router watches for a hedge, a copy to
	// another candidate at once, whatever the budget. Caught by replica-hedges.
	PlantReplicaExtraHedges Plant = "replica-extra-hedges"
)

func init() {
	knownPlants = append(knownPlants, PlantReplicaWrite, PlantReplicaReadOnPrimary, PlantReplicaExtraHedges)
	CheckerNames = append(CheckerNames, CheckReplicaNoWrite, CheckReplicaPolicy, CheckReplicaHedges, CheckReplicaReplay)
}

// IsReplicated reports whether the scenario's topology has replicas (topology.replication).
func (sc *Scenario) IsReplicated() bool {
	return sc.Topology.Replication != nil && len(sc.Topology.Replication.Replicas) > 0
}

// ReplicaOf returns the index (1-based: the primary is candidate 0) of the replica named id, or
// 0 when id is not a replica.
func (sc *Scenario) ReplicaOf(id string) int {
	if r := sc.Topology.Replication; r != nil {
		for i := range r.Replicas {
			if r.Replicas[i].ID == id {
				return i + 1
			}
		}
	}
	return 0
}

// Candidates returns the read candidates' node ids: the primary (the first node), then the
// replicas in order. Nil without replication.
func (sc *Scenario) Candidates() []string {
	if !sc.IsReplicated() {
		return nil
	}
	out := []string{sc.Topology.Nodes[0].ID}
	for _, r := range sc.Topology.Replication.Replicas {
		out = append(out, r.ID)
	}
	return out
}

// NodeLatency returns the extra one-way latency of connections to node id: its replication
// latency, or 0.
func (sc *Scenario) NodeLatency(id string) time.Duration {
	r := sc.Topology.Replication
	if r == nil {
		return 0
	}
	if len(sc.Topology.Nodes) > 0 && id == sc.Topology.Nodes[0].ID {
		return r.PrimaryLatency
	}
	if i := sc.ReplicaOf(id); i > 0 {
		return r.Replicas[i-1].Latency
	}
	return 0
}

// replicaOptions returns the client's replica-read options as the resolver takes them.
func (sc *Scenario) replicaOptions() (config.Replicas, error) {
	c := &sc.Client
	o := config.Replicas{Primaries: 1, Sentinel: sc.IsSentinel(), RefreshInterval: c.ReplicaRefreshInterval,
		ClientAvailabilityZone: c.ClientAvailabilityZone, LatencyTolerance: c.ReplicaLatencyTolerance}
	if c.ReadFrom != "" {
		p, ok := ParseReadFrom(c.ReadFrom)
		if !ok {
			return o, fieldErr("client.read_from", "unknown read policy "+strconv.Quote(c.ReadFrom)+
				" (want Primary, Replica, PrimaryPreferred, ReplicaPreferred, Nearest, AzAffinity or AzAffinityReplicasAndPrimary)")
		}
		o.ReadFrom = p
	}
	if h := c.HedgedReads; h != nil {
		o.HedgedReads = &config.HedgedReads{Delay: h.Delay, MaximumExtraLoadPercent: h.MaximumExtraLoadPercent}
	}
	for _, id := range sc.Candidates() {
		if id != sc.Topology.Nodes[0].ID {
			o.Endpoints = append(o.Endpoints, engine.Endpoint{Host: id, Port: NodePort})
		}
	}
	return o, nil
}

// ParseReadFrom returns the read policy named name (config.PolicyName's names).
func ParseReadFrom(name string) (fsm.ReadFrom, bool) {
	for p := fsm.ReadFrom(0); p < fsm.ReadPolicies; p++ {
		if config.PolicyName(p) == name {
			return p, true
		}
	}
	return 0, false
}

// RouterConfig resolves the client's replica-read options with the client's resolver
// (config.ResolveReplicas) and returns the read router's configuration, its candidates the
// primary then the replicas. An error names the YAML field.
func (sc *Scenario) RouterConfig() (fsm.RouterConfig, error) {
	o, err := sc.replicaOptions()
	if err != nil {
		return fsm.RouterConfig{}, err
	}
	cfg, err := config.ResolveReplicas(&o)
	if err != nil {
		var fe *config.FieldError
		if errors.As(err, &fe) {
			return cfg, fieldErr("client."+replicaYAMLField(fe.Field), fe.Reason)
		}
		return cfg, fieldErr("client", err.Error())
	}
	for _, id := range sc.Candidates() {
		cfg.Endpoints = append(cfg.Endpoints, fsm.MakeEndpoint(id, NodePort))
	}
	return cfg, nil
}

// replicaYAMLField names the YAML field of a resolver field of config.Replicas.
func replicaYAMLField(goField string) string {
	switch goField {
	case "ReplicaEndpoints":
		return "topology.replication.replicas"
	case "ReplicaLatencyTolerance":
		return "replica_latency_tolerance"
	case "ReplicaRefreshInterval":
		return "replica_refresh_interval"
	}
	return yamlPath(reflect.TypeOf(Client{}), goField)
}

// HedgedReadsOn reports whether the client hedges reads.
func (sc *Scenario) HedgedReadsOn() bool { return sc.Client.HedgedReads != nil }

// replicaExtraNodeOK reports whether node id may be a further node of a standalone topology
// as far as the topology check goes: with replication, validateReplication checks each one.
func (sc *Scenario) replicaExtraNodeOK(string) bool { return sc.Topology.Replication != nil }

// validateReplication checks the replication section, the client's replica-read options and
// the replication timeline.
func (sc *Scenario) validateReplication() error {
	r := sc.Topology.Replication
	c := &sc.Client
	if r == nil && sc.IsSentinel() {
		return sc.validateSentinelReplicas()
	}
	if r == nil {
		switch {
		case c.ReadFrom != "" && c.ReadFrom != "Primary":
			return fieldErr("client.read_from", "needs replicas: topology.replication")
		case c.HedgedReads != nil:
			return fieldErr("client.hedged_reads", "needs replicas: topology.replication")
		case len(sc.ReplicaEvents) > 0:
			return fieldErr("replica_events", "needs replicas: topology.replication")
		}
		return nil
	}
	switch {
	case sc.Topology.Kind != TopologyStandalone:
		return fieldErr("topology.replication", "is for standalone topologies (a Cluster's or Sentinel's replicas are their own)")
	case len(r.Replicas) == 0 || len(r.Replicas) >= fsm.MaxReplicaCandidates:
		return fieldErr("topology.replication.replicas", "needs 1 to "+strconv.Itoa(fsm.MaxReplicaCandidates-1)+" replicas")
	case r.PrimaryLatency < 0 || r.PrimaryLatency > MaxReplicaLatency:
		return fieldErr("topology.replication.primary_latency", "must be in [0, "+MaxReplicaLatency.String()+"]")
	case len(sc.Actions) > 0:
		return fieldErr("actions", "are not simulated with replication (the candidates' engines live as long as the run)")
	case len(sc.Maintenance) > 0:
		return fieldErr("maintenance", "is not simulated with replication")
	case len(sc.ReplicaEvents) > MaxReplicaEvents:
		return fieldErr("replica_events", "has more than "+strconv.Itoa(MaxReplicaEvents)+" entries")
	}
	for i := range sc.Faults {
		if targetsSlot(reflect.ValueOf(&sc.Faults[i]).Elem()) {
			return fieldErr("faults["+strconv.Itoa(i)+"]", "a client_slot target is not simulated with replication "+
				"(each candidate's engine has slots of its own): target a node")
		}
	}
	seen := map[string]bool{}
	for i, rs := range r.Replicas {
		f := "topology.replication.replicas[" + strconv.Itoa(i) + "]"
		switch {
		case sc.node(rs.ID) <= 0:
			return fieldErr(f+".id", "must name a node of topology.nodes other than the first (the primary)")
		case seen[rs.ID]:
			return fieldErr(f+".id", "duplicate replica "+strconv.Quote(rs.ID))
		case rs.Latency < 0 || rs.Latency > MaxReplicaLatency:
			return fieldErr(f+".latency", "must be in [0, "+MaxReplicaLatency.String()+"]")
		}
		seen[rs.ID] = true
	}
	for i, n := range sc.Topology.Nodes[1:] {
		moving := false
		for j := range sc.Maintenance {
			moving = moving || (sc.Maintenance[j].Kind == MaintMoving && sc.Maintenance[j].To == n.ID)
		}
		if !moving && !seen[n.ID] {
			return fieldErr("topology.nodes["+strconv.Itoa(i+1)+"]", "a standalone topology's further nodes are its replicas "+
				"(topology.replication.replicas) and the targets of its MOVING notices")
		}
	}
	if _, err := sc.RouterConfig(); err != nil {
		return err
	}
	for i := range sc.ReplicaEvents {
		e := &sc.ReplicaEvents[i]
		f := "replica_events[" + strconv.Itoa(i) + "]"
		n := 0
		for _, s := range []string{e.LinkDown, e.LinkUp, e.Promote} {
			if s != "" {
				n++
				if sc.node(s) < 0 {
					return fieldErr(f, "unknown node "+strconv.Quote(s))
				}
			}
		}
		switch {
		case n != 1:
			return fieldErr(f, "needs exactly one of link_down, link_up, promote")
		case e.At < 0 || e.At > sc.Duration:
			return fieldErr(f+".at", "must be in [0, duration]")
		}
	}
	return nil
}

// CandidateConfig returns the engine configuration of candidate k's engine in a run of sc: the
// primary's (EngineConfig) for k = 0, else the same with replica k's endpoint.
func (sc *Scenario) CandidateConfig(k int) engine.Config {
	cfg := sc.EngineConfig()
	if k > 0 {
		cfg.Endpoint = engine.Endpoint{Host: sc.Candidates()[k], Port: NodePort}
	}
	return cfg
}

// targetsSlot reports whether v (a fault, or a part of one) holds a Target with a client slot.
func targetsSlot(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Pointer:
		return !v.IsNil() && targetsSlot(v.Elem())
	case reflect.Struct:
		if t, ok := v.Interface().(Target); ok {
			return t.ClientSlot != nil
		}
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).IsExported() && targetsSlot(v.Field(i)) {
				return true
			}
		}
	}
	return false
}
