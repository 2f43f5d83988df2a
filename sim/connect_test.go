package sim

import (
	"strings"
	"testing"

	"github.com/respire-go/respire/sim/check"
)

// TestExpectedConnectFailure: a scenario expecting its eager connect to fail ends at the failure
// and passes; the same scenario whose connect succeeds fails expect-connect (the positive
// control); without the expectation the failure is a run error, as before.
func TestExpectedConnectFailure(t *testing.T) {
	sc := mustLoad(t, "../scenarios/connect-fails-wrongpass.yaml")
	res, err := Run(sc, sc.Seed, RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.ConnectError, "WRONGPASS") || len(res.Ops) != 0 || res.End >= sc.Duration {
		t.Fatalf("connect error %q, %d ops, ended at %v", res.ConnectError, len(res.Ops), res.End)
	}
	if v := check.Judge(res); !v.Pass() {
		t.Fatalf("expected failure judged as a failure: %+v", v)
	}
	good := sc.Clone()
	good.Client.Password = "s3cret"
	res, err = Run(good, good.Seed, RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	v := check.Judge(res)
	if v.Pass() || v.Unexpected[0].Checker != check.CheckExpectConnect {
		t.Fatalf("a successful connect passed expect.connect: %+v", v)
	}
	plain := sc.Clone()
	plain.Expect.Connect = nil
	if _, err := Run(plain, plain.Seed, RunOptions{}); err == nil || !strings.Contains(err.Error(), "eager connect failed") {
		t.Fatalf("without the expectation, want the run error, got %v", err)
	}
}
