package sim

import (
	"strings"
	"testing"

	"github.com/respire-go/respire/sim/check"
	"github.com/respire-go/respire/sim/node"
)

// TestRestartNewRunID: the restart that asks for it brings the node back with a new run id,
// traced once; the restart that does not keeps it.
func TestRestartNewRunID(t *testing.T) {
	sc := mustLoad(t, "../scenarios/restart-new-run-id.yaml")
	res := run(t, sc, sc.Seed, true)
	if v := check.Judge(res); !v.Pass() {
		t.Fatalf("violations %v", v.Unexpected)
	}
	var lines []string
	for _, l := range res.Trace {
		if strings.Contains(l, "fault run-id") {
			lines = append(lines, l)
		}
	}
	want := "run_id=" + node.NodeID("r1#1")
	if len(lines) != 1 || !strings.HasSuffix(lines[0], want) || !strings.Contains(lines[0], "t=4.") {
		t.Fatalf("want one new run id (%s) at the first restart, got %q", want, lines)
	}
	if node.NodeID("r1#1") == node.NodeID("r1") {
		t.Fatal("the new run id equals the first")
	}
}
