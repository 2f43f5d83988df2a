package sim

import (
	"fmt"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/respire-go/respire/sim/check"
	"github.com/respire-go/respire/sim/scenario"
)

// drawClusterScenario draws a simulated Cluster run: shards with or without replicas, spares,
// a timeline of Cluster changes and node faults, and a workload, as YAML.
func drawClusterScenario(t *rapid.T) string {
	var b strings.Builder
	shards := rapid.IntRange(2, 3).Draw(t, "shards")
	replicas := rapid.IntRange(0, 1).Draw(t, "replicas")
	spares := rapid.IntRange(0, 2).Draw(t, "spares")
	fmt.Fprintf(&b, "name: rapid-cluster\nseed: %d\nduration: 20s\n", rapid.Uint64Range(1, 1<<20).Draw(t, "seed"))
	var nodes, primaries, replicaIDs, spareIDs []string
	for i := 0; i < shards; i++ {
		p := fmt.Sprintf("p%d", i)
		primaries = append(primaries, p)
		nodes = append(nodes, p)
		if replicas > 0 {
			r := fmt.Sprintf("r%d", i)
			replicaIDs = append(replicaIDs, r)
			nodes = append(nodes, r)
		}
	}
	for i := 0; i < spares; i++ {
		s := fmt.Sprintf("s%d", i)
		spareIDs = append(spareIDs, s)
		nodes = append(nodes, s)
	}
	b.WriteString("topology:\n  kind: cluster\n  nodes: [")
	for i, n := range nodes {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "{id: %s}", n)
	}
	b.WriteString("]\n  cluster:\n    shards:\n")
	for i, p := range primaries {
		if replicas > 0 {
			fmt.Fprintf(&b, "      - {primary: %s, replicas: [%s]}\n", p, replicaIDs[i])
		} else {
			fmt.Fprintf(&b, "      - {primary: %s}\n", p)
		}
	}
	// One configured seed: the other nodes are discovered, so the retired-dials checker judges them.
	fmt.Fprintf(&b, "    seeds: [%s]\n", rapid.SampledFrom(primaries).Draw(t, "seed-node"))
	fmt.Fprintf(&b, "network: {latency: %dus, jitter: %dus}\n", rapid.IntRange(100, 2000).Draw(t, "latency-us"), rapid.IntRange(0, 500).Draw(t, "jitter-us"))
	fmt.Fprintf(&b, "client:\n  connections: %d\n  connect_timeout: %dms\n  command_timeout: %dms\n",
		rapid.IntRange(1, 3).Draw(t, "connections"), rapid.IntRange(100, 1000).Draw(t, "connect-ms"), rapid.IntRange(200, 2000).Draw(t, "command-ms"))
	fmt.Fprintf(&b, "  cluster_topology_refresh_interval: %s\n", rapid.SampledFrom([]string{"-1ns", "1s", "5s", "60s"}).Draw(t, "refresh"))
	if rapid.Bool().Draw(t, "policy") {
		initial := rapid.IntRange(0, 200).Draw(t, "initial-ms")
		fmt.Fprintf(&b, "  reconnect_policy: {initial_delay: %dms, max_delay: %dms, jitter_ratio: %s, max_attempts: %d}\n",
			initial, initial+rapid.IntRange(0, 1000).Draw(t, "extra-max-ms"),
			rapid.SampledFrom([]string{"0", "0.2", "0.5"}).Draw(t, "jitter"), rapid.IntRange(0, 6).Draw(t, "max-attempts"))
	}
	n := rapid.IntRange(0, 5).Draw(t, "faults")
	if n > 0 {
		b.WriteString("faults:\n")
	}
	nextSpare := 0
	all := append(append([]string{}, primaries...), replicaIDs...)
	for i := 0; i < n; i++ {
		at := fmt.Sprintf("%dms", rapid.IntRange(500, 15000).Draw(t, "at-ms"))
		window := fmt.Sprintf("%dms", rapid.IntRange(10, 3000).Draw(t, "for-ms"))
		node := rapid.SampledFrom(all).Draw(t, "node")
		switch rapid.IntRange(0, 8).Draw(t, "kind") {
		case 0:
			first := rapid.IntRange(0, 16383).Draw(t, "first")
			last := min(16383, first+rapid.IntRange(0, 6000).Draw(t, "width"))
			to := rapid.SampledFrom(append(append([]string{}, primaries...), spareIDs...)).Draw(t, "to")
			ask := ""
			if rapid.Bool().Draw(t, "ask") {
				ask = ", ask: " + window
			}
			fmt.Fprintf(&b, "  - {at: %s, cluster: {migrate: {slots: [\"%d..%d\"], to: %s%s}}}\n", at, first, last, to, ask)
		case 1:
			if len(replicaIDs) > 0 {
				fmt.Fprintf(&b, "  - {at: %s, cluster: {promote: {node: %s, old: %s}}}\n", at, rapid.SampledFrom(replicaIDs).Draw(t, "replica"),
					rapid.SampledFrom([]string{"moved", "readonly"}).Draw(t, "old"))
			}
		case 2:
			if nextSpare < len(spareIDs) {
				fmt.Fprintf(&b, "  - {at: %s, kill: {node: %s}}\n", at, node)
				fmt.Fprintf(&b, "  - {at: %s, cluster: {replace: {node: %s, by: %s}}}\n", at, node, spareIDs[nextSpare])
				nextSpare++
			}
		case 3:
			fmt.Fprintf(&b, "  - {at: %s, cluster: {down: {for: %s}}}\n", at, window)
		case 4:
			fmt.Fprintf(&b, "  - {at: %s, cluster: {restart: {for: %s, empty_slots: %dms}}}\n", at, window, rapid.IntRange(10, 2000).Draw(t, "empty-ms"))
		case 5:
			fmt.Fprintf(&b, "  - {at: %s, kill: {node: %s, restart_after: %s}}\n", at, node, window)
		case 6:
			fmt.Fprintf(&b, "  - {at: %s, drop: {node: %s}}\n", at, node)
		case 7:
			fmt.Fprintf(&b, "  - {at: %s, lose_reply: {node: %s}}\n", at, node)
		case 8:
			fmt.Fprintf(&b, "  - {at: %s, blackhole: {node: %s, for: %s}}\n", at, node, window)
		}
	}
	fmt.Fprintf(&b, "workload:\n  callers: %d\n  rate: %d/s\n  keys: %d\n  counters: %d\n  stop: 19s\n",
		rapid.IntRange(1, 8).Draw(t, "callers"), rapid.IntRange(10, 300).Draw(t, "rate"),
		rapid.IntRange(1, 16).Draw(t, "keys"), rapid.IntRange(1, 4).Draw(t, "counters"))
	if rapid.Bool().Draw(t, "pubsub") {
		// A shard subscriber and a publisher on one shard channel (sharded pub/sub follows its slot).
		ch := rapid.SampledFrom([]string{"events", "orders", "ticks"}).Draw(t, "channel")
		fmt.Fprintf(&b, "  pubsub:\n    subscribers:\n      - {kind: shard, topics: [%s], at: %dms, retry: 1s}\n", ch, rapid.IntRange(0, 2000).Draw(t, "sub-at-ms"))
		fmt.Fprintf(&b, "    publisher: {rate: %d/s, shard_channels: [%s], stop: 19s}\n", rapid.IntRange(5, 100).Draw(t, "pub-rate"), ch)
	}
	b.WriteString("expect: {invariants: all, linearizable: true}\n")
	return b.String()
}

// TestRandomClusterRunsKeepEveryInvariant runs the simulated Cluster over random topologies,
// Cluster changes and faults, and checks every invariant and linearizability on each run; a
// failure prints the shrunk scenario, resolved, ready to save under scenarios/.
func TestRandomClusterRunsKeepEveryInvariant(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		text := drawClusterScenario(t)
		sc, err := scenario.Parse([]byte(text))
		if err != nil {
			t.Fatalf("generator produced an invalid scenario: %v\n%s", err, text)
		}
		res, err := Run(sc, sc.Seed, RunOptions{})
		if err != nil {
			if strings.Contains(err.Error(), "connect") && len(sc.Faults) > 0 {
				return // the eager connect failed under faults: nothing ran
			}
			t.Fatalf("run failed: %v\n%s", err, text)
		}
		if v := check.Judge(res); !v.Pass() {
			resolved, _ := scenario.Marshal(res.Scenario)
			var lines []string
			for _, x := range v.Unexpected {
				lines = append(lines, x.Checker+" t="+x.At.String()+": "+x.Message)
				if len(lines) == 5 {
					break
				}
			}
			t.Fatalf("violations:\n%s\n--- minimal scenario (save under scenarios/):\n%s", strings.Join(lines, "\n"), resolved)
		}
	})
}
