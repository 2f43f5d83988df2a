package sim

import (
	"fmt"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/respire-go/respire/sim/check"
	"github.com/respire-go/respire/sim/scenario"
)

// drawSentinelScenario draws a simulated Sentinel run: two or three data nodes, one to three
// Sentinels (some configured, the others learnt), failovers that update some Sentinels now,
// some late and some never, old primaries that diverge for a while, stale reports, +sdown/+odown, and node faults on data nodes and
// Sentinels alike, as YAML.
func drawSentinelScenario(t *rapid.T) string {
	var b strings.Builder
	fmt.Fprintf(&b, "name: rapid-sentinel\nseed: %d\nduration: 20s\n", rapid.Uint64Range(1, 1<<20).Draw(t, "seed"))
	data := []string{"r1", "r2"}
	if rapid.Bool().Draw(t, "third") {
		data = append(data, "r3")
	}
	var sentinels []string
	for i := range rapid.IntRange(1, 3).Draw(t, "sentinels") {
		sentinels = append(sentinels, fmt.Sprintf("s%d", i+1))
	}
	all := append(append([]string{}, data...), sentinels...)
	b.WriteString("topology:\n  kind: sentinel\n  nodes: [")
	for i, n := range all {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "{id: %s}", n)
	}
	configured := sentinels[:rapid.IntRange(1, len(sentinels)).Draw(t, "configured")]
	fmt.Fprintf(&b, "]\n  sentinel: {primary: r1, replicas: [%s], sentinels: [%s], configured: [%s], no_epoch: %v}\n",
		strings.Join(data[1:], ", "), strings.Join(sentinels, ", "), strings.Join(configured, ", "),
		rapid.IntRange(0, 4).Draw(t, "no-epoch") == 0)
	fmt.Fprintf(&b, "network: {latency: %dus, jitter: %dus}\n", rapid.IntRange(100, 2000).Draw(t, "latency-us"), rapid.IntRange(0, 500).Draw(t, "jitter-us"))
	fmt.Fprintf(&b, "client:\n  connections: %d\n  connect_timeout: %dms\n  command_timeout: %dms\n",
		rapid.IntRange(1, 3).Draw(t, "connections"), rapid.IntRange(100, 1000).Draw(t, "connect-ms"), rapid.IntRange(200, 2000).Draw(t, "command-ms"))
	if rapid.Bool().Draw(t, "policy") {
		initial := rapid.IntRange(0, 200).Draw(t, "initial-ms")
		fmt.Fprintf(&b, "  reconnect_policy: {initial_delay: %dms, max_delay: %dms, jitter_ratio: %s, max_attempts: %d}\n",
			initial, initial+rapid.IntRange(0, 1000).Draw(t, "extra-max-ms"),
			rapid.SampledFrom([]string{"0", "0.2", "0.5"}).Draw(t, "jitter"), rapid.IntRange(0, 6).Draw(t, "max-attempts"))
	}
	n := rapid.IntRange(0, 6).Draw(t, "faults")
	if n > 0 {
		b.WriteString("faults:\n")
	}
	epoch := 1
	for range n {
		at := fmt.Sprintf("%dms", rapid.IntRange(500, 15000).Draw(t, "at-ms"))
		window := fmt.Sprintf("%dms", rapid.IntRange(10, 3000).Draw(t, "for-ms"))
		node := rapid.SampledFrom(all).Draw(t, "node")
		switch rapid.IntRange(0, 6).Draw(t, "kind") {
		case 0, 1: // a failover, some views late, some never; or a stale report (no promotion)
			to := rapid.SampledFrom(data).Draw(t, "to")
			epoch++
			promote := ""
			if rapid.IntRange(0, 3).Draw(t, "stale") > 0 {
				promote = "promote: " + to + ", "
				if rapid.IntRange(0, 2).Draw(t, "split") == 0 {
					promote += fmt.Sprintf("split: %dms, ", rapid.IntRange(1, 3000).Draw(t, "split-ms"))
				}
			}
			var views []string
			for _, s := range sentinels {
				switch rapid.IntRange(0, 2).Draw(t, "view") {
				case 0:
					views = append(views, "{sentinel: "+s+"}")
				case 1:
					views = append(views, fmt.Sprintf("{sentinel: %s, after: %dms}", s, rapid.IntRange(1, 5000).Draw(t, "after-ms")))
				}
			}
			if len(views) == 0 {
				views = append(views, "{sentinel: "+sentinels[0]+"}")
			}
			fmt.Fprintf(&b, "  - {at: %s, sentinel: {failover: {%sprimary: %s, epoch: %d, views: [%s], quiet: %v}}}\n",
				at, promote, to, epoch, strings.Join(views, ", "), rapid.IntRange(0, 3).Draw(t, "quiet") == 0)
		case 2:
			fmt.Fprintf(&b, "  - {at: %s, sentinel: {down: {}}}\n", at)
		case 3:
			fmt.Fprintf(&b, "  - {at: %s, kill: {node: %s, restart_after: %s}}\n", at, node, window)
		case 4:
			fmt.Fprintf(&b, "  - {at: %s, blackhole: {node: %s, for: %s}}\n", at, node, window)
		case 5:
			fmt.Fprintf(&b, "  - {at: %s, drop: {node: %s}}\n", at, node)
		case 6:
			fmt.Fprintf(&b, "  - {at: %s, pause: {node: %s, for: %s}}\n", at, node, window)
		}
	}
	fmt.Fprintf(&b, "workload:\n  callers: %d\n  rate: %d/s\n  keys: %d\n  counters: %d\n  stop: 19s\n",
		rapid.IntRange(1, 8).Draw(t, "callers"), rapid.IntRange(10, 300).Draw(t, "rate"),
		rapid.IntRange(1, 16).Draw(t, "keys"), rapid.IntRange(1, 4).Draw(t, "counters"))
	b.WriteString("expect: {invariants: all, linearizable: true}\n")
	return b.String()
}

// TestRandomSentinelRunsKeepEveryInvariant runs the simulated Sentinel over random deployments,
// failovers (late, stale and quiet views included) and faults on data nodes and Sentinels, and
// checks every invariant and linearizability on each run; a failure prints the shrunk scenario,
// resolved, ready to save under scenarios/.
func TestRandomSentinelRunsKeepEveryInvariant(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		text := drawSentinelScenario(t)
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
