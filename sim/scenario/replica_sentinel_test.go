package scenario

import (
	"errors"
	"strings"
	"testing"

	"github.com/respire-go/respire/fsm"
)

const sentinelReplicaBase = `
name: s
duration: 5s
topology:
  kind: sentinel
  nodes: [{id: r1}, {id: r2}, {id: s1}]
  sentinel: {primary: r1, replicas: [r2], sentinels: [s1]}
client:
  read_from: Replica
  replica_refresh_interval: 200ms
workload: {callers: 1, rate: 10/s, keys: 2}
`

// TestSentinelReplicaSection: a Sentinel topology's read_from makes the Sentinels the replica
// source; the options resolve with the client's resolver (no endpoints: the Sentinels name
// them), and what the simulated source does not cover is refused on its field.
func TestSentinelReplicaSection(t *testing.T) {
	sc, err := Parse([]byte(sentinelReplicaBase))
	if err != nil {
		t.Fatal(err)
	}
	if !sc.SentinelReplicaReads() || !sc.ReplicaReads() || sc.IsReplicated() {
		t.Fatalf("sentinel reads %v, replica reads %v, replicated %v", sc.SentinelReplicaReads(), sc.ReplicaReads(), sc.IsReplicated())
	}
	cfg, err := sc.RouterConfig()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Default != fsm.ReadReplica || cfg.RefreshInterval != 200_000_000 || len(cfg.Endpoints) != 0 {
		t.Fatalf("router configuration %+v", cfg)
	}
	if c := sc.SentinelReplicaConfig("r2"); c.Endpoint.Host != "r2" || c.Sentinel != nil {
		t.Fatalf("replica engine configuration: endpoint %v, sentinel %v", c.Endpoint, c.Sentinel)
	}
	if c := sc.SentinelQueryConfig(sc.SentinelEndpoints()[0]); c.Endpoint.Host != "s1" || c.Slots != 1 || c.Sentinel != nil {
		t.Fatalf("query engine configuration: endpoint %v, slots %d", c.Endpoint, c.Slots)
	}
	for _, c := range []struct{ old, new, field string }{
		{"read_from: Replica", "read_from: Replica\n  hedged_reads: {}", "client.hedged_reads"},
		{"read_from: Replica", "read_from: Farthest", "client.read_from"},
		{"replica_refresh_interval: 200ms", "replica_refresh_interval: 2h", "client.replica_refresh_interval"},
		{"workload:", "replica_events: [{at: 1s, promote: r2}]\nworkload:", "replica_events"},
		{"workload:", "actions: [{at: 1s, close: {}}]\nworkload:", "actions"},
		{"workload:", "faults: [{at: 1s, drop: {client_slot: 0}}]\nworkload:", "faults[0]"},
		{"keys: 2}", "keys: 2, dedicated: {renters: 1, mix: {xread: 1}}}", "workload.dedicated.mix.xread"},
		{"keys: 2}", "keys: 2, dedicated: {renters: 1, mix: {xread: -1, push: 1}}}", "workload.dedicated.mix"},
	} {
		src := strings.Replace(sentinelReplicaBase, c.old, c.new, 1)
		if src == sentinelReplicaBase {
			t.Fatalf("%q is not in the base scenario", c.old)
		}
		_, err := Parse([]byte(src))
		var se *Error
		if !errors.As(err, &se) || se.Field != c.field {
			t.Errorf("%q: %v, want an error on %s", c.new, err, c.field)
		}
	}
	// Under Primary the Sentinel client reads nothing from replicas.
	sc, err = Parse([]byte(strings.Replace(sentinelReplicaBase, "read_from: Replica", "read_from: Primary", 1)))
	if err != nil || sc.ReplicaReads() {
		t.Fatalf("read_from Primary: %v, replica reads %v", err, sc != nil && sc.ReplicaReads())
	}
}

// TestViewSection: workload.view resolves each caller's read policy, and its errors name
// their field.
func TestViewSection(t *testing.T) {
	src := strings.Replace(sentinelReplicaBase, "read_from: Replica", "read_from: Primary", 1)
	src = strings.Replace(src, "workload: {callers: 1, rate: 10/s, keys: 2}", "workload: {callers: 3, rate: 10/s, keys: 2, view: {read_from: Replica, callers: 2}}", 1)
	sc, err := Parse([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if sc.ReadPolicyOf(0) != fsm.ReadReplica || sc.ReadPolicyOf(1) != fsm.ReadReplica || sc.ReadPolicyOf(2) != fsm.ReadPrimary {
		t.Fatalf("policies %v %v %v", sc.ReadPolicyOf(0), sc.ReadPolicyOf(1), sc.ReadPolicyOf(2))
	}
	if !sc.SentinelReplicaReads() {
		t.Fatal("a Sentinel client with a Replica view does not read from replicas")
	}
	plain := "name: p\nduration: 5s\n"
	for _, c := range []struct{ src, field string }{
		{strings.Replace(src, "read_from: Replica, callers: 2", "read_from: Farthest, callers: 2", 1), "workload.view.read_from"},
		{strings.Replace(src, "read_from: Replica, callers: 2", "read_from: Replica, callers: 4", 1), "workload.view.callers"},
		{strings.Replace(src, "read_from: Replica, callers: 2", "read_from: Replica, callers: 0", 1), "workload.view.callers"},
		{strings.Replace(src, "read_from: Replica, callers: 2", "read_from: AzAffinity, callers: 2", 1), "workload.view.read_from"},
		{plain + "workload: {callers: 2, rate: 10/s, keys: 2, view: {read_from: Replica, callers: 1}}\n", "workload.view.read_from"},
	} {
		_, err := Parse([]byte(c.src))
		var se *Error
		if !errors.As(err, &se) || se.Field != c.field {
			t.Errorf("%v, want an error on %s", err, c.field)
		}
	}
	if _, err := Parse([]byte(plain + "workload: {callers: 2, rate: 10/s, keys: 2, view: {read_from: Primary, callers: 1}}\n")); err != nil {
		t.Errorf("a Primary view without replicas: %v", err)
	}
}
