package simtest_test

import (
	"flag"
	"fmt"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/respire-go/respire/sim/scenario"
	"github.com/respire-go/respire/simtest"
)

// recorder is a rapid.TB that records a property's failure instead of failing the test: the
// positive control runs a property that must fail, and fails if it does not. Like a
// testing.T, its FailNow, Fatal and Fatalf end the calling goroutine.
type recorder struct {
	failed bool
	msgs   []string
}

func (r *recorder) Helper()                   {}
func (r *recorder) Name() string              { return "positive-control" }
func (r *recorder) Logf(f string, a ...any)   { r.msgs = append(r.msgs, fmt.Sprintf(f, a...)) }
func (r *recorder) Log(a ...any)              { r.msgs = append(r.msgs, fmt.Sprint(a...)) }
func (r *recorder) Skipf(f string, a ...any)  { panic("skip: " + fmt.Sprintf(f, a...)) }
func (r *recorder) Skip(a ...any)             { panic(fmt.Sprint(a...)) }
func (r *recorder) SkipNow()                  { panic("skip") }
func (r *recorder) Errorf(f string, a ...any) { r.failed = true; r.Logf(f, a...) }
func (r *recorder) Error(a ...any)            { r.failed = true; r.Log(a...) }
func (r *recorder) Fatalf(f string, a ...any) { r.Errorf(f, a...); runtime.Goexit() }
func (r *recorder) Fatal(a ...any)            { r.Error(a...); runtime.Goexit() }
func (r *recorder) FailNow()                  { r.failed = true; runtime.Goexit() }
func (r *recorder) Fail()                     { r.failed = true }
func (r *recorder) Failed() bool              { return r.failed }

// setFlag sets one of rapid's flags for the test.
func setFlag(t *testing.T, name, value string) {
	f := flag.Lookup(name)
	if f == nil {
		t.Fatalf("rapid's -%s flag is not registered", name)
	}
	old := f.Value.String()
	if err := f.Value.Set(value); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Value.Set(old) })
}

// positiveControl sets rapid up for a property that must fail: no fail files under testdata,
// and at least 100 checks, even with -short (which divides them by five), so that a bug rapid
// usually finds within a few dozen checks is not missed.
func positiveControl(t *testing.T) {
	setFlag(t, "rapid.nofailfile", "true")
	checks := "100"
	if testing.Short() {
		checks = "500"
	}
	setFlag(t, "rapid.checks", checks)
}

// mustFail runs Check over space with the property body, which must fail: it returns the
// smallest failing run and fails the test when Check did not return or found no failure (the
// positive control found nothing). Check runs on a goroutine of its own, as a test function
// does: it must return the failing run rather than end the goroutine (FailNow) before it can be
// saved.
func mustFail(t *testing.T, cfg simtest.Config, space simtest.FaultSpace, body func(*simtest.Env), what string) (*simtest.Result, *recorder) {
	t.Helper()
	positiveControl(t)
	rec := &recorder{}
	result := make(chan *simtest.Result, 1)
	go func() {
		defer close(result)
		result <- simtest.Check(rec, cfg, space, body)
	}()
	failing, returned := <-result
	if !returned {
		t.Fatal("Check ended its goroutine instead of returning the failing run")
	}
	if !rec.failed || failing == nil {
		t.Fatalf("rapid did not find %s: %v", what, rec.msgs)
	}
	return failing, rec
}

// saveAndReplay saves the failing run's scenario under name, loads it back and replays it with
// body (keeping the trace): the replay must fail as the run did, with the same trace. It returns
// the loaded scenario and the replay.
func saveAndReplay(t *testing.T, failing *simtest.Result, name string, body func(*simtest.Env)) (*scenario.Scenario, *simtest.Result) {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := simtest.WriteScenario(path, failing.Scenario); err != nil {
		t.Fatal(err)
	}
	loaded, err := scenario.Load(path)
	if err != nil {
		t.Fatalf("the saved scenario does not load: %v", err)
	}
	if !reflect.DeepEqual(loaded.Faults, failing.Scenario.Faults) || loaded.Seed != failing.Seed {
		t.Fatalf("the saved scenario differs: faults %+v seed %d, want %+v seed %d", loaded.Faults, loaded.Seed, failing.Scenario.Faults, failing.Seed)
	}
	replay := simtest.Run(simtest.Config{Scenario: loaded, Seed: loaded.Seed, KeepTrace: true}, body)
	if !reflect.DeepEqual(replay.Failures, failing.Failures) || replay.TraceHash != failing.TraceHash {
		t.Fatalf("the saved scenario does not replay the failure: %s\nwant: %s", replay.Summary(), failing.Summary())
	}
	return loaded, replay
}

// TestNaivePaymentsDoubleChargeUnderOneLostReply is the worked example's failing half: rapid
// must find that the naive handler charges a payment twice, and shrink the timeline to one
// lost reply. The test fails if the property passes (the bug not found), if shrinking leaves
// more than that fault, or if the saved scenario does not load and replay the failure.
func TestNaivePaymentsDoubleChargeUnderOneLostReply(t *testing.T) {
	cfg := simtest.Config{Scenario: paymentScenario()}
	failing, rec := mustFail(t, cfg, simtest.FaultSpace{}, payments(chargeNaive), "the naive handler's double charge")
	faults := failing.Scenario.Faults
	if len(faults) != 1 || faults[0].LoseReply == nil {
		t.Fatalf("the smallest failing timeline is %d fault(s) (want one lost reply): %s", len(faults), failing.Summary())
	}
	if len(failing.Failures) == 0 {
		t.Fatalf("the smallest failing run recorded no failure: %s", failing.Summary())
	}
	t.Logf("smallest failing run: %s (fault at %v)", failing.Summary(), faults[0].At.Value())
	for _, m := range rec.msgs {
		if strings.Contains(m, "[rapid] failed after") {
			t.Log(strings.SplitN(m, "\n", 2)[0])
		}
	}
	saveAndReplay(t, failing, "double-charge.yaml", payments(chargeNaive))
}

// noFences returns paymentScenario without fences: the world of a client that can only read
// before it retries.
func noFences() *scenario.Scenario {
	sc := paymentScenario()
	sc.Client.EnableFences = false
	return sc
}

// TestReadFirstPaymentsDoubleChargeUnderAPartition is the positive control of the second
// mistake: reading before retrying is not enough when the lost command is still on its way.
// Under partitions of one connection's path, without fences, rapid must find a double charge
// and shrink it to one partition; the saved scenario replays it. The handler that settles
// first passes that very timeline, with fences enabled, and its trace shows the fence's kill
// (the fault occurred and the fence acted).
func TestReadFirstPaymentsDoubleChargeUnderAPartition(t *testing.T) {
	cfg := simtest.Config{Scenario: noFences()}
	space := simtest.FaultSpace{Kinds: []simtest.FaultKind{simtest.Partition}}
	failing, _ := mustFail(t, cfg, space, payments(chargeReadFirst), "the read-first handler's double charge")
	faults := failing.Scenario.Faults
	if len(faults) != 1 || faults[0].Blackhole == nil {
		t.Fatalf("the smallest failing timeline is %d fault(s) (want one partition): %s", len(faults), failing.Summary())
	}
	t.Logf("smallest failing run: %s (partition at %v for %v)", failing.Summary(), faults[0].At.Value(), faults[0].Blackhole.For.Value())
	loaded, _ := saveAndReplay(t, failing, "read-first.yaml", payments(chargeReadFirst))

	fenced := loaded.Clone()
	fenced.Client.EnableFences = true
	safe := simtest.Run(simtest.Config{Scenario: fenced, Seed: loaded.Seed, KeepTrace: true}, payments(chargeSafe))
	if safe.Failed() {
		t.Fatalf("the settling handler failed the read-first handler's timeline: %s", safe.Summary())
	}
	if tr := strings.Join(safe.Trace, "\n"); !strings.Contains(tr, "kill conn=fence#") || !strings.Contains(tr, "fence demanded") {
		t.Fatal("the settling handler's run shows no fence settled")
	}
}

// TestSafePaymentsPassOverAThousandSeeds is the worked example's passing half: the handler
// that settles an unknown outcome, then reads, then decides, never double-charges, over 1,000
// drawn timelines (lost replies, kills, drops, pauses and partitions) and seeds.
func TestSafePaymentsPassOverAThousandSeeds(t *testing.T) {
	const seeds = 1000
	res, err := simtest.Sweep(simtest.Config{Scenario: paymentScenario()}, simtest.FaultSpace{}, seeds, payments(chargeSafe))
	if err != nil {
		t.Fatal(err)
	}
	if res != nil {
		t.Fatalf("the safe handler failed: %s", res.Summary())
	}
}

// TestSafePaymentsCheck runs the settling handler's property with rapid on the test's own T, as an
// application's test would.
func TestSafePaymentsCheck(t *testing.T) {
	if failing := simtest.Check(t, simtest.Config{Scenario: paymentScenario()}, simtest.FaultSpace{}, payments(chargeSafe)); failing != nil {
		t.Fatalf("unexpected failure: %s", failing.Summary())
	}
}
