package scenario

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/respire-go/respire/fsm"
)

const clusterHead = "name: x\nduration: 1m\ntopology:\n  kind: cluster\n  nodes: [{id: a1}, {id: a2}, {id: b1}, {id: s9}]\n"

const clusterShards = "  cluster:\n    shards:\n      - {primary: a1, replicas: [a2]}\n      - {primary: b1}\n"

// TestClusterScenarioErrors: every invalid cluster section, fault and dial expectation fails
// with a *Error naming the field.
func TestClusterScenarioErrors(t *testing.T) {
	ok := clusterHead + clusterShards
	cases := []struct{ name, yaml, field, msg string }{
		{"no shards", clusterHead + "  cluster: {shards: []}\n", "topology.cluster.shards", "1 to 64"},
		{"unknown primary", clusterHead + "  cluster: {shards: [{primary: zz}]}\n", "topology.cluster.shards[0].primary", "unknown node"},
		{"node twice", clusterHead + "  cluster: {shards: [{primary: a1}, {primary: b1, replicas: [a1]}]}\n",
			"topology.cluster.shards[1].replicas[0]", "already in the Cluster"},
		{"bad slots", clusterHead + "  cluster: {shards: [{primary: a1, slots: [\"9..3\"]}]}\n", "topology.cluster.shards[0].slots", "first..last"},
		{"overlapping slots", clusterHead + "  cluster: {shards: [{primary: a1, slots: [\"0..10\"]}, {primary: b1, slots: [\"10\"]}]}\n",
			"topology.cluster.shards[1].slots", "slot 10"},
		{"endpoint is a node", clusterHead + "  cluster: {shards: [{primary: a1, endpoint: b1}]}\n", "topology.cluster.shards[0].endpoint", "node id"},
		{"dns twice", clusterHead + "  cluster: {shards: [{primary: a1, endpoint: e}], dns: [{name: e, nodes: [a1]}]}\n",
			"topology.cluster.dns[0].name", "already"},
		{"dns unknown node", clusterHead + "  cluster: {shards: [{primary: a1}], dns: [{name: e, nodes: [zz]}]}\n",
			"topology.cluster.dns[0].nodes[0]", "unknown node"},
		{"unknown seed", clusterHead + "  cluster: {shards: [{primary: a1}], seeds: [nowhere]}\n", "topology.cluster.seeds[0]", "unknown host"},
		{"multi-key mix", ok + "workload: {callers: 1, rate: 1/s, mix: {mget: 1}}\n", "workload.mix", "mget and mset"},
		{"pubsub channel", ok + "workload: {pubsub: {subscribers: [{topics: [x]}]}}\n", "workload.pubsub.subscribers[0].kind", "only shard"},
		{"publish", ok + "workload: {pubsub: {publisher: {rate: 1/s, channels: [x]}}}\n", "workload.pubsub.publisher.channels", "only shard"},
		{"dedicated", ok + "workload: {dedicated: {renters: 1}}\n", "workload.dedicated", "not simulated on a Cluster"},
		{"client slot target", ok + "faults:\n  - {at: 1s, drop: {client_slot: 0}}\n", "faults[0].drop.client_slot", "per node"},
		{"no action", ok + "faults:\n  - {at: 1s, cluster: {}}\n", "faults[0].cluster", "needs one action"},
		{"two actions", ok + "faults:\n  - {at: 1s, cluster: {down: {for: 1s}, promote: {node: a2}}}\n", "faults[0].cluster", "several actions"},
		{"migrate unknown", ok + "faults:\n  - {at: 1s, cluster: {migrate: {slots: [\"1\"], to: zz}}}\n", "faults[0].cluster.migrate.to", "unknown node"},
		{"migrate no slots", ok + "faults:\n  - {at: 1s, cluster: {migrate: {to: b1}}}\n", "faults[0].cluster.migrate.slots", "at least one"},
		{"promote old", ok + "faults:\n  - {at: 1s, cluster: {promote: {node: a2, old: maybe}}}\n", "faults[0].cluster.promote.old", "moved or readonly"},
		{"replace itself", ok + "faults:\n  - {at: 1s, cluster: {replace: {node: a1, by: a1}}}\n", "faults[0].cluster.replace.by", "another node"},
		{"restart for", ok + "faults:\n  - {at: 1s, cluster: {restart: {for: 0s}}}\n", "faults[0].cluster.restart.for", "positive"},
		{"standalone cluster fault", "name: x\nduration: 1m\nfaults:\n  - {at: 1s, cluster: {down: {for: 1s}}}\n", "faults[0].cluster", "cluster topology"},
		{"dial endpoint", ok + "expect: {dials: [{endpoint: a1, max: 0}]}\n", "expect.dials[0].endpoint", "host:port"},
		{"dial bounds", ok + "expect: {dials: [{endpoint: \"a1:6379\"}]}\n", "expect.dials[0]", "min or max"},
		{"dial window", ok + "expect: {dials: [{endpoint: \"a1:6379\", after: 5s, before: 2s, max: 0}]}\n", "expect.dials[0].before", "after"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.yaml))
			var se *Error
			if !errors.As(err, &se) {
				t.Fatalf("error %v, want a *Error for %s", err, tc.field)
			}
			if se.Field != tc.field || !strings.Contains(se.Msg, tc.msg) {
				t.Fatalf("%s: %s, want %s: ...%s...", se.Field, se.Msg, tc.field, tc.msg)
			}
		})
	}
}

// TestClusterScenarioDefaults: a cluster topology makes the client a Cluster client with the
// default refresh, seeds its primaries, splits the slots evenly among the shards that name none,
// and leaves the multi-key commands out of the default mix.
func TestClusterScenarioDefaults(t *testing.T) {
	sc, err := Parse([]byte(clusterHead + clusterShards + "workload: {callers: 1, rate: 1/s}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if !sc.Client.UseCluster || sc.Client.ClusterTopologyRefreshInterval != time.Minute {
		t.Fatalf("client %+v", sc.Client)
	}
	if m := sc.Workload.Mix; m.MGet != 0 || m.MSet != 0 || m.total() == 0 {
		t.Fatalf("mix %+v", m)
	}
	cfg := sc.EngineConfig()
	if cfg.Cluster == nil || len(cfg.Cluster.Seeds) != 2 || cfg.Cluster.Seeds[0].Host != "a1" || cfg.Cluster.Seeds[1].Host != "b1" ||
		cfg.Cluster.RefreshInterval != time.Minute {
		t.Fatalf("engine cluster config %+v", cfg.Cluster)
	}
	slots := sc.Topology.Cluster.ShardSlots()
	if len(slots) != 2 || slots[0][0] != (fsm.SlotRange{First: 0, Last: 8191}) || slots[1][0] != (fsm.SlotRange{First: 8192, Last: 16383}) {
		t.Fatalf("even split %v", slots)
	}
	// Explicit ranges are kept; the others share what is left.
	sc, err = Parse([]byte(clusterHead + "  cluster: {shards: [{primary: a1}, {primary: b1, slots: [\"0..99\"]}]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	slots = sc.Topology.Cluster.ShardSlots()
	if slots[1][0] != (fsm.SlotRange{First: 0, Last: 99}) || slots[0][0] != (fsm.SlotRange{First: 100, Last: 16383}) {
		t.Fatalf("split around explicit ranges %v", slots)
	}
}
