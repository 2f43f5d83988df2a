package sim

import (
	"path/filepath"
	"testing"

	"github.com/respire-go/respire/engine"
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

// TestSimulatedNodePubSub: the node's pub/sub commands over RESP2 and RESP3 (acknowledgements,
// glob patterns, shard channels, subscriber-mode restrictions).
func TestSimulatedNodePubSub(t *testing.T) {
	for _, tc := range []struct{ p, s string }{
		{"news.*", "news.sport"}, {"news.*", "news"}, {"h?llo", "hello"}, {"h?llo", "hllo"},
		{"h[ae]llo", "hallo"}, {"h[^e]llo", "hello"}, {"h[a-c]llo", "hbllo"}, {"*", ""}, {"a\\*", "a*"}, {"a\\*", "ab"},
	} {
		want := map[string]bool{"news.*|news.sport": true, "h?llo|hello": true, "h[ae]llo|hallo": true,
			"h[a-c]llo|hbllo": true, "*|": true, "a\\*|a*": true}[tc.p+"|"+tc.s]
		if got := globMatch(tc.p, tc.s); got != want {
			t.Errorf("globMatch(%q, %q) = %v", tc.p, tc.s, got)
		}
	}
	_ = engine.DeliveryGap
}
