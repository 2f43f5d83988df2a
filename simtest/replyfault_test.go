package simtest_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/respire-go/respire/simtest"
)

// replySpace draws garbled and wrong-kind replies to INCR, the payments' charge.
var replySpace = simtest.FaultSpace{Kinds: []simtest.FaultKind{simtest.WrongKindReply, simtest.MalformedReply},
	Commands: []string{"INCR"}}

// TestFaultSpaceDrawsReplyFaults: with Commands set, the default kinds include both reply
// faults, each drawn on the space's node and commands with a window of at most MaxDowntime.
func TestFaultSpaceDrawsReplyFaults(t *testing.T) {
	space := simtest.FaultSpace{Commands: []string{"INCR", "CLIENT INFO"}}
	gen := simtest.Faults(space)
	garbled, wrongKind, other := 0, 0, 0
	for i := 0; i < 300; i++ {
		for _, f := range gen.Example(i) {
			m := f.MalformedReply
			if m == nil {
				other++
				continue
			}
			if m.Node != "r1" || !reflect.DeepEqual(m.Commands, space.Commands) || m.For == nil ||
				m.For.Value() <= 0 || m.For.Value() > simtest.DefaultMaxDowntime {
				t.Fatalf("example %d: reply fault %+v (window %v)", i, m, m.For)
			}
			if m.WrongKind {
				wrongKind++
			} else {
				garbled++
			}
		}
	}
	if garbled == 0 || wrongKind == 0 || other == 0 {
		t.Fatalf("300 timelines drew %d garbled and %d wrong-kind replies and %d other faults; want some of each", garbled, wrongKind, other)
	}
	// Without Commands the default kinds stay the five that need none.
	for i := 0; i < 300; i++ {
		for _, f := range simtest.Faults(simtest.FaultSpace{}).Example(i) {
			if f.MalformedReply != nil {
				t.Fatalf("example %d: a reply fault drawn without Commands: %+v", i, f.MalformedReply)
			}
		}
	}
}

// TestNaivePaymentsDoubleChargeUnderAReplyFault is the positive control of the reply faults: a
// charge whose reply arrives garbled or of the wrong kind ran on the server, so the naive
// handler's retry charges twice. rapid must find it and shrink the timeline to one reply fault,
// the saved scenario must replay the failure, and the settling handler must pass that timeline,
// whose trace shows the fault (it occurred).
func TestNaivePaymentsDoubleChargeUnderAReplyFault(t *testing.T) {
	cfg := simtest.Config{Scenario: paymentScenario()}
	failing, _ := mustFail(t, cfg, replySpace, payments(chargeNaive), "the naive handler's double charge under reply faults")
	faults := failing.Scenario.Faults
	if len(faults) != 1 || faults[0].MalformedReply == nil {
		t.Fatalf("the smallest failing timeline is %d fault(s) (want one reply fault): %s", len(faults), failing.Summary())
	}
	if !strings.Contains(strings.Join(failing.Failures, "\n"), "charged 2 times") {
		t.Fatalf("the smallest failing run is not a double charge: %s", failing.Summary())
	}
	t.Logf("smallest failing run: %s (wrong kind %v at %v for %v)", failing.Summary(), faults[0].MalformedReply.WrongKind,
		faults[0].At.Value(), faults[0].MalformedReply.For.Value())

	loaded, replay := saveAndReplay(t, failing, "reply-fault.yaml", payments(chargeNaive))
	want := "fault malformed"
	if faults[0].MalformedReply.WrongKind {
		want = "fault wrong-kind"
	}
	if !strings.Contains(strings.Join(replay.Trace, "\n"), want) {
		t.Fatalf("the replayed run's trace has no %q line", want)
	}
	safe := simtest.Run(simtest.Config{Scenario: loaded, Seed: loaded.Seed, KeepTrace: true}, payments(chargeSafe))
	if safe.Failed() {
		t.Fatalf("the settling handler failed the naive handler's timeline: %s", safe.Summary())
	}
	if !strings.Contains(strings.Join(safe.Trace, "\n"), want) {
		t.Fatalf("the settling handler's run has no %q line: the fault did not occur", want)
	}
}

// TestSafePaymentsPassUnderReplyFaults: the settling handler never charges twice under every
// kind of fault, reply faults to INCR and GET included, over drawn timelines; and the reply
// faults occurred in those runs (counted from their traces), garbled and of the wrong kind.
func TestSafePaymentsPassUnderReplyFaults(t *testing.T) {
	space := simtest.FaultSpace{Commands: []string{"INCR", "GET"}}
	gen := simtest.Faults(space)
	runs := 200
	if testing.Short() {
		runs = 60
	}
	garbled, wrongKind := 0, 0
	for i := 0; i < runs; i++ {
		sc := paymentScenario()
		sc.Faults = gen.Example(i)
		res := simtest.Run(simtest.Config{Scenario: sc, Seed: uint64(i), KeepTrace: true}, payments(chargeSafe))
		if res.Failed() {
			t.Fatalf("run %d: %s", i, res.Summary())
		}
		tr := strings.Join(res.Trace, "\n")
		garbled += strings.Count(tr, "fault malformed")
		wrongKind += strings.Count(tr, "fault wrong-kind")
	}
	t.Logf("%d runs: %d garbled and %d wrong-kind replies", runs, garbled, wrongKind)
	if garbled == 0 || wrongKind == 0 {
		t.Fatalf("%d runs wrote %d garbled and %d wrong-kind replies: the faults never occurred", runs, garbled, wrongKind)
	}
	// Sweep, the API an application uses, agrees.
	if res, err := simtest.Sweep(simtest.Config{Scenario: paymentScenario()}, space, runs/4, payments(chargeSafe)); err != nil || res != nil {
		t.Fatalf("Sweep: %v %v", err, res)
	}
}
