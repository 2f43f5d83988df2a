package sim

import (
	"fmt"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/respire-go/respire/sim/check"
	"github.com/respire-go/respire/sim/scenario"
)

// drawReplicaScenario draws a run with replication: one to three replicas at drawn distances
// and zones (some unknown), a drawn read policy with or without a latency band and hedging,
// short command timeouts, a replication timeline (links down and up, promotions) and node
// faults on the primary and the replicas alike (kills, black holes, pauses, drops, delays), as
// YAML.
func drawReplicaScenario(t *rapid.T) string {
	var b strings.Builder
	fmt.Fprintf(&b, "name: rapid-replica\nseed: %d\nduration: 20s\n", rapid.Uint64Range(1, 1<<20).Draw(t, "seed"))
	nodes := []string{"r1", "r2"}
	for i := range rapid.IntRange(0, 2).Draw(t, "more-replicas") {
		nodes = append(nodes, fmt.Sprintf("r%d", i+3))
	}
	zones := []string{"", "az1", "az2"}
	b.WriteString("topology:\n  nodes: [")
	for i, n := range nodes {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "{id: %s}", n)
	}
	fmt.Fprintf(&b, "]\n  replication:\n    primary_latency: %dus\n    primary_zone: %q\n    replicas:\n",
		rapid.IntRange(0, 8000).Draw(t, "primary-latency-us"), rapid.SampledFrom(zones).Draw(t, "primary-zone"))
	for _, n := range nodes[1:] {
		fmt.Fprintf(&b, "      - {id: %s, latency: %dus, zone: %q, no_serve_stale: %v}\n", n,
			rapid.IntRange(0, 8000).Draw(t, "latency-us"), rapid.SampledFrom(zones).Draw(t, "zone"), rapid.Bool().Draw(t, "no-serve-stale"))
	}
	fmt.Fprintf(&b, "network: {latency: %dus, jitter: %dus}\n", rapid.IntRange(100, 1000).Draw(t, "net-latency-us"), rapid.IntRange(0, 300).Draw(t, "jitter-us"))
	policy := rapid.SampledFrom([]string{"Primary", "Replica", "PrimaryPreferred", "ReplicaPreferred", "Nearest", "AzAffinity",
		"AzAffinityReplicasAndPrimary"}).Draw(t, "policy")
	fmt.Fprintf(&b, "client:\n  connections: %d\n  connect_timeout: %dms\n  command_timeout: %dms\n  read_from: %s\n  client_availability_zone: az1\n  replica_refresh_interval: %dms\n",
		rapid.IntRange(1, 3).Draw(t, "connections"), rapid.IntRange(100, 1000).Draw(t, "connect-ms"),
		rapid.IntRange(100, 2000).Draw(t, "command-ms"), policy, rapid.IntRange(100, 2000).Draw(t, "refresh-ms"))
	if rapid.Bool().Draw(t, "band") {
		fmt.Fprintf(&b, "  replica_latency_tolerance: %dus\n", rapid.IntRange(0, 5000).Draw(t, "tolerance-us"))
	}
	if rapid.Bool().Draw(t, "hedging") {
		fmt.Fprintf(&b, "  hedged_reads: {delay: %dms, maximum_extra_load_percent: %d}\n",
			rapid.IntRange(1, 20).Draw(t, "hedge-delay-ms"), rapid.IntRange(1, 100).Draw(t, "hedge-percent"))
	}
	if rapid.Bool().Draw(t, "policy") {
		initial := rapid.IntRange(0, 200).Draw(t, "initial-ms")
		fmt.Fprintf(&b, "  reconnect_policy: {initial_delay: %dms, max_delay: %dms, jitter_ratio: 0.2, max_attempts: %d}\n",
			initial, initial+rapid.IntRange(0, 1000).Draw(t, "extra-max-ms"), rapid.IntRange(0, 6).Draw(t, "max-attempts"))
	}
	if n := rapid.IntRange(0, 4).Draw(t, "events"); n > 0 {
		b.WriteString("replica_events:\n")
		for range n {
			at := rapid.IntRange(500, 15000).Draw(t, "event-ms")
			node := rapid.SampledFrom(nodes[1:]).Draw(t, "event-node")
			kind := rapid.SampledFrom([]string{"link_down", "link_up", "promote"}).Draw(t, "event")
			fmt.Fprintf(&b, "  - {at: %dms, %s: %s}\n", at, kind, node)
		}
	}
	if n := rapid.IntRange(0, 4).Draw(t, "faults"); n > 0 {
		b.WriteString("faults:\n")
		for range n {
			at := fmt.Sprintf("%dms", rapid.IntRange(500, 15000).Draw(t, "at-ms"))
			window := fmt.Sprintf("%dms", rapid.IntRange(10, 3000).Draw(t, "for-ms"))
			node := rapid.SampledFrom(nodes).Draw(t, "node")
			switch rapid.IntRange(0, 4).Draw(t, "kind") {
			case 0:
				fmt.Fprintf(&b, "  - {at: %s, kill: {node: %s, restart_after: %s}}\n", at, node, window)
			case 1:
				fmt.Fprintf(&b, "  - {at: %s, blackhole: {node: %s, for: %s}}\n", at, node, window)
			case 2:
				fmt.Fprintf(&b, "  - {at: %s, drop: {node: %s}}\n", at, node)
			case 3:
				fmt.Fprintf(&b, "  - {at: %s, pause: {node: %s, for: %s}}\n", at, node, window)
			case 4:
				fmt.Fprintf(&b, "  - {at: %s, delay: {node: %s, extra: %dms, for: %s}}\n", at, node, rapid.IntRange(1, 50).Draw(t, "extra-ms"), window)
			}
		}
	}
	fmt.Fprintf(&b, "workload:\n  callers: %d\n  rate: %d/s\n  keys: %d\n  counters: %d\n  stop: 19s\n  mix: {get: 40, set: 20, del: 5, incr: 10, mget: 20, mset: 5}\n",
		rapid.IntRange(1, 8).Draw(t, "callers"), rapid.IntRange(10, 300).Draw(t, "rate"),
		rapid.IntRange(1, 16).Draw(t, "keys"), rapid.IntRange(1, 4).Draw(t, "counters"))
	b.WriteString("expect: {invariants: all, linearizable: true}\n")
	return b.String()
}

// TestRandomReplicaRunsKeepEveryInvariant runs reads from replicas over random deployments,
// policies, hedging, replication timelines and faults, and checks every invariant (the replica
// checkers among them) and linearizability, with the staleness rule, on each run; a failure
// prints the shrunk scenario, resolved, ready to save under scenarios/.
func TestRandomReplicaRunsKeepEveryInvariant(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		text := drawReplicaScenario(t)
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
