package check

import (
	"errors"
	"testing"
	"time"

	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/netio/wire"
	"github.com/respire-go/respire/sim/record"
	"github.com/respire-go/respire/sim/scenario"
)

// poolSteps builds synthetic engine steps of the dedicated pool.
type poolSteps struct {
	steps []record.Step
	at    time.Duration
}

func (p *poolSteps) step(ev fsm.Event, effects ...fsm.Effect) {
	p.at += time.Millisecond
	ev.At = p.at
	if ev.Kind == fsm.Demanded || ev.Kind == fsm.Withdrew {
		ev.Machine = fsm.MachinePool
	}
	for i := range effects {
		effects[i].Machine = fsm.MachinePool
	}
	p.steps = append(p.steps, record.Step{Event: ev, Effects: effects})
}

func pc(n uint64) fsm.ConnID { return fsm.ConnID(fsm.IDBase(fsm.MachinePool) + n) }

func pt(n uint64) fsm.TimerID { return fsm.TimerID(fsm.IDBase(fsm.MachinePool) + n) }

func dial(w fsm.WaiterID, conn fsm.ConnID, attempt int) fsm.Effect {
	return fsm.Effect{Kind: fsm.Dial, Slot: -1, Conn: conn, Attempt: attempt, Waiter: w}
}

func answer(w fsm.WaiterID, o fsm.Outcome, conn fsm.ConnID) fsm.Effect {
	return fsm.Effect{Kind: fsm.Complete, Waiter: w, Outcome: o, Slot: -1, Conn: conn}
}

var (
	errRefusedTest = errors.New("refused")
	errWrongPass   = &wire.ConnectError{Stage: wire.StageHandshake, Err: &wire.HandshakeError{Command: "HELLO", Code: "WRONGPASS", Message: "WRONGPASS invalid"}}
	errLoading     = &wire.ConnectError{Stage: wire.StageHandshake, Err: &wire.HandshakeError{Command: "HELLO", Code: "LOADING", Message: "LOADING loading"}}
)

func TestRentBudgetControl(t *testing.T) {
	pol := &fsm.Policy{InitialDelay: time.Millisecond, MaxAttempts: 1}
	var clean poolSteps
	clean.step(fsm.Event{Kind: fsm.Demanded, Waiter: 1}, dial(1, pc(1), 0))
	clean.step(fsm.Event{Kind: fsm.Demanded, Waiter: 2}, dial(2, pc(2), 0))
	clean.step(fsm.Event{Kind: fsm.DialFailed, Conn: pc(1), Err: errRefusedTest}, fsm.Effect{Kind: fsm.ArmTimer, Timer: pt(3), After: time.Millisecond, Waiter: 1})
	clean.step(fsm.Event{Kind: fsm.TimerFired, Timer: pt(3)}, dial(1, pc(4), 1))
	clean.step(fsm.Event{Kind: fsm.DialFailed, Conn: pc(4), Err: errRefusedTest}, answer(1, fsm.OutcomeExhausted, 0))
	ops := []record.DedicatedOp{{ID: 1, Kind: "PUSH", Waiters: []fsm.WaiterID{1}}, {ID: 2, Kind: "PUSH", Waiters: []fsm.WaiterID{2}}}
	expectViolations(t, RentBudget{Policy: pol}, &record.Result{Steps: clean.steps, Dedicated: ops})

	// A rent dialing beyond its budget, one numbering attempts with a shared counter, and an
	// operation that rented again.
	over := clean
	over.steps = append([]record.Step(nil), clean.steps...)
	over.step(fsm.Event{Kind: fsm.Demanded, Waiter: 3}, dial(3, pc(5), 1))
	over.step(fsm.Event{Kind: fsm.TimerFired, Timer: pt(9)}, dial(2, pc(6), 1), dial(2, pc(7), 2))
	over.step(fsm.Event{Kind: fsm.Demanded, Waiter: 4}, dial(4, pc(8), 0))
	ops = append(ops, record.DedicatedOp{ID: 3, Kind: "TX", Waiters: []fsm.WaiterID{3}}, record.DedicatedOp{ID: 4, Kind: "PUSH", Waiters: []fsm.WaiterID{1, 4}})
	expectViolations(t, RentBudget{Policy: pol}, &record.Result{Steps: over.steps, Dedicated: ops},
		"rent 2 made 3 connection attempts, budget 2", "rent 3 dialed attempt 1 as its attempt 1",
		"op 2 PUSH made 3 connection attempts", "op 4 PUSH made 3 connection attempts across 2 rents")
	// Without a policy the budget is one attempt.
	expectViolations(t, RentBudget{}, &record.Result{Steps: clean.steps[:2]})
}

func TestRentPermanentControl(t *testing.T) {
	var clean poolSteps
	clean.step(fsm.Event{Kind: fsm.Demanded, Waiter: 1}, dial(1, pc(1), 0))
	clean.step(fsm.Event{Kind: fsm.DialFailed, Conn: pc(1), Err: errLoading}, fsm.Effect{Kind: fsm.ArmTimer, Timer: pt(2), Waiter: 1})
	clean.step(fsm.Event{Kind: fsm.TimerFired, Timer: pt(2)}, dial(1, pc(3), 1))
	clean.step(fsm.Event{Kind: fsm.DialFailed, Conn: pc(3), Err: errWrongPass, Class: fsm.Permanent}, answer(1, fsm.OutcomeFailed, 0))
	expectViolations(t, RentPermanent{}, &record.Result{Steps: clean.steps})

	// The transport called WRONGPASS transient: the rent retried it.
	var planted poolSteps
	planted.step(fsm.Event{Kind: fsm.Demanded, Waiter: 1}, dial(1, pc(1), 0))
	planted.step(fsm.Event{Kind: fsm.DialFailed, Conn: pc(1), Err: errWrongPass}, fsm.Effect{Kind: fsm.ArmTimer, Timer: pt(2), Waiter: 1})
	planted.step(fsm.Event{Kind: fsm.TimerFired, Timer: pt(2)}, dial(1, pc(3), 1))
	planted.step(fsm.Event{Kind: fsm.Demanded, Waiter: 4}, dial(4, pc(4), 0))
	ops := []record.DedicatedOp{{ID: 1, Waiters: []fsm.WaiterID{1, 4}}}
	expectViolations(t, RentPermanent{}, &record.Result{Steps: planted.steps, Dedicated: ops},
		"rent 1 was not answered at once", "rent 1 dialed attempt 1 after a permanent failure", "op 1 dialed again (rent 4)")
	if !permanentFailure(errWrongPass) || permanentFailure(errLoading) || permanentFailure(errRefusedTest) {
		t.Fatal("independent classification")
	}
}

func TestDedicatedNoResendControl(t *testing.T) {
	id := uint64(record.DedicatedIDBase)
	clean := &record.Result{
		Sends: []record.Send{{CmdID: id + 1, Conn: 1}, {CmdID: id + 2, Conn: 1}, {CmdID: id + 3, Conn: 2}},
		Dedicated: []record.DedicatedOp{
			{ID: 1, Kind: "BLPOP", Cmds: []record.DedicatedCmd{{ID: id + 1, Name: "BLPOP"}}},
			{ID: 2, Kind: "TX", Cmds: []record.DedicatedCmd{{ID: id + 2, Name: "WATCH"}, {ID: id + 3, Name: "EXEC"}, {ID: id + 9, Name: "EXEC"}}},
		},
	}
	expectViolations(t, DedicatedNoResend{}, clean)
	planted := &record.Result{
		Sends: []record.Send{{CmdID: id + 1, Conn: 1}, {CmdID: id + 4, Conn: 3, At: ms(5)}, {CmdID: id + 3, Conn: 2}, {CmdID: id + 3, Conn: 4}},
		Dedicated: []record.DedicatedOp{
			{ID: 1, Kind: "BLPOP", Cmds: []record.DedicatedCmd{{ID: id + 1, Name: "BLPOP"}, {ID: id + 4, Name: "BLPOP"}}},
			{ID: 2, Kind: "TX", Cmds: []record.DedicatedCmd{{ID: id + 3, Name: "EXEC"}}},
		},
	}
	expectViolations(t, DedicatedNoResend{}, planted, "op 1 wrote its BLPOP 2 times", "op 2 wrote its EXEC 2 times")
}

func TestPoolControl(t *testing.T) {
	cfg := fsm.PoolConfig{MaximumSize: 2, MaximumIdle: 1}
	var clean poolSteps
	clean.step(fsm.Event{Kind: fsm.Demanded, Waiter: 1}, dial(1, pc(1), 0))
	clean.step(fsm.Event{Kind: fsm.HandshakeDone, Conn: pc(1)}, answer(1, fsm.OutcomeGranted, pc(1)))
	clean.step(fsm.Event{Kind: fsm.Demanded, Waiter: 2}, dial(2, pc(2), 0))
	clean.step(fsm.Event{Kind: fsm.Demanded, Waiter: 3})
	clean.step(fsm.Event{Kind: fsm.Returned, Conn: pc(1), Healthy: true}, answer(3, fsm.OutcomeGranted, pc(1)))
	clean.step(fsm.Event{Kind: fsm.Withdrew, Waiter: 2}, fsm.Effect{Kind: fsm.Close, Conn: pc(2)}, answer(2, fsm.OutcomeCancelled, 0))
	clean.step(fsm.Event{Kind: fsm.DialFailed, Conn: pc(2), Err: errRefusedTest})
	clean.step(fsm.Event{Kind: fsm.Returned, Conn: pc(1), Healthy: true})
	clean.step(fsm.Event{Kind: fsm.Disposed}, fsm.Effect{Kind: fsm.Close, Conn: pc(1)})
	id := uint64(record.DedicatedIDBase)
	owned := []record.DedicatedOp{{ID: 1, Outcome: record.DedicatedOK, Waiters: []fsm.WaiterID{1}, Cmds: []record.DedicatedCmd{{ID: id + 1, Name: "RPUSH"}}},
		{ID: 2, Outcome: record.DedicatedOK, Waiters: []fsm.WaiterID{3}, Cmds: []record.DedicatedCmd{{ID: id + 2, Name: "RPUSH"}}}}
	// Op 1 writes while it holds conn 1 (granted at 2ms, returned at 5ms), op 2 after conn 1 was
	// handed to it at 5ms.
	sends := []record.Send{{CmdID: id + 1, Conn: pc(1), At: ms(2)}, {CmdID: id + 2, Conn: pc(1), At: ms(6)}}
	expectViolations(t, Pool{Config: cfg}, &record.Result{Steps: clean.steps, Dedicated: owned, Sends: sends})
	// Op 1 writes again on conn 1 after giving it back.
	sends = append(sends, record.Send{CmdID: id + 3, Conn: pc(1), At: ms(6)})
	owned[0].Cmds = append(owned[0].Cmds, record.DedicatedCmd{ID: id + 3, Name: "LLEN"})
	expectViolations(t, Pool{Config: cfg}, &record.Result{Steps: clean.steps, Dedicated: owned, Sends: sends},
		"op 1 wrote LLEN (command "+u(id+3)+") on conn "+u(uint64(pc(1)))+", which it did not hold")

	var planted poolSteps
	planted.step(fsm.Event{Kind: fsm.Demanded, Waiter: 1}, dial(1, pc(1), 0))
	planted.step(fsm.Event{Kind: fsm.HandshakeDone, Conn: pc(1)}, answer(1, fsm.OutcomeGranted, pc(1)))
	planted.step(fsm.Event{Kind: fsm.Demanded, Waiter: 2}, answer(2, fsm.OutcomeGranted, pc(1)))
	planted.step(fsm.Event{Kind: fsm.Demanded, Waiter: 3}, dial(3, pc(2), 0), fsm.Effect{Kind: fsm.ArmTimer, Timer: pt(9), Waiter: 3})
	planted.step(fsm.Event{Kind: fsm.Withdrew, Waiter: 3},
		fsm.Effect{Kind: fsm.Emit, Lifecycle: fsm.Lifecycle{Source: fsm.SourceDedicated, SourceState: fsm.SourceDisconnected, Slot: -1, Episode: 1}},
		answer(3, fsm.OutcomeCancelled, 0), answer(3, fsm.OutcomeCancelled, 0))
	planted.step(fsm.Event{Kind: fsm.Demanded, Waiter: 4})
	planted.step(fsm.Event{Kind: fsm.Disposed}, dial(3, pc(5), 1))
	ops := []record.DedicatedOp{{ID: 1, Kind: "PUSH", Outcome: record.DedicatedOK}, {ID: 2, Kind: "TX"}}
	expectViolations(t, Pool{Config: cfg}, &record.Result{Steps: planted.steps, Dedicated: ops},
		"conn "+u(uint64(pc(1)))+" granted to rent 2 while rent 1 holds it",
		"dedicated capacity 3 above maximum_size 2",
		"a withdrawal or shutdown emitted a dedicated Disconnected event",
		"rent 3 answered twice",
		"dedicated dial after disposal",
		"rent 3 dialed after it was answered",
		"dedicated capacity 4 above maximum_size 2",
		"rent 4 was never answered",
		"op 2 TX never ended")
}

func TestExpectDedicatedControl(t *testing.T) {
	one, three := 1, 3
	sc := &scenario.Scenario{Expect: scenario.Expect{Dedicated: &scenario.DedicatedExpect{OK: &scenario.Bounds{Min: &three}, Conflict: &scenario.Bounds{Max: &one}}}}
	ok := &record.Result{Scenario: sc, Dedicated: []record.DedicatedOp{{Outcome: record.DedicatedOK}, {Outcome: record.DedicatedOK}, {Outcome: record.DedicatedOK}, {Outcome: record.DedicatedConflict}}}
	expectViolations(t, expectDedicated{}, ok)
	bad := &record.Result{Scenario: sc, Dedicated: []record.DedicatedOp{{Outcome: record.DedicatedOK}, {Outcome: record.DedicatedConflict}, {Outcome: record.DedicatedConflict}}}
	expectViolations(t, expectDedicated{}, bad, "dedicated ok: 1, want at least 3", "dedicated conflict: 2, want at most 1")
}
