package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/respire-go/respire/engine"
	"github.com/respire-go/respire/sim"
	"github.com/respire-go/respire/sim/scenario"
)

// writeCapture runs a scenario in the simulator, records its steps in a capture ring of size
// events, and writes the dump to a temporary file.
func writeCapture(t *testing.T, name string, size int) string {
	t.Helper()
	sc, err := scenario.Load(filepath.Join("..", "..", "scenarios", name+".yaml"))
	if err != nil {
		t.Fatal(err)
	}
	res, err := sim.Run(sc, sc.Seed, sim.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := sc.EngineConfig()
	cfg.Capture = engine.CaptureConfig{Size: size}
	rec, err := engine.NewRecorder(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i := range res.Steps {
		ev := res.Steps[i].Event
		rec.Step(&ev)
	}
	dump, err := rec.Dump(engine.CaptureOnDemand)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), name+".jsonl")
	if err := os.WriteFile(path, dump, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestReplayCommand: a capture replays with every effect matching and its HTML timeline is
// written; a planted tamper is reported at the tampered event, with the machine and the
// expected and replayed effects, and exit status 1.
func TestReplayCommand(t *testing.T) {
	path := writeCapture(t, "restart-backoff-jitter", 64)
	code, out, errOut := command(t, "replay", path)
	if code != 0 || !strings.Contains(out, "every effect matches") || !strings.Contains(out, "from a snapshot") {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, out, errOut)
	}
	page, err := os.ReadFile(strings.TrimSuffix(path, ".jsonl") + ".html")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(page), "<svg") || !strings.Contains(string(page), "PASS") {
		t.Fatal("the HTML timeline lacks its timeline or its verdict")
	}

	// Tamper: the first step with an armed timer gets another delay.
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	target := -1
	for i := 2; i < len(lines); i++ { // after the header and the snapshot
		if strings.Contains(lines[i], `"text":"arm-timer`) {
			target = i
			lines[i] = strings.Replace(lines[i], `"text":"arm-timer timer=`, `"text":"arm-timer timer=9`, 1)
			break
		}
	}
	if target < 0 {
		t.Fatal("no armed timer in the capture")
	}
	tampered := filepath.Join(t.TempDir(), "tampered.jsonl")
	if err := os.WriteFile(tampered, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, _ = command(t, "replay", "--html", "-", tampered)
	want := "DIVERGES at event " + itoa(target-2) + " "
	if code != 1 || !strings.Contains(out, want) || !strings.Contains(out, "machine mux") ||
		!strings.Contains(out, "expected:") || !strings.Contains(out, "replayed:") {
		t.Fatalf("exit %d, want 1 and %q in\n%s", code, want, out)
	}

	if code, _, _ := command(t, "replay", filepath.Join("testdata", "typo.yaml")); code != 2 {
		t.Fatalf("a scenario file given as a capture exits %d, want 2", code)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// TestScenarioCommand: a capture of a kill and restart becomes a scenario skeleton that loads
// with the scenario loader, holds the kill, and runs.
func TestScenarioCommand(t *testing.T) {
	path := writeCapture(t, "restart-backoff-jitter", 1024)
	out := filepath.Join(t.TempDir(), "skeleton.yaml")
	code, _, errOut := command(t, "scenario", "-o", out, path)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	text, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(text), "kill: {node: r1, restart_after:") || !strings.Contains(string(text), "initial_delay: 100ms") {
		t.Fatalf("the skeleton lacks the kill or the policy:\n%s", text)
	}
	sc, err := scenario.Parse(text)
	if err != nil {
		t.Fatalf("the skeleton does not load: %v\n%s", err, text)
	}
	res, err := sim.Run(sc, sc.Seed, sim.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Steps) == 0 || len(res.Faults) == 0 {
		t.Fatalf("the skeleton ran %d steps with %d fault windows", len(res.Steps), len(res.Faults))
	}
	code, _, _ = command(t, "run", "--quiet", "--report", t.TempDir(), out)
	if code != 0 {
		t.Fatalf("respire-sim run of the skeleton exits %d", code)
	}
}
