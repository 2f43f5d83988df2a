package check

import (
	"testing"

	"github.com/respire-go/respire/sim/record"
)

// TestLivenessFromDemand: counted from demand, a quiet window after the heal is no failure, the
// bound runs from the first operation called after the heal, and a run with no operation after
// it has nothing to judge; a failure after the first demand is still caught.
func TestLivenessFromDemand(t *testing.T) {
	ok := func(call, ret int) record.Op {
		return record.Op{Name: "GET", Call: ms(call), Return: ms(ret), Outcome: record.OpOK}
	}
	fail := func(call int) record.Op {
		return record.Op{Name: "GET", Call: ms(call), Return: ms(call), Outcome: record.OpFailed, Err: "refused"}
	}
	quiet := &record.Result{End: ms(10_000), Ops: []record.Op{ok(10, 11), ok(3000, 3001)}}
	heal := Liveness{After: ms(100), Within: ms(50)}
	demand := Liveness{After: ms(100), Within: ms(50), FromDemand: true}
	expectViolations(t, heal, quiet, "no operation succeeded within 50ms of 100ms")
	expectViolations(t, demand, quiet)
	expectViolations(t, demand, &record.Result{End: ms(10_000), Ops: []record.Op{ok(10, 11)}})
	// The first demand fails and nothing succeeds within the bound of it.
	broken := &record.Result{End: ms(10_000), Ops: []record.Op{fail(3000), fail(3040), fail(3060), ok(3200, 3201)}}
	expectViolations(t, demand, broken, "op 0 GET issued 60ms after heal", "no operation succeeded within 50ms of 3s")
	// A slow first demand that succeeds within the bound passes.
	expectViolations(t, demand, &record.Result{End: ms(10_000), Ops: []record.Op{fail(3000), ok(3010, 3040), ok(3100, 3101)}})
}
