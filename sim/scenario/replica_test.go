package scenario

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/respire-go/respire/fsm"
)

const replicaBase = `
name: r
duration: 5s
topology:
  nodes: [{id: r1}, {id: r2}, {id: r3}]
  replication:
    primary_latency: 1ms
    primary_zone: a
    replicas: [{id: r2, latency: 2ms, zone: b}, {id: r3, no_serve_stale: true}]
client:
  read_from: AzAffinity
  client_availability_zone: b
  replica_latency_tolerance: 1ms
  hedged_reads: {delay: 3ms, maximum_extra_load_percent: 10}
replica_events:
  - {at: 1s, link_down: r3}
  - {at: 2s, promote: r2}
workload: {callers: 1, rate: 10/s, keys: 2}
`

// TestReplicaSectionResolves: the replication section and the client's replica options
// resolve into the read router's configuration through the client's resolver.
func TestReplicaSectionResolves(t *testing.T) {
	sc, err := Parse([]byte(replicaBase))
	if err != nil {
		t.Fatal(err)
	}
	if !sc.IsReplicated() || sc.ReplicaOf("r3") != 2 || sc.ReplicaOf("r1") != 0 {
		t.Fatalf("replicated %v, r3 %d, r1 %d", sc.IsReplicated(), sc.ReplicaOf("r3"), sc.ReplicaOf("r1"))
	}
	if sc.NodeLatency("r1") != time.Millisecond || sc.NodeLatency("r2") != 2*time.Millisecond || sc.NodeLatency("r3") != 0 {
		t.Fatal("node latencies")
	}
	cfg, err := sc.RouterConfig()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Default != fsm.ReadAzAffinity || cfg.Zone != "b" || !cfg.Banded || cfg.Tolerance != time.Millisecond ||
		cfg.HedgeDelay != 3*time.Millisecond || cfg.HedgeLoadPercent != 10 || cfg.RefreshInterval != time.Second ||
		len(cfg.Endpoints) != 3 || cfg.Endpoints[0] != fsm.MakeEndpoint("r1", NodePort) {
		t.Fatalf("router configuration %+v", cfg)
	}
	if c := sc.CandidateConfig(2); c.Endpoint.Host != "r3" || c.Endpoint.Port != NodePort {
		t.Fatalf("candidate 2's endpoint %v", c.Endpoint)
	}
	out, err := Marshal(sc)
	if err != nil {
		t.Fatal(err)
	}
	again, err := Parse(out)
	if err != nil {
		t.Fatal(err)
	}
	if cfg2, _ := again.RouterConfig(); cfg2.Tolerance != cfg.Tolerance || cfg2.Default != cfg.Default || len(again.ReplicaEvents) != 2 {
		t.Fatal("the marshalled scenario does not read back to the same replica configuration")
	}
}

// TestReplicaSectionErrors: each mistake is refused, naming its field.
func TestReplicaSectionErrors(t *testing.T) {
	for _, c := range []struct{ old, new, field string }{
		{"read_from: AzAffinity", "read_from: Farthest", "client.read_from"},
		{"  client_availability_zone: b\n", "", "client.client_availability_zone"},
		{"replica_latency_tolerance: 1ms", "replica_latency_tolerance: -1ms", "client.replica_latency_tolerance"},
		{"delay: 3ms", "delay: 2h", "client.hedged_reads.delay"},
		{"maximum_extra_load_percent: 10", "maximum_extra_load_percent: 101", "client.hedged_reads.maximum_extra_load_percent"},
		{"{id: r2, latency: 2ms, zone: b}", "{id: r9}", "topology.replication.replicas[0].id"},
		{"{id: r2, latency: 2ms, zone: b}", "{id: r1}", "topology.replication.replicas[0].id"},
		{"{id: r3, no_serve_stale: true}", "{id: r2}", "topology.replication.replicas[1].id"},
		{", {id: r3, no_serve_stale: true}]", "]", "topology.nodes[2]"},
		{"{id: r2, latency: 2ms, zone: b}", "{id: r2, latency: -1ms}", "topology.replication.replicas[0].latency"},
		{"primary_latency: 1ms", "primary_latency: 2m", "topology.replication.primary_latency"},
		{"{at: 1s, link_down: r3}", "{at: 1s}", "replica_events[0]"},
		{"{at: 1s, link_down: r3}", "{at: 1s, link_down: r3, link_up: r3}", "replica_events[0]"},
		{"{at: 1s, link_down: r3}", "{at: 1s, link_down: r7}", "replica_events[0]"},
		{"{at: 2s, promote: r2}", "{at: 9s, promote: r2}", "replica_events[1].at"},
		{"replica_events:", "actions: [{at: 1s, close: {}}]\nreplica_events:", "actions"},
		{"replica_events:", "faults: [{at: 1s, refuse: {client_slot: 0}}]\nreplica_events:", "faults[0]"},
		{"replica_events:", "faults: [{at: 1s, kill: {node: r2}}, {at: 2s, drop: {client_slot: 0}}]\nreplica_events:", "faults[1]"},
	} {
		src := strings.Replace(replicaBase, c.old, c.new, 1)
		if src == replicaBase {
			t.Fatalf("%q is not in the base scenario", c.old)
		}
		_, err := Parse([]byte(src))
		var se *Error
		if !errors.As(err, &se) || se.Field != c.field {
			t.Errorf("%q: %v, want an error on %s", c.new, err, c.field)
		}
		if strings.Contains(c.new, "client_slot") && !strings.Contains(err.Error(), "not simulated with replication") {
			t.Errorf("%q: %v, want the replication's reason", c.new, err)
		}
	}
	// Without replication, the replica options and events are refused.
	plain := "name: p\nduration: 5s\nworkload: {callers: 1, rate: 10/s, keys: 2}\n"
	for _, c := range []struct{ extra, field string }{
		{"client: {read_from: Replica}\n", "client.read_from"},
		{"client: {hedged_reads: {}}\n", "client.hedged_reads"},
		{"replica_events: [{at: 1s, link_down: r1}]\n", "replica_events"},
	} {
		_, err := Parse([]byte(plain + c.extra))
		var se *Error
		if !errors.As(err, &se) || se.Field != c.field {
			t.Errorf("%q: %v, want an error on %s", c.extra, err, c.field)
		}
	}
	if _, err := Parse([]byte(plain + "client: {read_from: Primary}\n")); err != nil {
		t.Errorf("read_from Primary without replicas: %v", err)
	}
}
