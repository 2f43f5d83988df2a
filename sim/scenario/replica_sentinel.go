package scenario

import (
	"reflect"
	"strconv"

	"github.com/respire-go/respire/engine"
	"github.com/respire-go/respire/fsm"
)

// Replicas named by the Sentinels (issue 17): a Sentinel topology whose client reads from
// replicas (client.read_from other than Primary). The client asks the Sentinels for the
// primary's replicas with SENTINEL REPLICAS, as client.Client does for SentinelPrimaryName
// with a replica policy, and reads through one read router per replica set over the primary's
// engine (the Sentinel client's) and one engine per replica (sim/replica_sentinel.go). The
// replica checkers judge it, with the roles of the Sentinel failovers.

// SentinelReplicaReads reports whether the client of a Sentinel topology reads from the
// replicas the Sentinels name: its read_from, or its view's (workload.view), is a policy other
// than Primary.
func (sc *Scenario) SentinelReplicaReads() bool {
	if !sc.IsSentinel() || sc.Topology.Sentinel == nil {
		return false
	}
	if p, ok := sc.viewPolicy(); ok && p != fsm.ReadPrimary {
		return true // a view reads from replicas: the source starts on its first read
	}
	return sc.Client.ReadFrom != "" && sc.Client.ReadFrom != "Primary"
}

// ReplicaReads reports whether the client reads from replicas: replicas of a standalone
// primary (topology.replication) or replicas the Sentinels name (SentinelReplicaReads).
func (sc *Scenario) ReplicaReads() bool { return sc.IsReplicated() || sc.SentinelReplicaReads() }

// SentinelReplicaConfig returns the engine configuration of the engine of replica node id in a
// run whose Sentinels name the replicas: the client's, with the replica's endpoint and no
// Sentinel discovery (a replica's connections are not checked for the primary's ROLE).
func (sc *Scenario) SentinelReplicaConfig(id string) engine.Config {
	cfg := sc.EngineConfig()
	cfg.Sentinel, cfg.Cluster = nil, nil
	cfg.Endpoint = engine.Endpoint{Host: id, Port: NodePort}
	return cfg
}

// SentinelQueryConfig returns the engine configuration of the connection that asks Sentinel
// ep for the replicas: one slot, no Sentinel discovery, no lifetime recycling.
func (sc *Scenario) SentinelQueryConfig(ep engine.Endpoint) engine.Config {
	cfg := sc.EngineConfig()
	cfg.Sentinel, cfg.Cluster = nil, nil
	cfg.Endpoint, cfg.Slots, cfg.Lifetime, cfg.LifetimeJitter = ep, 1, 0, 0
	return cfg
}

// validateSentinelReplicas checks the replica-read options of a Sentinel topology: what the
// simulated Sentinel replica source does not cover is refused, and the options resolve with
// the client's resolver.
func (sc *Scenario) validateSentinelReplicas() error {
	c := &sc.Client
	switch {
	case c.HedgedReads != nil:
		return fieldErr("client.hedged_reads", "is not simulated with replicas named by the Sentinels")
	case len(sc.ReplicaEvents) > 0:
		return fieldErr("replica_events", "need topology.replication (a Sentinel deployment changes roles with sentinel faults)")
	case !sc.SentinelReplicaReads():
		return nil
	case len(sc.Actions) > 0:
		return fieldErr("actions", "are not simulated with replica reads (the replicas' engines live as long as the run)")
	case len(sc.Maintenance) > 0:
		return fieldErr("maintenance", "is not simulated with replica reads")
	}
	for i := range sc.Faults {
		if targetsSlot(reflect.ValueOf(&sc.Faults[i]).Elem()) {
			return fieldErr("faults["+strconv.Itoa(i)+"]", "a client_slot target is not simulated with replica reads "+
				"(each replica's engine has slots of its own): target a node")
		}
	}
	_, err := sc.RouterConfig()
	return err
}
