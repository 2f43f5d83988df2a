package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/respire-go/respire/sim"
	"github.com/respire-go/respire/sim/scenario"
)

// skeletonOf writes the capture of scenario name and returns its skeleton, loaded, and its text.
func skeletonOf(t *testing.T, name string) (*scenario.Scenario, string, string) {
	t.Helper()
	path := writeCapture(t, name, 16384)
	out := filepath.Join(t.TempDir(), name+"-skeleton.yaml")
	if code, _, errOut := command(t, "scenario", "-o", out, path); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	text, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := scenario.Parse(text)
	if err != nil {
		t.Fatalf("the skeleton does not load: %v\n%s", err, text)
	}
	return sc, string(text), out
}

// runsClean runs the skeleton file with respire-sim run: it must pass its checkers.
func runsClean(t *testing.T, path string) {
	t.Helper()
	if code, out, errOut := command(t, "run", "--quiet", "--report", t.TempDir(), path); code != 0 {
		t.Fatalf("respire-sim run of the skeleton exits %d: %s %s", code, out, errOut)
	}
}

// TestScenarioCommandCluster: a Cluster client's capture (a node replaced by another at a new
// address, the old one refusing) becomes a Cluster skeleton naming every captured node, with
// the drop of the replaced node's connections at the captured time, the new node flagged as a
// topology change; it loads and runs clean.
func TestScenarioCommandCluster(t *testing.T) {
	sc, text, path := skeletonOf(t, "cluster-node-replaced-refusing")
	if !sc.IsCluster() || len(sc.Topology.Nodes) != 4 {
		t.Fatalf("want a Cluster of the 4 captured nodes:\n%s", text)
	}
	for _, want := range []string{"n3 = a1:6379", "n4 = a9:6379", "n4 was first dialed at 5001ms", "{at: 5000ms, drop: {node: n3}}"} {
		if !strings.Contains(text, want) {
			t.Fatalf("the skeleton lacks %q:\n%s", want, text)
		}
	}
	res, err := sim.Run(sc, sc.Seed, sim.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Faults) != 1 || len(res.Ops) == 0 {
		t.Fatalf("the skeleton ran %d operations with %d fault windows", len(res.Ops), len(res.Faults))
	}
	runsClean(t, path)
}

// TestScenarioCommandSentinel: a Sentinel client's capture of a failover becomes a Sentinel
// skeleton with the configured Sentinels, the primary name, both primaries the client
// validated (the second as a replica) and the failover at the time the client first saw
// trouble; the retired connections are explained by the failover, not written as a drop. It
// loads and runs clean.
func TestScenarioCommandSentinel(t *testing.T) {
	sc, text, path := skeletonOf(t, "sentinel-failover")
	if !sc.IsSentinel() {
		t.Fatalf("want a Sentinel topology:\n%s", text)
	}
	for _, want := range []string{"sentinel: {primary_name: mymaster, primary: r1, replicas: [r2], sentinels: [s1, s2, s3]}",
		"{at: 5007ms, sentinel: {failover: {promote: r2}}}"} {
		if !strings.Contains(text, want) {
			t.Fatalf("the skeleton lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "drop:") {
		t.Fatalf("the failover's retired connections became a drop:\n%s", text)
	}
	runsClean(t, path)
}
