package check

import (
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/respire-go/respire/sim/record"
	"github.com/respire-go/respire/sim/scenario"
)

// TestRegistryMatchesScenario: the loader's list of checker names is exactly the checkers this
// package has, so the loader refuses no real checker and accepts no missing one.
func TestRegistryMatchesScenario(t *testing.T) {
	sc, err := scenario.Parse([]byte("name: x\nduration: 1s\nexpect: {liveness: {within: 1s}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for name := range registry(&record.Result{Scenario: sc}) {
		got = append(got, name)
	}
	want := slices.Clone(scenario.CheckerNames)
	sort.Strings(got)
	sort.Strings(want)
	if !slices.Equal(got, want) {
		t.Fatalf("checkers %v, scenario.CheckerNames %v", got, want)
	}
	for _, name := range AllInvariants {
		if !slices.Contains(want, name) {
			t.Fatalf("invariant %q is not a known checker name", name)
		}
	}
}

// TestUnknownCheckerFails: a scenario built in Go (no loader) that selects a checker no one has
// fails its run, and expect.fail cannot excuse it. The old selection dropped the name and passed.
func TestUnknownCheckerFails(t *testing.T) {
	for _, field := range []string{"invariants", "fail"} {
		sc, err := scenario.Parse([]byte("name: x\nduration: 1s\nexpect: {invariants: [outcomes]}\n"))
		if err != nil {
			t.Fatal(err)
		}
		if field == "invariants" {
			sc.Expect.Invariants.Names = append(sc.Expect.Invariants.Names, "no-such-checker")
		} else {
			sc.Expect.Fail = []string{"no-such-checker"}
		}
		v := Judge(&record.Result{Scenario: sc, End: time.Second})
		if v.Pass() {
			t.Fatalf("%s: a run selecting an unknown checker passed: %+v", field, v)
		}
		if len(v.Unexpected) != 1 || v.Unexpected[0].Checker != CheckScenario {
			t.Fatalf("%s: want one %s violation, got %+v", field, CheckScenario, v.Unexpected)
		}
	}
	// Control: the same scenario without the unknown name passes.
	sc, _ := scenario.Parse([]byte("name: x\nduration: 1s\nexpect: {invariants: [outcomes]}\n"))
	if v := Judge(&record.Result{Scenario: sc, End: time.Second}); !v.Pass() {
		t.Fatalf("clean control failed: %+v", v)
	}
}
