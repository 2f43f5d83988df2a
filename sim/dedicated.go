package sim

import (
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/respire-go/respire/engine"
	"github.com/respire-go/respire/engine/config"
	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/netio/resp"
	"github.com/respire-go/respire/sim/stream"
)

// Dedicated connections in the simulator: the pool's configuration (client.dedicated_pool), the
// renters that rent exclusive connections for blocking pops, pushes and WATCH/MULTI/EXEC
// transactions (workload.dedicated), their records (Result.Dedicated) and their expectations
// (expect.dedicated). The renters stand in for client.Client.Dedicated: one rent per operation,
// commands written straight to the granted connection, the connection given back healthy after a
// clean operation and discarded otherwise. Nothing is ever resent.

// DedicatedPoolSpec is the YAML form of client.DedicatedPoolOptions (client.dedicated_pool),
// field for field: the same names in snake_case, the same zero values, validated by the same
// resolver (engine/config). UnblockOnCancel is not simulated.
type DedicatedPoolSpec struct {
	// MinimumSize is the floor kept by timed idle retirement.
	MinimumSize int `yaml:"minimum_size,omitempty"`
	// MaximumSize bounds connecting, rented and idle connections and backoff reservations
	// together; zero is unlimited.
	MaximumSize int `yaml:"maximum_size,omitempty"`
	// MaximumIdle bounds retained idle connections: zero (omitted) means 4, -1
	// (client.NoIdleReuse) disables idle reuse.
	MaximumIdle int `yaml:"maximum_idle,omitempty"`
	// IdleTimeout retires idle connections above MinimumSize; zero disables it, otherwise 1ms to
	// 24h.
	IdleTimeout time.Duration `yaml:"idle_timeout,omitempty"`
}

// DefaultDedicatedMaximumIdle is the pool's idle bound when client.dedicated_pool.maximum_idle
// is zero or omitted (the client's default).
const DefaultDedicatedMaximumIdle = config.DefaultDedicatedMaximumIdle

// DedicatedWorkload describes the renters of dedicated connections (workload.dedicated). Each
// renter rents a connection for one operation, runs it, gives the connection back, thinks, and
// repeats.
type DedicatedWorkload struct {
	// Renters is the number of renters (at least 1).
	Renters int `yaml:"renters"`
	// Rate is the renters' total operation rate (default 10/s): each renter's think time is
	// exponential with mean renters/rate.
	Rate Rate `yaml:"rate"`
	// Lists is the number of list keys l0..l{n-1} the pops and pushes use (default 2).
	Lists int `yaml:"lists"`
	// Keys is the number of string keys t0..t{n-1} the transactions use (default 2). They are
	// distinct from the multiplexed workload's keys.
	Keys int `yaml:"keys"`
	// Mix weighs the operations. Default: blpop 40, push 40, tx 20.
	Mix DedicatedMix `yaml:"mix"`
	// Block is the timeout of BLPOP and BRPOP (default 1s; zero blocks indefinitely).
	Block *time.Duration `yaml:"block,omitempty"`
	// Deadline bounds each operation, rent included, like a caller's context (default: block
	// plus client.command_timeout). A rent still pending is withdrawn; an operation whose
	// commands are in flight ends with an unknown outcome and its connection is discarded.
	Deadline time.Duration `yaml:"deadline"`
	// Start is when the renters start (each after a seeded stagger). Default 0.
	Start time.Duration `yaml:"start"`
	// Stop is when the renters stop starting operations. Default: the run's duration.
	Stop time.Duration `yaml:"stop"`
}

// DedicatedMix weighs the dedicated operations.
type DedicatedMix struct {
	// BLPop: BLPOP of one list with the workload's block time.
	BLPop int `yaml:"blpop,omitempty"`
	// BRPop: BRPOP of one list.
	BRPop int `yaml:"brpop,omitempty"`
	// Push: RPUSH of a unique value to one list.
	Push int `yaml:"push,omitempty"`
	// Tx: WATCH t, GET t, then MULTI, SET t <unique value>, EXEC.
	Tx int `yaml:"tx,omitempty"`
}

func (m DedicatedMix) total() int { return m.BLPop + m.BRPop + m.Push + m.Tx }

// DedicatedExpect bounds the dedicated operations' outcomes (expect.dedicated), checked by
// expect-dedicated.
type DedicatedExpect struct {
	// OK: operations that completed (a popped element, a push, a committed transaction).
	OK *Bounds `yaml:"ok,omitempty"`
	// Timeout: blocking pops whose block time expired.
	Timeout *Bounds `yaml:"timeout,omitempty"`
	// Conflict: transactions aborted because the watched key changed.
	Conflict *Bounds `yaml:"conflict,omitempty"`
	// Error: operations answered with an error reply.
	Error *Bounds `yaml:"error,omitempty"`
	// Failed: commands that failed definitely (never written).
	Failed *Bounds `yaml:"failed,omitempty"`
	// Unknown: commands written whose reply never came (the connection failed, or the deadline
	// passed).
	Unknown *Bounds `yaml:"unknown,omitempty"`
	// RentFailed: rents that failed at once (no policy, or a permanent rejection).
	RentFailed *Bounds `yaml:"rent_failed,omitempty"`
	// Exhausted: rents that exhausted their attempts.
	Exhausted *Bounds `yaml:"exhausted,omitempty"`
	// Cancelled: rents withdrawn by their operation's deadline.
	Cancelled *Bounds `yaml:"cancelled,omitempty"`
	// Closed: rents stopped by the client's close.
	Closed *Bounds `yaml:"closed,omitempty"`
	// Retried: operations whose rent needed more than one connection attempt.
	Retried *Bounds `yaml:"retried,omitempty"`
	// ConcurrentBackoff bounds the largest number of rents waiting in a backoff at once.
	ConcurrentBackoff *Bounds `yaml:"concurrent_backoff,omitempty"`
}

// Dedicated operation outcomes (DedicatedOp.Outcome).
const (
	DedicatedOK         = "ok"
	DedicatedTimeout    = "timeout"
	DedicatedConflict   = "conflict"
	DedicatedError      = "error"
	DedicatedFailed     = "failed"
	DedicatedUnknown    = "unknown"
	DedicatedRentFailed = "rent-failed"
	DedicatedExhausted  = "exhausted"
	DedicatedCancelled  = "cancelled"
	DedicatedClosed     = "closed"
	DedicatedOverflow   = "overflow"
)

// DedicatedIDBase is the first command id of dedicated operations, far above the multiplexed
// workload's ids (1, 2, 3...).
const DedicatedIDBase = 1 << 40

// DedicatedOp is one operation of a renter: its rents, connections, commands and outcome.
type DedicatedOp struct {
	// ID numbers the operations 1, 2, 3... in issue order.
	ID int
	// Renter is the renter that ran it.
	Renter int
	// Kind is BLPOP, BRPOP, PUSH or TX.
	Kind string
	// Key is the list or transaction key.
	Key string
	// Waiters are the rents made for it: one (a planted bug may rent again).
	Waiters []fsm.WaiterID
	// Conns are the connections granted to it.
	Conns []fsm.ConnID
	// Cmds are the commands it handed to connections, in order.
	Cmds []DedicatedCmd
	// Call and Return are when it started and ended.
	Call, Return time.Duration
	// Outcome is one of the Dedicated* outcomes; empty if it never ended (a violation).
	Outcome string
	// Err is the failure's text.
	Err string
	// Value is the popped element of an ok pop.
	Value string
}

// DedicatedCmd is one command of a dedicated operation.
type DedicatedCmd struct {
	ID   uint64
	Name string
	Conn fsm.ConnID
}

// applyDedicatedDefaults fills in the dedicated workload's defaults.
func (sc *Scenario) applyDedicatedDefaults() {
	d := sc.Workload.Dedicated
	if d == nil {
		return
	}
	if d.Rate == 0 {
		d.Rate = 10
	}
	if d.Lists == 0 {
		d.Lists = 2
	}
	if d.Keys == 0 {
		d.Keys = 2
	}
	if d.Mix == (DedicatedMix{}) {
		d.Mix = DedicatedMix{BLPop: 40, Push: 40, Tx: 20}
	}
	if d.Block == nil {
		b := time.Second
		d.Block = &b
	}
	if d.Deadline == 0 {
		d.Deadline = *d.Block + sc.Client.CommandTimeout
	}
	if d.Stop == 0 {
		d.Stop = sc.Duration
	}
}

// validateDedicated checks workload.dedicated and expect.dedicated (client.dedicated_pool is the
// resolver's, with the rest of the client section).
func (sc *Scenario) validateDedicated() error {
	if d := sc.Workload.Dedicated; d != nil {
		m := d.Mix
		switch {
		case d.Renters < 1:
			return fieldErr("workload.dedicated.renters", "must be at least 1")
		case d.Rate <= 0:
			return fieldErr("workload.dedicated.rate", "must be positive (such as 20/s)")
		case d.Lists < 1:
			return fieldErr("workload.dedicated.lists", "must be at least 1")
		case d.Keys < 1:
			return fieldErr("workload.dedicated.keys", "must be at least 1")
		case m.BLPop < 0 || m.BRPop < 0 || m.Push < 0 || m.Tx < 0:
			return fieldErr("workload.dedicated.mix", "weights must not be negative")
		case m.total() == 0:
			return fieldErr("workload.dedicated.mix", "needs at least one positive weight")
		case *d.Block < 0:
			return fieldErr("workload.dedicated.block", "must not be negative (zero blocks indefinitely)")
		case d.Deadline <= 0:
			return fieldErr("workload.dedicated.deadline", "must be positive")
		case d.Start < 0:
			return fieldErr("workload.dedicated.start", "must not be negative")
		case d.Stop <= d.Start:
			return fieldErr("workload.dedicated.stop", "must be after workload.dedicated.start")
		case d.Stop > sc.Duration:
			return fieldErr("workload.dedicated.stop", "must not be after the end of the run")
		}
	}
	if e := sc.Expect.Dedicated; e != nil {
		for _, b := range e.bounds() {
			if b.b == nil {
				continue
			}
			f := "expect.dedicated." + b.name
			switch {
			case b.b.Min != nil && *b.b.Min < 0:
				return fieldErr(f+".min", "must not be negative")
			case b.b.Max != nil && *b.b.Max < 0:
				return fieldErr(f+".max", "must not be negative")
			case b.b.Min != nil && b.b.Max != nil && *b.b.Max < *b.b.Min:
				return fieldErr(f+".max", "must not be below min")
			}
		}
	}
	return nil
}

type namedBounds struct {
	name string
	b    *Bounds
}

func (e *DedicatedExpect) bounds() []namedBounds {
	return []namedBounds{{"ok", e.OK}, {"timeout", e.Timeout}, {"conflict", e.Conflict}, {"error", e.Error},
		{"failed", e.Failed}, {"unknown", e.Unknown}, {"rent_failed", e.RentFailed}, {"exhausted", e.Exhausted},
		{"cancelled", e.Cancelled}, {"closed", e.Closed}, {"retried", e.Retried}, {"concurrent_backoff", e.ConcurrentBackoff}}
}

// cloneDedicated deep-copies the dedicated parts of sc into out.
func (sc *Scenario) cloneDedicated(out *Scenario) {
	out.Client.DedicatedPool = clonePtr(sc.Client.DedicatedPool)
	if d := sc.Workload.Dedicated; d != nil {
		cp := *d
		cp.Block = clonePtr(d.Block)
		out.Workload.Dedicated = &cp
	}
	if e := sc.Expect.Dedicated; e != nil {
		cp := DedicatedExpect{OK: e.OK.clone(), Timeout: e.Timeout.clone(), Conflict: e.Conflict.clone(), Error: e.Error.clone(),
			Failed: e.Failed.clone(), Unknown: e.Unknown.clone(), RentFailed: e.RentFailed.clone(), Exhausted: e.Exhausted.clone(),
			Cancelled: e.Cancelled.clone(), Closed: e.Closed.clone(), Retried: e.Retried.clone(),
			ConcurrentBackoff: e.ConcurrentBackoff.clone()}
		out.Expect.Dedicated = &cp
	}
}

// Renter event kinds (the action's arg): issue, or the deadline of operation arg-1.
const renterIssue uint64 = 0

// dedicatedWorkload runs the renters.
type dedicatedWorkload struct {
	w          *world
	spec       *DedicatedWorkload
	renters    []*renter
	lists      []string
	keys       []string
	cumulative [4]int
	think      float64
	nextCmd    uint64
	stopped    bool
	// Plants: rent again after a failed rent; resend a blocking command or EXEC whose
	// connection failed; write once on a connection already given back.
	reRent, resend, useAfterReturn bool
}

// renter is one renter: at most one operation at a time.
type renter struct {
	dw  *dedicatedWorkload
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
	step       int
	cmds       []*engine.Command
	pending    int
	ended      bool
	reRented   bool
	resent     bool
}

var dedicatedKinds = [...]string{"BLPOP", "BRPOP", "PUSH", "TX"}

func newDedicatedWorkload(w *world) *dedicatedWorkload {
	spec := w.sc.Workload.Dedicated
	if spec == nil {
		return nil
	}
	dw := &dedicatedWorkload{w: w, spec: spec, nextCmd: DedicatedIDBase,
		reRent: w.sc.Planted(PlantReRent), resend: w.sc.Planted(PlantResendBlocking),
		useAfterReturn: w.sc.Planted(PlantUseAfterReturn)}
	for i := range spec.Lists {
		dw.lists = append(dw.lists, "l"+strconv.Itoa(i))
	}
	for i := range spec.Keys {
		dw.keys = append(dw.keys, "t"+strconv.Itoa(i))
	}
	sum := 0
	for i, v := range [4]int{spec.Mix.BLPop, spec.Mix.BRPop, spec.Mix.Push, spec.Mix.Tx} {
		sum += v
		dw.cumulative[i] = sum
	}
	dw.think = float64(spec.Renters) / float64(spec.Rate) * float64(time.Second)
	for i := range spec.Renters {
		r := &renter{dw: dw, idx: i, rng: rand.New(stream.New(w.seed, stream.Dedicated, uint64(i)))}
		dw.renters = append(dw.renters, r)
		w.k.schedule(spec.Start+r.thinkTime(), r, renterIssue)
	}
	return dw
}

func (r *renter) thinkTime() time.Duration {
	return time.Duration(r.rng.ExpFloat64() * r.dw.think)
}

func (r *renter) run(arg uint64) bool {
	if arg == renterIssue {
		return r.issue()
	}
	return r.deadline(int(arg - 1))
}

// issue starts the renter's next operation: its rent, and its deadline.
func (r *renter) issue() bool {
	dw := r.dw
	w := dw.w
	if dw.stopped || w.k.now >= dw.spec.Stop || r.cur != nil {
		return false
	}
	v := r.rng.IntN(dw.cumulative[3])
	kind := 0
	for v >= dw.cumulative[kind] {
		kind++
	}
	op := DedicatedOp{ID: len(w.res.Dedicated) + 1, Renter: r.idx, Kind: dedicatedKinds[kind], Call: w.k.now}
	if op.Kind == "TX" {
		op.Key = dw.keys[r.rng.IntN(len(dw.keys))]
	} else {
		op.Key = dw.lists[r.rng.IntN(len(dw.lists))]
	}
	w.res.Dedicated = append(w.res.Dedicated, op)
	run := &dedicatedRun{r: r, idx: op.ID - 1}
	r.cur = run
	b := w.tr.begin()
	b = append(b, "dop issue"...)
	b = appendIntField(b, "id", int64(op.ID))
	b = appendIntField(b, "renter", int64(r.idx))
	b = append(b, ' ')
	b = append(b, op.Kind...)
	b = append(b, ' ')
	b = append(b, op.Key...)
	w.tr.end(b)
	run.rent()
	w.k.after(dw.spec.Deadline, r, uint64(op.ID))
	if dw.useAfterReturn && r.returned != nil {
		// Planted bug: the last operation writes once more on the connection it gave back.
		dw.useAfterReturn = false
		dw.nextCmd++
		cmd := &engine.Command{ID: dw.nextCmd, Name: "LLEN", Frame: resp.AppendCommand(nil, "LLEN", op.Key), Done: func(*engine.Command) {}}
		rec := &w.res.Dedicated[r.returnedOp]
		rec.Cmds = append(rec.Cmds, DedicatedCmd{ID: cmd.ID, Name: cmd.Name, Conn: r.returnedID})
		w.tracePlant("use-after-return", cmd.ID)
		cmd.Enqueued()
		r.returned.Send(cmd)
	}
	return true
}

func (run *dedicatedRun) op() *DedicatedOp { return &run.r.dw.w.res.Dedicated[run.idx] }

// rent asks the engine's pool for a connection.
func (run *dedicatedRun) rent() {
	w := run.r.dw.w
	run.renting = true
	run.waiter = w.eng.Rent(run.granted)
	op := run.op()
	op.Waiters = append(op.Waiters, run.waiter)
	b := w.tr.begin()
	b = append(b, "dop rent"...)
	b = appendIntField(b, "id", int64(op.ID))
	b = appendField(b, "waiter", uint64(run.waiter))
	w.tr.end(b)
}

// granted receives the pool's answer to the rent.
func (run *dedicatedRun) granted(g engine.Grant) {
	dw := run.r.dw
	w := dw.w
	run.renting = false
	if run.ended || run.cancelling {
		if g.Outcome == fsm.OutcomeGranted {
			w.eng.Return(g.ConnID, true)
		}
		if !run.ended {
			run.end(DedicatedCancelled, "deadline")
		}
		return
	}
	if g.Outcome == fsm.OutcomeGranted {
		run.conn, run.connID = g.Conn, g.ConnID
		op := run.op()
		op.Conns = append(op.Conns, g.ConnID)
		b := w.tr.begin()
		b = append(b, "dop granted"...)
		b = appendIntField(b, "id", int64(op.ID))
		b = appendField(b, "conn", uint64(g.ConnID))
		w.tr.end(b)
		run.step = 0
		run.start()
		return
	}
	if dw.reRent && !run.reRented && (g.Outcome == fsm.OutcomeFailed || g.Outcome == fsm.OutcomeExhausted) {
		// Planted bug: the failed acquisition is retried with a fresh rent and budget.
		run.reRented = true
		w.tracePlant("re-rent", uint64(run.op().ID))
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
		return DedicatedRentFailed
	case fsm.OutcomeExhausted:
		return DedicatedExhausted
	case fsm.OutcomeCancelled:
		return DedicatedCancelled
	case fsm.OutcomeOverflow:
		return DedicatedOverflow
	}
	return DedicatedClosed
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
	for _, args := range cmds {
		dw.nextCmd++
		cmd := &engine.Command{ID: dw.nextCmd, Name: args[0], Frame: resp.AppendCommand(nil, args...), Done: run.cmdDone}
		run.cmds = append(run.cmds, cmd)
		op := run.op()
		op.Cmds = append(op.Cmds, DedicatedCmd{ID: cmd.ID, Name: cmd.Name, Conn: run.connID})
	}
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
		outcome := DedicatedFailed
		if v == engine.VerdictUnknown {
			outcome = DedicatedUnknown
		}
		if dw.resend && !run.resent && outcome == DedicatedUnknown && (cmd.Name == "BLPOP" || cmd.Name == "BRPOP" || cmd.Name == "EXEC") {
			// Planted bug: the accepted command is sent again on a new connection.
			run.resent = true
			w.tracePlant("resend-blocking", cmd.ID)
			w.eng.Return(run.connID, false)
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
			run.end(DedicatedError, c.Reply.ErrorMessage())
			return
		}
	}
	switch {
	case op.Kind == "PUSH":
		run.end(DedicatedOK, "")
	case op.Kind == "TX" && run.step == 0:
		run.step = 1
		run.start()
	case op.Kind == "TX":
		if last.Kind == resp.KindNull {
			run.end(DedicatedConflict, "")
		} else {
			run.end(DedicatedOK, "")
		}
	default:
		if last.Kind == resp.KindNull {
			run.end(DedicatedTimeout, "")
			return
		}
		if last.Kind == resp.KindArray && last.Len() == 2 {
			op.Value = string(last.Elem(1).Str)
		}
		run.end(DedicatedOK, "")
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
		b := w.tr.begin()
		b = append(b, "dop cancel"...)
		b = appendIntField(b, "id", int64(idx+1))
		b = appendField(b, "waiter", uint64(run.waiter))
		w.tr.end(b)
		w.eng.Cancel(fsm.MachinePool, run.waiter)
		return true
	}
	// The renter stops waiting for its commands: those the connection still owns complete late,
	// unread (the engine's caller protocol, as the client's dedicated connections follow it).
	for _, cmd := range run.cmds {
		cmd.Leave()
	}
	run.end(DedicatedUnknown, "deadline")
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
	op.Outcome, op.Err, op.Return = outcome, errText, w.k.now
	r.returned = nil
	if run.conn != nil {
		healthy := outcome == DedicatedOK || outcome == DedicatedTimeout || outcome == DedicatedConflict
		w.eng.Return(run.connID, healthy)
		if healthy {
			r.returned, r.returnedID, r.returnedOp = run.conn, run.connID, run.idx
		}
		run.conn = nil
	}
	b := w.tr.begin()
	b = append(b, "dop done"...)
	b = appendIntField(b, "id", int64(op.ID))
	b = appendStrField(b, "outcome", outcome)
	if errText != "" {
		b = appendQuoted(b, "err", errText)
	}
	w.tr.end(b)
	if r.cur == run {
		r.cur = nil
	}
	if !dw.stopped {
		w.k.after(r.thinkTime(), r, renterIssue)
	}
}

// stop stops the renters from starting operations; those in progress still record how the
// client's close ends them.
func (dw *dedicatedWorkload) stop() {
	if dw != nil {
		dw.stopped = true
	}
}

// retryPermanentSink implements the retry-permanent plant: it reports a permanent connection
// failure of a dedicated attempt as transient, so the pool retries it.
type retryPermanentSink struct {
	engine.Sink
	w *world
}

func (s retryPermanentSink) Failed(id fsm.ConnID, err error, class fsm.FailureClass) {
	if class == fsm.Permanent {
		s.w.tracePlant("retry-permanent", uint64(id))
		class = fsm.Transient
	}
	s.Sink.Failed(id, err, class)
}

// plantSink wraps a dedicated attempt's sink when the retry-permanent plant is set.
func (w *world) plantSink(req engine.OpenRequest) engine.OpenRequest {
	if req.Machine == fsm.MachinePool && w.sc.Planted(PlantRetryPermanent) {
		req.Sink = retryPermanentSink{Sink: req.Sink, w: w}
	}
	return req
}
