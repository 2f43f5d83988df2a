package main

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// command runs the command with args and returns its status and outputs.
func command(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestHelpExitsZero(t *testing.T) {
	for _, args := range [][]string{{"-h"}, {"--help"}, {"run", "-h"}, {"run", "--help"}} {
		code, out, _ := command(t, args...)
		if code != 0 || !strings.Contains(out, "usage: respire-sim run") {
			t.Fatalf("%v: exit %d, output %q", args, code, out)
		}
	}
	if code, _, _ := command(t, "run", "--bogus"); code != 2 {
		t.Fatalf("an unknown flag exits %d, want 2", code)
	}
}

// TestUnknownCheckerRefused: the false pass of issue 15 (a misspelt invariant printed PASS) is a
// load error now.
func TestUnknownCheckerRefused(t *testing.T) {
	code, out, errOut := command(t, "run", "testdata/typo.yaml")
	if code != 2 || strings.Contains(out, "PASS") || !strings.Contains(errOut, `unknown checker "no-such-checker"`) ||
		!strings.Contains(errOut, "expect.invariants[1]") || !strings.Contains(errOut, "testdata/typo.yaml") {
		t.Fatalf("exit %d\nstdout %q\nstderr %q", code, out, errOut)
	}
}

// TestSweepCapsOutput: a scenario failing on every seed prints a bounded number of FAIL lines,
// writes at most --max-reports reports, and sums up the rest in its summary line. The old
// command printed two lines and wrote one report per failing seed.
func TestSweepCapsOutput(t *testing.T) {
	dir := t.TempDir()
	code, out, errOut := command(t, "run", "--seeds", "1..12", "--jobs", "2", "--max-reports", "2", "--report", dir, "testdata/wrong.yaml")
	if code != 1 {
		t.Fatalf("exit %d, want 1\n%s%s", code, out, errOut)
	}
	if n := strings.Count(out, "FAIL wrong seed="); n != maxFailLines {
		t.Fatalf("%d FAIL lines, want %d:\n%s", n, maxFailLines, out)
	}
	if !strings.Contains(out, "FAIL wrong seeds=1..12 runs=12 failed=12") || !strings.Contains(out, "(7 failing seeds not listed)") {
		t.Fatalf("no summary line:\n%s", out)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 2 {
		t.Fatalf("%d reports written, want 2", len(entries))
	}
	if !strings.Contains(out, "liveness at ") {
		t.Fatalf("FAIL lines do not name the checker and time:\n%s", out)
	}
	if strings.Contains(errOut, "\r") {
		t.Fatalf("progress written with \\r to a non-terminal: %q", errOut)
	}
}

// TestFailFastAndLazySeeds: --fail-fast stops after the first failure, and a seed range of a
// hundred million costs nothing up front (the old command built the whole job list first).
func TestFailFastAndLazySeeds(t *testing.T) {
	code, out, _ := command(t, "run", "--seeds", "1..100000000", "--jobs", "1", "--max-reports", "0", "--fail-fast", "testdata/wrong.yaml")
	if code != 1 || !strings.Contains(out, "--fail-fast") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	if !strings.Contains(out, "1 scenario(s), 1 run(s), 1 failure(s)") {
		t.Fatalf("fail-fast did not stop at the first run:\n%s", out)
	}
}

func TestRunFilter(t *testing.T) {
	code, out, _ := command(t, "run", "-run", "^fi", "testdata/wrong.yaml", "testdata/fine.yaml")
	if code != 0 || !strings.Contains(out, "PASS fine seed=5") || strings.Contains(out, "wrong") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	if code, _, errOut := command(t, "run", "-run", "nothing", "testdata/fine.yaml"); code != 2 || !strings.Contains(errOut, "no scenario matches") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
}

// TestJSONAndJUnit: --json prints one object per run and a summary object; --junit writes one
// test case per scenario, the failing one with its seeds and violations.
func TestJSONAndJUnit(t *testing.T) {
	dir := t.TempDir()
	junit := filepath.Join(dir, "junit.xml")
	code, out, _ := command(t, "run", "--json", "--seeds", "1..3", "--max-reports", "0", "--junit", junit,
		"testdata/wrong.yaml", "testdata/fine.yaml")
	if code != 1 {
		t.Fatalf("exit %d", code)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 7 {
		t.Fatalf("want 6 run objects and a summary, got %d lines:\n%s", len(lines), out)
	}
	fails := 0
	for _, l := range lines[:6] {
		var r jsonRun
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatalf("%v: %s", err, l)
		}
		if r.Verdict == "FAIL" {
			fails++
			if r.Scenario != "wrong" || len(r.Violations) == 0 || r.Violations[0].Checker != "liveness" {
				t.Fatalf("bad failing run: %s", l)
			}
		}
	}
	var sum jsonSummary
	if err := json.Unmarshal([]byte(lines[6]), &sum); err != nil || !sum.Summary || sum.Runs != 6 || sum.Failures != 3 || fails != 3 {
		t.Fatalf("summary %s (%v), %d failing runs", lines[6], err, fails)
	}
	data, err := os.ReadFile(junit)
	if err != nil {
		t.Fatal(err)
	}
	var suites junitSuites
	if err := xml.Unmarshal(data, &suites); err != nil {
		t.Fatal(err)
	}
	s := suites.Suites[0]
	if s.Tests != 2 || s.Failures != 1 || s.Cases[0].Name != "wrong" || s.Cases[0].Failure == nil ||
		!strings.Contains(s.Cases[0].Failure.Text, "seed=") || s.Cases[1].Failure != nil {
		t.Fatalf("junit:\n%s", data)
	}
}
