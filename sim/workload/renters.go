package workload

import (
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/respire-go/respire/engine"
	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/netio/resp"
	"github.com/respire-go/respire/sim/record"
	"github.com/respire-go/respire/sim/scenario"
	"github.com/respire-go/respire/sim/stream"
)

// The renters rent exclusive connections for blocking pops, pushes and WATCH/MULTI/EXEC
// transactions (workload.dedicated), and record their operations (Result.Dedicated). They stand
// in for client.Client.Dedicated: one rent per operation, commands written straight to the
// granted connection, the connection given back healthy after a clean operation and discarded
// otherwise. Nothing is ever resent.

// Renter event kinds (the event's arg): issue, the deadline of operation arg-1, or, with
// renterRoundTrip set, the round-trip timer whose sequence number is in the other bits.
const (
	renterIssue     uint64 = 0
	renterRoundTrip uint64 = 1 << 62
)

// Renters runs the renters of dedicated connections (workload.dedicated).
type Renters struct {
	w          *Env
	spec       *scenario.DedicatedWorkload
	renters    []*renter
	lists      []string
	keys       []string
	cumulative [5]int
	think      float64
	nextCmd    uint64
	stopped    bool
	// rtSeq numbers the round-trip timers (round_trip_timeout.go).
	rtSeq uint64
	// Plants: rent again after a failed rent; resend a blocking command or EXEC whose
	// connection failed; write once on a connection already given back.
	reRent, resend, useAfterReturn bool
}

// renter is one renter: at most one operation at a time.
type renter struct {
	dw  *Renters
	idx int
	rng *rand.Rand
	cur *dedicatedRun
	// returned is the connection the renter's last operation gave back healthy (for the
	// use-after-return plant).
	returned   engine.Conn
	returnedID fsm.ConnID
	returnedOp int
}

// dedicatedRun is the runtime state of one operation.
type dedicatedRun struct {
	r          *renter
	idx        int
	waiter     fsm.WaiterID
	renting    bool
	cancelling bool
	conn       engine.Conn
	connID     fsm.ConnID
	// eng is the engine the connection came from (nil: the client's, Env.Engine) and retID its
	// id there (connID is the run's); cancelRead withdraws a blocking read's rent (Env.Reads).
	eng        *engine.Engine
	retID      fsm.ConnID
	cancelRead func()
	step       int
	cmds       []*engine.Command
	pending    int
	ended      bool
	reRented   bool
	resent     bool
	// stepStart is when the step's commands were sent, and rt the sequence number of its armed
	// round-trip timer (0: none), for workload.dedicated.round_trip_timeout.
	stepStart time.Duration
	rt        uint64
}

var dedicatedKinds = [...]string{"BLPOP", "BRPOP", "PUSH", "TX", "XREAD"}

// NewRenters schedules the renters of w's scenario, or returns nil when it has none.
func NewRenters(w *Env) *Renters {
	spec := w.Scenario.Workload.Dedicated
	if spec == nil {
		return nil
	}
	dw := &Renters{w: w, spec: spec, nextCmd: record.DedicatedIDBase,
		reRent: w.Scenario.Planted(scenario.PlantReRent), resend: w.Scenario.Planted(scenario.PlantResendBlocking),
		useAfterReturn: w.Scenario.Planted(scenario.PlantUseAfterReturn)}
	for i := range spec.Lists {
		dw.lists = append(dw.lists, "l"+strconv.Itoa(i))
	}
	for i := range spec.Keys {
		dw.keys = append(dw.keys, "t"+strconv.Itoa(i))
	}
	sum := 0
	for i, v := range [5]int{spec.Mix.BLPop, spec.Mix.BRPop, spec.Mix.Push, spec.Mix.Tx, spec.Mix.XRead} {
		sum += v
		dw.cumulative[i] = sum
	}
	dw.think = float64(spec.Renters) / float64(spec.Rate) * float64(time.Second)
	for i := range spec.Renters {
		r := &renter{dw: dw, idx: i, rng: rand.New(stream.New(w.Seed, stream.Dedicated, uint64(i)))}
		dw.renters = append(dw.renters, r)
		w.Sched.Schedule(spec.Start+r.thinkTime(), r, renterIssue)
	}
	return dw
}

func (r *renter) thinkTime() time.Duration {
	return time.Duration(r.rng.ExpFloat64() * r.dw.think)
}

func (r *renter) Run(arg uint64) bool {
	if arg == renterIssue {
		return r.issue()
	}
	if arg&renterRoundTrip != 0 {
		return r.roundTripTimer(arg &^ renterRoundTrip)
	}
	return r.deadline(int(arg - 1))
}

// issue starts the renter's next operation: its rent, and its deadline.
func (r *renter) issue() bool {
	dw := r.dw
	w := dw.w
	if dw.stopped || w.Sched.Now() >= dw.spec.Stop || r.cur != nil {
		return false
	}
	v := r.rng.IntN(dw.cumulative[4])
	kind := 0
	for v >= dw.cumulative[kind] {
		kind++
	}
	op := record.DedicatedOp{ID: len(w.Result.Dedicated) + 1, Renter: r.idx, Kind: dedicatedKinds[kind], Call: w.Sched.Now()}
	switch op.Kind {
	case "TX":
		op.Key = dw.keys[r.rng.IntN(len(dw.keys))]
	case "XREAD":
		op.Key = "s" + strconv.Itoa(r.rng.IntN(len(dw.lists)))
	default:
		op.Key = dw.lists[r.rng.IntN(len(dw.lists))]
	}
	w.Result.Dedicated = append(w.Result.Dedicated, op)
	run := &dedicatedRun{r: r, idx: op.ID - 1}
	r.cur = run
	w.Trace.End(w.Trace.Begin("dop issue").Int("id", op.ID).Int("renter", r.idx).Word(op.Kind).Word(op.Key))
	run.rent()
	w.Sched.After(dw.spec.Deadline, r, uint64(op.ID))
	if dw.useAfterReturn && r.returned != nil {
		// Planted bug: the last operation writes once more on the connection it gave back.
		dw.useAfterReturn = false
		dw.nextCmd++
		cmd := &engine.Command{ID: dw.nextCmd, Name: "LLEN", Frame: resp.AppendCommand(nil, "LLEN", op.Key), Done: func(*engine.Command) {}}
		rec := &w.Result.Dedicated[r.returnedOp]
		rec.Cmds = append(rec.Cmds, record.DedicatedCmd{ID: cmd.ID, Name: cmd.Name, Conn: r.returnedID})
		w.Trace.Plant("use-after-return", cmd.ID)
		cmd.Enqueued()
		r.returned.Send(cmd)
	}
	return true
}

func (run *dedicatedRun) op() *record.DedicatedOp { return &run.r.dw.w.Result.Dedicated[run.idx] }

// engine returns the engine the run's connection came from.
func (run *dedicatedRun) engine() *engine.Engine {
	if run.eng != nil {
		return run.eng
	}
	return run.r.dw.w.Engine
}

// rent asks the engine's pool for a connection; a blocking read asks the client's read path
// (Env.Reads) when it has one.
func (run *dedicatedRun) rent() {
	w := run.r.dw.w
	run.renting = true
	if op := run.op(); op.Kind == "XREAD" && w.Reads != nil {
		w.Trace.End(w.Trace.Begin("dop rent-read").Int("id", op.ID))
		run.cancelRead = w.Reads.RentRead(run.readGranted)
		return
	}
	run.waiter = w.Engine.Rent(run.granted)
	op := run.op()
	op.Waiters = append(op.Waiters, run.waiter)
	w.Trace.End(w.Trace.Begin("dop rent").Int("id", op.ID).Uint("waiter", uint64(run.waiter)))
}

// readGranted receives the answer to a blocking read's rent (Env.Reads).
func (run *dedicatedRun) readGranted(rg ReadGrant) {
	run.cancelRead = nil
	op := run.op()
	op.Waiters = append(op.Waiters, rg.Waiters...)
	if rg.Engine == nil {
		run.renting = false
		switch {
		case run.ended:
		case run.cancelling:
			run.end(record.DedicatedCancelled, "deadline")
		default:
			run.end(rentOutcome(rg.Grant.Outcome), rg.Err)
		}
		return
	}
	run.grantedOn(rg.Engine, rg.Grant, rg.RunConn)
}

// granted receives the pool's answer to the rent.
func (run *dedicatedRun) granted(g engine.Grant) { run.grantedOn(nil, g, g.ConnID) }

// grantedOn receives the answer of engine eng's pool (nil: the client's), whose connection the
// run's records name runConn.
func (run *dedicatedRun) grantedOn(eng *engine.Engine, g engine.Grant, runConn fsm.ConnID) {
	dw := run.r.dw
	w := dw.w
	run.renting = false
	if eng == nil {
		eng = w.Engine
	}
	if run.ended || run.cancelling {
		if g.Outcome == fsm.OutcomeGranted {
			eng.Return(g.ConnID, true)
		}
		if !run.ended {
			run.end(record.DedicatedCancelled, "deadline")
		}
		return
	}
	if g.Outcome == fsm.OutcomeGranted {
		run.conn, run.connID, run.eng, run.retID = g.Conn, runConn, eng, g.ConnID
		op := run.op()
		op.Conns = append(op.Conns, runConn)
		w.Trace.End(w.Trace.Begin("dop granted").Int("id", op.ID).Uint("conn", uint64(runConn)))
		run.step = 0
		run.start()
		return
	}
	if dw.reRent && !run.reRented && (g.Outcome == fsm.OutcomeFailed || g.Outcome == fsm.OutcomeExhausted) {
		// Planted bug: the failed acquisition is retried with a fresh rent and budget.
		run.reRented = true
		w.Trace.Plant("re-rent", uint64(run.op().ID))
		run.rent()
		return
	}
	errText := ""
	if g.Err != nil {
		errText = g.Err.Error()
	}
	run.end(rentOutcome(g.Outcome), errText)
}

func rentOutcome(o fsm.Outcome) string {
	switch o {
	case fsm.OutcomeFailed:
		return record.DedicatedRentFailed
	case fsm.OutcomeExhausted:
		return record.DedicatedExhausted
	case fsm.OutcomeCancelled:
		return record.DedicatedCancelled
	case fsm.OutcomeOverflow:
		return record.DedicatedOverflow
	}
	return record.DedicatedClosed
}

// start sends the commands of the operation's current step.
func (run *dedicatedRun) start() {
	op := run.op()
	id := strconv.FormatUint(run.r.dw.nextCmd+1, 10)
	switch {
	case op.Kind == "PUSH":
		run.send([]string{"RPUSH", op.Key, "p" + id})
	case op.Kind == "TX" && run.step == 0:
		run.send([]string{"WATCH", op.Key}, []string{"GET", op.Key})
	case op.Kind == "TX":
		run.send([]string{"MULTI"}, []string{"SET", op.Key, "t" + id}, []string{"EXEC"})
	case op.Kind == "XREAD":
		block := strconv.FormatInt(run.r.dw.spec.Block.Milliseconds(), 10)
		run.send([]string{"XREAD", "BLOCK", block, "STREAMS", op.Key, "$"})
	default:
		block := strconv.FormatFloat(run.r.dw.spec.Block.Seconds(), 'f', -1, 64)
		run.send([]string{op.Kind, op.Key, block})
	}
}

// send hands one step's commands to the connection, back to back.
func (run *dedicatedRun) send(cmds ...[]string) {
	dw := run.r.dw
	run.cmds = run.cmds[:0]
	run.pending = len(cmds)
	run.stepStart = dw.w.Sched.Now()
	for _, args := range cmds {
		dw.nextCmd++
		cmd := &engine.Command{ID: dw.nextCmd, Name: args[0], Frame: resp.AppendCommand(nil, args...), Done: run.cmdDone}
		run.cmds = append(run.cmds, cmd)
		op := run.op()
		op.Cmds = append(op.Cmds, record.DedicatedCmd{ID: cmd.ID, Name: cmd.Name, Conn: run.connID, Sent: run.stepStart})
	}
	run.armRoundTrip()
	conn := run.conn
	for _, cmd := range run.cmds {
		if run.ended || run.conn != conn {
			return
		}
		cmd.Enqueued()
		conn.Send(cmd)
	}
}

// cmdDone receives one command's completion.
func (run *dedicatedRun) cmdDone(cmd *engine.Command) {
	dw := run.r.dw
	w := dw.w
	if run.ended || !run.current(cmd) || !cmd.Answered() {
		return
	}
	run.pending--
	if v := cmd.Verdict(); v != engine.VerdictReplied {
		outcome := record.DedicatedFailed
		if v == engine.VerdictUnknown {
			outcome = record.DedicatedUnknown
		}
		if dw.resend && !run.resent && outcome == record.DedicatedUnknown && (cmd.Name == "BLPOP" || cmd.Name == "BRPOP" ||
			cmd.Name == "EXEC" || cmd.Name == "XREAD") {
			// Planted bug: the accepted command is sent again on a new connection.
			run.resent = true
			w.Trace.Plant("resend-blocking", cmd.ID)
			run.engine().Return(run.retID, false)
			run.conn, run.connID, run.cmds, run.pending = nil, 0, run.cmds[:0], 0
			run.rent()
			return
		}
		run.end(outcome, cmd.Err.Error())
		return
	}
	if run.pending > 0 {
		return
	}
	op := run.op()
	last := &run.cmds[len(run.cmds)-1].Reply
	for _, c := range run.cmds {
		if c.Reply.IsError() {
			run.end(record.DedicatedError, c.Reply.ErrorMessage())
			return
		}
	}
	switch {
	case op.Kind == "PUSH":
		run.end(record.DedicatedOK, "")
	case op.Kind == "TX" && run.step == 0:
		run.step = 1
		run.start()
	case op.Kind == "TX":
		if last.Kind == resp.KindNull {
			run.end(record.DedicatedConflict, "")
		} else {
			run.end(record.DedicatedOK, "")
		}
	default:
		if last.Kind == resp.KindNull {
			run.end(record.DedicatedTimeout, "")
			return
		}
		if last.Kind == resp.KindArray && last.Len() == 2 {
			op.Value = string(last.Elem(1).Str)
		}
		run.end(record.DedicatedOK, "")
	}
}

// current reports whether cmd belongs to the step in progress.
func (run *dedicatedRun) current(cmd *engine.Command) bool {
	for _, c := range run.cmds {
		if c == cmd {
			return true
		}
	}
	return false
}

// deadline ends operation idx if it is still running: a pending rent is withdrawn (its answer
// ends the operation), commands in flight are given up and their connection discarded.
func (r *renter) deadline(idx int) bool {
	run := r.cur
	if run == nil || run.idx != idx || run.ended {
		return false
	}
	w := r.dw.w
	if run.renting {
		if run.cancelling {
			return false
		}
		run.cancelling = true
		w.Trace.End(w.Trace.Begin("dop cancel").Int("id", idx+1).Uint("waiter", uint64(run.waiter)))
		if run.cancelRead != nil {
			run.cancelRead() // its answer ends the operation
			return true
		}
		w.Engine.Cancel(fsm.MachinePool, run.waiter)
		return true
	}
	// The renter stops waiting for its commands: those the connection still owns complete late,
	// unread (the engine's caller protocol, as the client's dedicated connections follow it).
	for _, cmd := range run.cmds {
		cmd.Leave()
	}
	run.end(record.DedicatedUnknown, "deadline")
	return true
}

// end records the operation's outcome, gives its connection back (healthy only after a clean
// operation) and schedules the renter's next operation.
func (run *dedicatedRun) end(outcome, errText string) {
	r := run.r
	dw := r.dw
	w := dw.w
	run.ended = true
	op := run.op()
	op.Outcome, op.Err, op.Return = outcome, errText, w.Sched.Now()
	r.returned = nil
	if run.conn != nil {
		healthy := outcome == record.DedicatedOK || outcome == record.DedicatedTimeout || outcome == record.DedicatedConflict
		run.engine().Return(run.retID, healthy)
		if healthy {
			r.returned, r.returnedID, r.returnedOp = run.conn, run.connID, run.idx
		}
		run.conn = nil
	}
	b := w.Trace.Begin("dop done")
	b = b.Int("id", op.ID)
	b = b.Str("outcome", outcome)
	if errText != "" {
		b = b.Quoted("err", errText)
	}
	w.Trace.End(b)
	if r.cur == run {
		r.cur = nil
	}
	if !dw.stopped {
		w.Sched.After(r.thinkTime(), r, renterIssue)
	}
}

// Stop stops the renters from starting operations; those in progress still record how the
// client's close ends them.
func (dw *Renters) Stop() {
	if dw != nil {
		dw.stopped = true
	}
}
