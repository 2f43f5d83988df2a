package sim

import (
	"strings"
	"testing"
	"time"

	"github.com/respire-go/respire/sim/check"
	"github.com/respire-go/respire/sim/record"
)

// runClusterFile runs a scenario file with its own seed and fails the test unless it passes
// its checkers.
func runClusterFile(t *testing.T, path string) *record.Result {
	t.Helper()
	sc := mustLoad(t, path)
	res := run(t, sc, sc.Seed, false)
	if v := check.Judge(res); !v.Pass() {
		t.Fatalf("%s: unexpected %v, missing %v", sc.Name, v.Unexpected, v.Missing)
	}
	return res
}

// serverErrors counts the operations answered with an error reply of code.
func serverErrors(res *record.Result, code string) int {
	n := 0
	for _, op := range res.Ops {
		if strings.HasPrefix(op.ServerError, code+" ") {
			n++
		}
	}
	return n
}

// servedCodes counts the error replies the nodes wrote, by code.
func servedCodes(res *record.Result) map[string]int {
	m := map[string]int{}
	for _, s := range res.Served {
		if s.Code != "" {
			m[s.Code]++
		}
	}
	return m
}

// TestClusterSlotMigration: the migration window makes the source answer ASK, which the client
// follows with ASKING; after it the source answers MOVED. No caller sees either.
func TestClusterSlotMigration(t *testing.T) {
	res := runClusterFile(t, "../scenarios/cluster-slot-migration.yaml")
	codes := servedCodes(res)
	if codes["ASK"] == 0 || codes["MOVED"] == 0 {
		t.Fatalf("want ASK and MOVED replies from the nodes, got %v", codes)
	}
	if n := serverErrors(res, "ASK") + serverErrors(res, "MOVED"); n != 0 {
		t.Fatalf("%d callers got a redirect as their answer", n)
	}
	// b1 applied commands for the migrating slots during the ASK window: after ASKING.
	during := 0
	for _, a := range res.Applies {
		if a.Node == "b1" && a.At >= 3*time.Second && a.At < 6*time.Second {
			during++
		}
	}
	if during == 0 {
		t.Fatal("b1 applied nothing during the migration window")
	}
}

// TestClusterMovedSameHost: a MOVED naming the endpoint the command was sent to (the shard's
// DNS name now resolves to the new primary, the open connections still reach the old one) is not
// bounced between the stale connections until the budget is spent: no caller gets a MOVED.
// Regression: the engine sent the command back to the same node five times and answered MOVED
// for about 2 s, until the debounced refresh.
func TestClusterMovedSameHost(t *testing.T) {
	res := runClusterFile(t, "../scenarios/cluster-moved-same-host.yaml")
	if codes := servedCodes(res); codes["MOVED"] == 0 {
		t.Fatalf("the old primary answered no MOVED: %v", codes)
	}
	if n := serverErrors(res, "MOVED"); n != 0 {
		t.Fatalf("%d callers got MOVED as their answer", n)
	}
}
