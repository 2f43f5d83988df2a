package sim

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/netio/wire"
	"github.com/respire-go/respire/sim/check"
	"github.com/respire-go/respire/sim/record"
	"github.com/respire-go/respire/sim/scenario"
)

// runScenarioFile runs a scenario of scenarios/ with its own seed and fails unless its checkers
// pass.
func runScenarioFile(t *testing.T, name string) *record.Result {
	t.Helper()
	sc, err := scenario.Load("../scenarios/" + name + ".yaml")
	if err != nil {
		t.Fatal(err)
	}
	r, err := Run(sc, sc.Seed, RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if v := check.Judge(r); !v.Pass() {
		t.Fatalf("%s: %v %v", name, v.Unexpected, v.Missing)
	}
	return r
}

// recycles returns the lifetime observations of a run's command slots, in order.
func recycles(r *record.Result) (out []fsm.Lifecycle, at []time.Duration) {
	for _, st := range r.Steps {
		for _, f := range st.Effects {
			if f.Kind == fsm.Emit && f.Machine == fsm.MachineMux && f.Lifecycle.Recycle != fsm.RecycleNone {
				out = append(out, f.Lifecycle)
				at = append(at, st.Event.At)
			}
		}
	}
	return out, at
}

// TestLifetimeRecyclingUnderWorkload: every connection is replaced about every 2-3 s, and the
// workload never notices: no failure, no unknown outcome.
func TestLifetimeRecyclingUnderWorkload(t *testing.T) {
	r := runScenarioFile(t, "lifetime-recycling-under-workload")
	obs, _ := recycles(r)
	published := 0
	for _, l := range obs {
		switch l.Recycle {
		case fsm.RecyclePublished:
			published++
		case fsm.RecycleRetrying:
			t.Fatalf("a replacement failed without a fault: %v", &l)
		}
	}
	// Four slots over 19 s, each generation living 2-3 s: at least 4 * 6 publications.
	if published < 24 {
		t.Fatalf("%d publications, want at least 24", published)
	}
	for _, st := range r.Steps {
		if st.Event.Kind == fsm.ConnLost {
			t.Fatalf("a connection was lost: %v", st.Event.String())
		}
		for _, f := range st.Effects {
			if f.Kind == fsm.Emit && f.Lifecycle.SourceState == fsm.SourceDisconnected {
				t.Fatalf("a recycle emitted a disconnection: %v", f.String())
			}
		}
	}
}

// TestLifetimeReplacementRetryBackoff: refused replacements are retried with delays in
// [cap/2, cap], the cap doubling from 1 s, until the node accepts again; then one publication.
func TestLifetimeReplacementRetryBackoff(t *testing.T) {
	r := runScenarioFile(t, "lifetime-replacement-retry-backoff")
	obs, at := recycles(r)
	var delays []time.Duration
	firstPublished := time.Duration(-1)
	for i, l := range obs {
		if l.Recycle == fsm.RecycleRetrying && firstPublished < 0 {
			delays = append(delays, l.NextDelay)
			if l.Err == nil {
				t.Fatal("a retrying observation without the replacement's error")
			}
		}
		if l.Recycle == fsm.RecyclePublished && firstPublished < 0 {
			firstPublished = at[i]
		}
	}
	// Refused from 4 s to 14 s, first deadline at 5 s: retries after [0.5,1], [1,2], [2,4] and
	// [4,8] s cover the window at least up to 12.5 s.
	if len(delays) < 4 {
		t.Fatalf("retry delays %v, want at least 4", delays)
	}
	limit := time.Second
	for i, d := range delays {
		if d < limit/2 || d > limit {
			t.Fatalf("retry %d delay %v outside [%v, %v]", i+1, d, limit/2, limit)
		}
		limit = min(2*limit, 30*time.Second)
	}
	if firstPublished < 14*time.Second || firstPublished > 14*time.Second+8*time.Second {
		t.Fatalf("first publication at %v, want after the node accepts again (14 s) within one retry", firstPublished)
	}
}

// TestLivenessBlackholeIdleRead: with the idle-read bound, each connection is aborted one bound
// after its replies became pending, with a liveness error.
func TestLivenessBlackholeIdleRead(t *testing.T) {
	r := runScenarioFile(t, "liveness-blackhole-idle-read")
	lost := 0
	for _, st := range r.Steps {
		if st.Event.Kind != fsm.ConnLost {
			continue
		}
		lost++
		var le *wire.LivenessError
		if !errors.As(st.Event.Err, &le) || le.Op != "read" || le.Budget != time.Second {
			t.Fatalf("conn lost with %v, want an idle-read liveness error", st.Event.Err)
		}
		// The black hole starts at 5 s; replies pending from then on: abort at 6 s (plus the
		// latency of the write that made them pending).
		if at := st.Event.At; at < 6*time.Second || at > 6*time.Second+50*time.Millisecond {
			t.Fatalf("aborted at %v, want about 6s", at)
		}
	}
	if lost != 2 {
		t.Fatalf("%d connections aborted, want both", lost)
	}
}

// TestLivenessBlackholeWithoutBound: the same run without the bound loses no connection; the
// commands of the black hole time out with an unknown outcome.
func TestLivenessBlackholeWithoutBound(t *testing.T) {
	r := runScenarioFile(t, "liveness-blackhole-without-bound")
	for _, st := range r.Steps {
		if st.Event.Kind == fsm.ConnLost {
			t.Fatalf("a connection was lost without the bound: %v", st.Event.String())
		}
	}
	timedOut := 0
	for _, op := range r.Ops {
		if op.Outcome == record.OpUnknown && strings.Contains(op.Err, "timed out") {
			timedOut++
		}
	}
	if timedOut == 0 {
		t.Fatal("no command timed out during the black hole")
	}
}

// TestRandomRunsWithLifetimeAndLiveness runs random fault timelines and workloads (drawScenario)
// with a maximum lifetime, and sometimes the idle-read and write-stall bounds, and checks every invariant, the
// lifetime checker and linearizability on each: recycling interleaved with drops, refusals, black
// holes, pauses and kills never replays, loses or reorders a command.
func TestRandomRunsWithLifetimeAndLiveness(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		text := drawScenario(t)
		extra := fmt.Sprintf("  connection_max_lifetime: %dms\n", rapid.IntRange(50, 3000).Draw(t, "lifetime-ms"))
		if rapid.Bool().Draw(t, "lifetime-jitter") {
			extra += fmt.Sprintf("  connection_max_lifetime_jitter: %dms\n", rapid.IntRange(1, 1000).Draw(t, "jitter-ms"))
		}
		if rapid.Bool().Draw(t, "idle-read") {
			extra += fmt.Sprintf("  connection_idle_read_timeout: %dms\n", rapid.IntRange(20, 1000).Draw(t, "idle-ms"))
		}
		if rapid.Bool().Draw(t, "write-stall") {
			extra += fmt.Sprintf("  gathered_write_stall_timeout: %dms\n", rapid.IntRange(20, 1000).Draw(t, "stall-ms"))
			text = strings.Replace(text, "network: {", fmt.Sprintf("network: {send_buffer: %d, ", rapid.IntRange(1, 500).Draw(t, "send-buffer")), 1)
		}
		i := strings.Index(text, "  protocol: ")
		j := i + strings.Index(text[i:], "\n") + 1
		text = text[:j] + extra + text[j:]
		sc, err := scenario.Parse([]byte(text))
		if err != nil {
			t.Fatalf("invalid scenario: %v\n%s", err, text)
		}
		res, err := Run(sc, sc.Seed, RunOptions{})
		if err != nil {
			if strings.Contains(err.Error(), "connect") && len(sc.Faults) > 0 {
				return // a vacuous draw: the eager connect failed under faults, nothing ran
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
			t.Fatalf("violations:\n%s\n--- scenario:\n%s", strings.Join(lines, "\n"), resolved)
		}
	})
}

// TestLivenessBlackholeWriteStall: with the modelled socket buffers full, each connection is
// aborted by the write bound about 500 ms after its writes stopped reaching the node.
func TestLivenessBlackholeWriteStall(t *testing.T) {
	r := runScenarioFile(t, "liveness-blackhole-write-stall")
	lost := 0
	for _, st := range r.Steps {
		if st.Event.Kind != fsm.ConnLost {
			continue
		}
		lost++
		var le *wire.LivenessError
		if !errors.As(st.Event.Err, &le) || le.Op != "write" || le.Budget != 500*time.Millisecond {
			t.Fatalf("conn lost with %v, want a write-stall liveness error", st.Event.Err)
		}
		// The black hole starts at 5 s; the buffers fill within a few milliseconds at this rate.
		if at := st.Event.At; at < 5500*time.Millisecond || at > 5600*time.Millisecond {
			t.Fatalf("aborted at %v, want about 5.5s", at)
		}
	}
	if lost != 2 {
		t.Fatalf("%d connections aborted, want both", lost)
	}
}
