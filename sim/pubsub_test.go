package sim

import (
	"path/filepath"
	"testing"

	"github.com/respire-go/respire/sim/check"
)

// TestPubSubScenarios: every pub/sub scenario passes its checkers over several seeds, subscribes,
// delivers messages, replays its journal exactly and is deterministic.
func TestPubSubScenarios(t *testing.T) {
	paths, err := filepath.Glob("../scenarios/pubsub-*.yaml")
	if err != nil || len(paths) < 10 {
		t.Fatalf("pub/sub scenarios: %v %v", paths, err)
	}
	for _, path := range paths {
		sc := mustLoad(t, path)
		t.Run(sc.Name, func(t *testing.T) {
			for _, seed := range []uint64{sc.Seed, 1, 2, 3} {
				res := run(t, sc, seed, false)
				if v := check.Judge(res); !v.Pass() {
					t.Fatalf("seed %d: violations %v, missing %v", seed, v.Unexpected, v.Missing)
				}
				if res.PubSub == nil || len(res.PubSub.Subscribes) == 0 || len(res.PubSub.Received) == 0 {
					t.Fatalf("seed %d: no pub/sub activity", seed)
				}
				if seed != sc.Seed {
					continue
				}
				if again := run(t, sc, seed, false); again.TraceHash != res.TraceHash {
					t.Fatal("not deterministic")
				}
				if v := (check.Replay{Config: res.Scenario.EngineConfig()}).Check(res); len(v) > 0 {
					t.Fatalf("journal replay: %v", v)
				}
			}
		})
	}
}
