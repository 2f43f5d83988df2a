package sim

import (
	"fmt"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/respire-go/respire/sim/check"
	"github.com/respire-go/respire/sim/scenario"
)

// drawBatchScenario draws a random run (drawScenario) whose workload adds batchers: pipelines,
// sent as one command each (engine.Multi), and MULTI/EXEC batches, sometimes with a slow_reply
// fault on INCR that makes a pipeline's replies come one by one.
func drawBatchScenario(t *rapid.T) string {
	text := drawScenario(t)
	batches := fmt.Sprintf("batches: {batchers: %d, rate: %d/s, size: %d, pipeline: %d, atomic: %d}, ",
		rapid.IntRange(1, 4).Draw(t, "batchers"), rapid.IntRange(5, 100).Draw(t, "batch-rate"),
		rapid.IntRange(1, 12).Draw(t, "batch-size"), rapid.IntRange(1, 4).Draw(t, "w-pipeline"),
		rapid.IntRange(0, 2).Draw(t, "w-atomic"))
	text = strings.Replace(text, "workload: {", "workload: {"+batches, 1)
	if rapid.Bool().Draw(t, "slow-incr") {
		slow := fmt.Sprintf("  - {at: %dms, slow_reply: {node: r1, commands: [INCR], keys: \"b*\", extra: %dms, for: %dms}}\n",
			rapid.IntRange(500, 15000).Draw(t, "slow-at-ms"), rapid.IntRange(1, 300).Draw(t, "slow-extra-ms"),
			rapid.IntRange(10, 4000).Draw(t, "slow-for-ms"))
		if !strings.Contains(text, "faults:\n") {
			text = strings.Replace(text, "workload: {", "faults:\nworkload: {", 1)
		}
		text = strings.Replace(text, "faults:\n", "faults:\n"+slow, 1)
	}
	return text
}

// TestRandomBatchRunsKeepEveryInvariant runs random fault timelines with batchers next to the
// callers, and checks every invariant (batch-entries and no-replay judge each pipeline's INCRs)
// and linearizability on each.
func TestRandomBatchRunsKeepEveryInvariant(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		text := drawBatchScenario(t)
		sc, err := scenario.Parse([]byte(text))
		if err != nil {
			t.Fatalf("generator produced an invalid scenario: %v\n%s", err, text)
		}
		if sc.Workload.Batches == nil {
			t.Fatalf("no batchers drawn:\n%s", text)
		}
		res, err := Run(sc, sc.Seed, RunOptions{})
		if err != nil {
			if strings.Contains(err.Error(), "connect") && len(sc.Faults) > 0 {
				return // a vacuous draw: the eager connect failed under faults
			}
			t.Fatalf("run failed: %v\n%s", err, text)
		}
		if v := check.Judge(res); !v.Pass() {
			var lines []string
			for _, x := range v.Unexpected {
				lines = append(lines, x.Checker+" t="+x.At.String()+": "+x.Message)
				if len(lines) == 5 {
					break
				}
			}
			t.Fatalf("violations:\n%s\n--- scenario:\n%s", strings.Join(lines, "\n"), text)
		}
	})
}
