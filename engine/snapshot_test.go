package engine_test

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/respire-go/respire/engine"
	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/sim"
	"github.com/respire-go/respire/sim/record"
	"github.com/respire-go/respire/sim/scenario"
	"pgregory.net/rapid"
)

// snapshotScenarios are the scenarios whose runs the snapshot property draws from: standalone,
// pub/sub, dedicated, lifetime, Cluster and Sentinel clients, so that every machine is covered.
var snapshotScenarios = []string{
	"slot-exhaustion-keeps-healthy-slots", "restart-backoff-jitter", "pubsub-subscribe-during-recovery",
	"dedicated-concurrent-budgets", "lifetime-recycling-under-workload", "cluster-node-replaced-refusing",
	"cluster-slot-migration", "sentinel-failover", "sentinel-split-brain", "accept-then-drop-episodes",
	"all-slots-exhausted", "wrongpass-exhausts", "no-policy-demand-driven",
}

// simRuns caches the runs of simRun: the properties draw from a few runs many times.
var simRuns = map[string]struct {
	sc  *scenario.Scenario
	res *record.Result
}{}

// simRun runs a scenario, cut to at most 30 virtual seconds, for seed (once per test binary).
func simRun(t testing.TB, name string, seed uint64) (*scenario.Scenario, *record.Result) {
	t.Helper()
	key := name + "/" + strconv.FormatUint(seed, 10)
	if r, ok := simRuns[key]; ok {
		return r.sc, r.res
	}
	sc, err := scenario.Load(filepath.Join("..", "scenarios", name+".yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if limit := 30 * time.Second; sc.Duration > limit {
		sc.Duration = limit
		if sc.Workload.Stop > limit {
			sc.Workload.Stop = limit
		}
	}
	res, err := sim.Run(sc, seed, sim.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	simRuns[key] = struct {
		sc  *scenario.Scenario
		res *record.Result
	}{sc, res}
	return sc, res
}

func effectsText(effects []fsm.Effect) string {
	var b []byte
	for i := range effects {
		b = append(b, effects[i].Machine.String()...)
		b = append(b, ' ')
		b = effects[i].AppendTo(b)
		b = append(b, '\n')
	}
	return string(b)
}

// TestSnapshotTailReplaysAsFullReplay is the snapshot contract as a property: for a run of a
// random scenario and seed, and a random point in its journal, restoring a snapshot taken at
// that point and replaying the events after it gives the same effects as replaying the whole
// journal from fresh machines, and the same as the run recorded.
func TestSnapshotTailReplaysAsFullReplay(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		name := rapid.SampledFrom(snapshotScenarios).Draw(rt, "scenario")
		seed := rapid.Uint64Range(1, 3).Draw(rt, "seed")
		key := name + "/" + strconv.FormatUint(seed, 10)
		sc, res := simRun(t, name, seed)
		cfg := sc.EngineConfig()
		if len(res.Steps) < 2 {
			rt.Fatalf("run of %s recorded %d steps", key, len(res.Steps))
		}
		split := rapid.IntRange(0, len(res.Steps)-1).Draw(rt, "split")
		full, err := engine.NewReplayer(cfg)
		if err != nil {
			rt.Fatal(err)
		}
		for i := 0; i < split; i++ {
			ev := res.Steps[i].Event
			full.Step(&ev)
		}
		snap, err := full.Snapshot(nil)
		if err != nil {
			rt.Fatal(err)
		}
		tail, err := engine.RestoreReplayer(snap)
		if err != nil {
			rt.Fatal(err)
		}
		again, err := tail.Snapshot(nil)
		if err != nil {
			rt.Fatal(err)
		}
		if string(again) != string(snap) {
			rt.Fatalf("a restored snapshot encodes differently:\n%s\n%s", snap, again)
		}
		for i := split; i < len(res.Steps); i++ {
			ev := res.Steps[i].Event
			ev2 := ev
			want := effectsText(full.Step(&ev))
			got := effectsText(tail.Step(&ev2))
			if got != want {
				rt.Fatalf("step %d (%s) after a snapshot at %d:\nfull replay:\n%s\nsnapshot replay:\n%s", i, ev.String(), split, want, got)
			}
			if rec := strings.TrimSpace(effectsText(res.Steps[i].Effects)); rec != strings.TrimSpace(want) {
				rt.Fatalf("step %d replayed to\n%s\nbut the run recorded\n%s", i, want, rec)
			}
		}
	})
}
