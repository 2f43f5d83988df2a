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

// TestNaivePaymentsDoubleChargeUnderOneLostReply is the worked example's failing half: rapid
// must find that the naive handler charges a payment twice, and shrink the timeline to one
// lost reply. The test fails if the property passes (the bug not found), if shrinking leaves
// more than that fault, or if the saved scenario does not load and replay the failure.
func TestNaivePaymentsDoubleChargeUnderOneLostReply(t *testing.T) {
	positiveControl(t)
	rec := &recorder{}
	cfg := simtest.Config{Scenario: paymentScenario()}
	// Check runs on a goroutine of its own, as a test function does: it must return the
	// failing run rather than end the goroutine (FailNow) before it can be saved.
	result := make(chan *simtest.Result, 1)
	go func() {
		defer close(result)
		result <- simtest.Check(rec, cfg, simtest.FaultSpace{}, payments(chargeNaive))
	}()
	failing, returned := <-result
	if !returned {
		t.Fatal("Check ended its goroutine instead of returning the failing run")
	}
	if !rec.failed || failing == nil {
		t.Fatalf("rapid did not find the naive handler's double charge: %v", rec.msgs)
	}
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

	path := filepath.Join(t.TempDir(), "double-charge.yaml")
	if err := simtest.WriteScenario(path, failing.Scenario); err != nil {
		t.Fatal(err)
	}
	loaded, err := scenario.Load(path)
	if err != nil {
		t.Fatalf("the saved scenario does not load: %v", err)
	}
	if !reflect.DeepEqual(loaded.Faults, faults) || loaded.Seed != failing.Seed {
		t.Fatalf("the saved scenario differs: faults %+v seed %d, want %+v seed %d", loaded.Faults, loaded.Seed, faults, failing.Seed)
	}
	replay := simtest.Run(simtest.Config{Scenario: loaded, Seed: loaded.Seed}, payments(chargeNaive))
	if !reflect.DeepEqual(replay.Failures, failing.Failures) || replay.TraceHash != failing.TraceHash {
		t.Fatalf("the saved scenario does not replay the failure: %s\nwant: %s", replay.Summary(), failing.Summary())
	}
}

// TestSafePaymentsPassOverAThousandSeeds is the worked example's passing half: the handler
// that reads before it retries never double-charges, over 1,000 drawn timelines and seeds.
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

// TestSafePaymentsCheck runs the safe handler's property with rapid on the test's own T, as an
// application's test would.
func TestSafePaymentsCheck(t *testing.T) {
	if failing := simtest.Check(t, simtest.Config{Scenario: paymentScenario()}, simtest.FaultSpace{}, payments(chargeSafe)); failing != nil {
		t.Fatalf("unexpected failure: %s", failing.Summary())
	}
}
