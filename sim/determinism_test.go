package sim

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/respire-go/respire/engine"
	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/sim/record"
	"github.com/respire-go/respire/sim/scenario"
)

func testdataScenarios(t *testing.T) []string {
	t.Helper()
	paths, err := filepath.Glob("testdata/*.yaml")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no scenarios in testdata: %v", err)
	}
	return paths
}

func mustLoad(t testing.TB, path string) *scenario.Scenario {
	t.Helper()
	sc, err := scenario.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// shortened returns a scenario file with its duration (and workload) cut to at most max seconds,
// so that determinism tests over every scenario stay quick.
func shortened(t *testing.T, path string, maxSeconds int) *scenario.Scenario {
	t.Helper()
	sc := mustLoad(t, path)
	limit := time.Duration(maxSeconds) * time.Second
	if limit < sc.Duration {
		sc.Duration = limit
		if sc.Workload.Stop > limit {
			sc.Workload.Stop = limit
		}
		var kept []scenario.Fault
		for _, f := range sc.Faults {
			if f.At.Max < limit {
				kept = append(kept, f)
			}
		}
		sc.Faults = kept
		var acts []scenario.ClientAction
		for _, a := range sc.Actions {
			if a.At < limit {
				acts = append(acts, a)
			}
		}
		sc.Actions = acts
	}
	return sc
}

func run(t testing.TB, sc *scenario.Scenario, seed uint64, keep bool) *record.Result {
	t.Helper()
	res, err := Run(sc, seed, RunOptions{KeepTrace: keep})
	if err != nil {
		t.Fatalf("%s seed %d: %v", sc.Name, seed, err)
	}
	return res
}

// TestDeterminism: the same scenario and seed give the same trace, line for line, and the same
// hash, with or without keeping the lines; a different seed gives a different trace.
func TestDeterminism(t *testing.T) {
	for _, path := range testdataScenarios(t) {
		sc := shortened(t, path, 20)
		t.Run(sc.Name, func(t *testing.T) {
			a := run(t, sc, sc.Seed, true)
			b := run(t, sc, sc.Seed, true)
			c := run(t, sc, sc.Seed, false)
			if a.TraceHash != b.TraceHash || a.TraceHash != c.TraceHash {
				t.Fatalf("hashes differ: %s %s %s", a.TraceHash, b.TraceHash, c.TraceHash)
			}
			if len(a.Trace) != len(b.Trace) {
				t.Fatalf("trace lengths differ: %d and %d", len(a.Trace), len(b.Trace))
			}
			for i := range a.Trace {
				if a.Trace[i] != b.Trace[i] {
					t.Fatalf("line %d differs:\n%s\n%s", i, a.Trace[i], b.Trace[i])
				}
			}
			if c.Trace != nil {
				t.Fatal("trace lines kept without KeepTrace")
			}
			sum := sha256.Sum256([]byte(strings.Join(a.Trace, "\n")))
			if hex.EncodeToString(sum[:]) != a.TraceHash {
				t.Fatal("TraceHash is not the SHA-256 of the lines joined by newlines")
			}
			if a.Events == 0 || a.Events != b.Events || len(a.Steps) != len(b.Steps) || len(a.Ops) != len(b.Ops) {
				t.Fatalf("records differ: events %d/%d steps %d/%d ops %d/%d", a.Events, b.Events,
					len(a.Steps), len(b.Steps), len(a.Ops), len(b.Ops))
			}
			d := run(t, sc, sc.Seed+1000, false)
			if d.TraceHash == a.TraceHash {
				t.Fatal("a different seed gave the same trace")
			}
		})
	}
}

// TestResolvedScenarioReplays: a resolved scenario written to YAML and read back replays the
// same trace.
func TestResolvedScenarioReplays(t *testing.T) {
	sc := mustLoad(t, "testdata/ranges.yaml")
	for _, seed := range []uint64{3, 4} {
		res := run(t, sc, seed, false)
		data, err := scenario.Marshal(res.Scenario)
		if err != nil {
			t.Fatal(err)
		}
		fixed, err := scenario.Parse(data)
		if err != nil {
			t.Fatal(err)
		}
		if again := run(t, fixed, seed, false); again.TraceHash != res.TraceHash {
			t.Fatalf("seed %d: the resolved scenario does not replay", seed)
		}
	}
}

// TestJournalReplay: engine.Replay over the recorded step events reproduces every recorded effect.
func TestJournalReplay(t *testing.T) {
	for _, path := range testdataScenarios(t) {
		sc := shortened(t, path, 30)
		t.Run(sc.Name, func(t *testing.T) {
			res := run(t, sc, sc.Seed, false)
			if len(res.Steps) == 0 {
				t.Fatal("no steps recorded")
			}
			// Each client generation (scenario actions) replays into fresh machines, with the
			// offset of its identifiers taken off (record.ClientGen).
			bounds := []int{0}
			for _, c := range res.Clients {
				bounds = append(bounds, c.Step)
			}
			bounds = append(bounds, len(res.Steps))
			i := 0
			var got, want []byte
			var shifted []fsm.Effect
			for g := 0; g+1 < len(bounds); g++ {
				off := record.GenOffset(res.GenOf(bounds[g]))
				events := make([]fsm.Event, bounds[g+1]-bounds[g])
				for k := range events {
					events[k] = res.Steps[bounds[g]+k].Event
					record.ShiftEvent(&events[k], -off)
				}
				engine.Replay(res.Scenario.EngineConfig(), events, func(ev *fsm.Event, effects []fsm.Effect) {
					rec := res.Steps[i].Effects
					shifted = append(shifted[:0], effects...)
					record.ShiftEffects(shifted, off)
					effects = shifted
					if len(effects) != len(rec) {
						t.Fatalf("step %d (%s): %d effects replayed, %d recorded", i, ev, len(effects), len(rec))
					}
					for j := range effects {
						got = effects[j].AppendTo(got[:0])
						want = rec[j].AppendTo(want[:0])
						if string(got) != string(want) {
							t.Fatalf("step %d effect %d:\nreplayed %s\nrecorded %s", i, j, got, want)
						}
					}
					i++
				})
			}
			if i != len(res.Steps) {
				t.Fatalf("replayed %d of %d steps", i, len(res.Steps))
			}
		})
	}
}

// TestEagerConnectFailure: an eager connect that fails fails the run, returning what happened.
func TestEagerConnectFailure(t *testing.T) {
	sc, err := scenario.Parse([]byte("name: x\nduration: 10s\nfaults:\n  - {at: 0s, refuse: {node: r1, for: 1s}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(sc, 1, RunOptions{})
	if err == nil || !strings.Contains(err.Error(), "eager connect failed") || !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("got %v", err)
	}
	if res == nil || res.End >= 10*time.Second || len(res.Steps) == 0 {
		t.Fatalf("partial result: %+v", res)
	}
	sc.Client.Connect = scenario.ConnectLazy
	if _, err := Run(sc, 1, RunOptions{}); err != nil {
		t.Fatalf("lazy connect: %v", err)
	}
}

// TestEventBudget: a run exceeding its event budget stops with ErrTooManyEvents.
func TestEventBudget(t *testing.T) {
	sc := mustLoad(t, "testdata/workload.yaml")
	res, err := Run(sc, 1, RunOptions{MaxEvents: 100})
	if !errors.Is(err, ErrTooManyEvents) || res.Events != 100 {
		t.Fatalf("got %v after %d events", err, res.Events)
	}
}

// TestScenarioValidateInGo: scenarios built in Go are validated by Resolve and Run.
func TestScenarioValidateInGo(t *testing.T) {
	sc := &scenario.Scenario{Name: "go", Duration: time.Second, Client: scenario.Client{ReconnectPolicy: &scenario.PolicySpec{JitterRatio: -1}}}
	if _, err := Run(sc, 1, RunOptions{}); err == nil || !strings.Contains(err.Error(), "client.reconnect_policy.jitter_ratio") {
		t.Fatalf("got %v", err)
	}
	sc.Client.ReconnectPolicy = nil
	res, err := Run(sc, 1, RunOptions{})
	if err != nil || res.End != time.Second || len(res.Ops) != 0 {
		t.Fatalf("minimal Go scenario: %v %+v", err, res)
	}
}
