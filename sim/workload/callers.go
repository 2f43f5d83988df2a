package workload

import (
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/respire-go/respire/engine"
	"github.com/respire-go/respire/netio/resp"
	"github.com/respire-go/respire/sim/record"
	"github.com/respire-go/respire/sim/stream"
)

// Caller events.
const (
	callerIssue uint64 = iota
	callerTimeout
)

// Callers runs the closed-loop logical callers (workload.callers). Command ids are 1, 2, 3... in
// issue order, so operation i has command id i+1.
type Callers struct {
	w        *Env
	callers  []*caller
	live     []liveOp
	keys     []string
	counters []string
	// single holds a one-element key list per key (keys then counters), shared by operations.
	single [][]string
	// cumulative weights of the mix, in the order get, set, del, incr, mget, mset.
	cumulative  [6]int
	think       float64 // mean think time in nanoseconds
	stopped     bool
	done        func(*engine.Command)
	timeoutText string
	// free holds commands that may be reused; retired those that may be once the synchronous
	// completion path that finished them has returned.
	free, retired []*engine.Command
	// open counts the operations whose command is not retired yet (Quiet).
	open int
	// lingering are the indexes of operations that returned to their caller (timed out once
	// written) while the engine still held their command, until it completes (QuietBut); some
	// may have retired since, and are dropped when the list is next read.
	lingering []int
	// kept holds the runtime state of lingering operations of segments already handed over, by
	// index (Forget), so that a late completion is still traced and a second one still found.
	kept map[int]*liveOp
	// datums and values hold the operations' replies and written values.
	datums record.Arena[record.Datum]
	values record.Arena[string]
}

// liveOp is the runtime state of one operation. wl.live[i] is operation Result.OpBase+i: the
// entries of operations handed over in earlier segments are dropped with them (Forget).
type liveOp struct {
	cmd         *engine.Command
	caller      *caller
	returned    bool
	completions int
}

// caller is one logical caller, with its own generator. It has at most one operation waiting,
// and at most one timeout event in the heap: when that event fires before the waiting operation's
// deadline (the operation it was armed for already ended) it is re-armed for the deadline.
type caller struct {
	wl  *Callers
	idx int
	rng *rand.Rand
	// op is the index of the waiting operation, or -1.
	op       int
	deadline time.Duration
	armed    bool
	// armedAt is the time of the timeout event armed says is in the heap. A maintenance window
	// can move a deadline later and back (maint.go): an operation whose deadline comes before
	// armedAt gets an event of its own.
	armedAt time.Duration
}

var opNames = [...]string{"GET", "SET", "DEL", "INCR", "MGET", "MSET"}

// opShapes holds the reply shape each operation of opNames accepts: the shape of the client's
// typed call for the command (engine's table, the one the client uses). A reply of another kind
// is a protocol error, which the transport's shared code (wire.Deliver, wire.CompleteMisfit)
// turns into the command's failure and the connection's loss.
var opShapes = [...]engine.Shape{engine.ShapeBulk, engine.ShapeOK, engine.ShapeInt, engine.ShapeInt, engine.ShapeArray, engine.ShapeOK}

// NewCallers schedules the callers of w's scenario (none when it has no callers).
func NewCallers(w *Env) *Callers {
	spec := &w.Scenario.Workload
	wl := &Callers{w: w, datums: record.Arena[record.Datum]{Size: 512}, values: record.Arena[string]{Size: 512}}
	if spec.Callers == 0 {
		return wl
	}
	for i := range spec.Keys {
		wl.keys = append(wl.keys, "k"+strconv.Itoa(i))
		wl.single = append(wl.single, wl.keys[i:i+1:i+1])
	}
	for i := range spec.Counters {
		wl.counters = append(wl.counters, "c"+strconv.Itoa(i))
		wl.single = append(wl.single, wl.counters[i:i+1:i+1])
	}
	// Size the records for the expected number of operations.
	expected := int(float64(spec.Rate)*(spec.Stop-spec.Start).Seconds()*1.05) + spec.Callers
	expected = min(expected, 1<<20)
	if n := w.SegmentOps; n > 0 {
		// The records are handed over in segments (Env.SegmentOps): size them for one.
		expected = min(expected, n+n/4)
	}
	w.Result.Ops = make([]record.Op, 0, expected)
	w.Result.Applies = make([]record.Apply, 0, expected)
	w.Result.Sends = make([]record.Send, 0, expected)
	w.Result.Served = make([]record.ReplyRecord, 0, expected)
	w.Result.Paired = make([]record.ReplyRecord, 0, expected)
	wl.live = make([]liveOp, 0, expected)
	m := spec.Mix
	sum := 0
	for i, v := range [6]int{m.Get, m.Set, m.Del, m.Incr, m.MGet, m.MSet} {
		sum += v
		wl.cumulative[i] = sum
	}
	wl.think = float64(spec.Callers) / float64(spec.Rate) * float64(time.Second)
	wl.done = wl.completed
	wl.timeoutText = "sim: command timed out after " + w.Scenario.Client.CommandTimeout.String()
	for i := range spec.Callers {
		c := &caller{wl: wl, idx: i, rng: rand.New(stream.New(w.Seed, stream.Workload, uint64(i))), op: -1}
		wl.callers = append(wl.callers, c)
		// Stagger the first operations over one think time.
		w.Sched.Schedule(spec.Start+c.thinkTime(), c, callerIssue)
	}
	return wl
}

// Stop stops the callers from issuing new commands; those waiting still record their outcomes.
func (wl *Callers) Stop() {
	if wl != nil {
		wl.stopped = true
	}
}

func (c *caller) thinkTime() time.Duration {
	return time.Duration(c.rng.ExpFloat64() * c.wl.think)
}

func (c *caller) Run(arg uint64) bool {
	if arg == callerIssue {
		return c.issue()
	}
	now := c.wl.w.Sched.Now()
	if now >= c.armedAt {
		c.armed = false
	}
	if c.op < 0 {
		return false
	}
	if now < c.deadline || c.wl.relaxed(c, now) {
		c.arm()
		return false
	}
	return c.wl.timeout(c.op)
}

// arm makes sure a timeout event is in the heap no later than the caller's deadline.
func (c *caller) arm() {
	if !c.armed || c.armedAt > c.deadline {
		c.armed, c.armedAt = true, c.deadline
		c.wl.w.Sched.Schedule(c.deadline, c, callerTimeout)
	}
}

// issue builds and submits the caller's next operation.
func (c *caller) issue() bool {
	wl := c.wl
	w := wl.w
	if wl.stopped || w.Sched.Now() >= w.Scenario.Workload.Stop {
		return false
	}
	idx := w.Result.OpBase + len(w.Result.Ops)
	id := uint64(idx + 1)
	w.Result.Ops = append(w.Result.Ops, record.Op{ID: id, Caller: c.idx, Call: w.Sched.Now()})
	op := &w.Result.Ops[idx-w.Result.OpBase]
	kind := c.pick()
	op.Name = opNames[kind]
	switch op.Name {
	case "GET":
		op.Keys = wl.single[c.rng.IntN(len(wl.keys)+len(wl.counters))]
	case "SET":
		op.Keys = wl.single[c.rng.IntN(len(wl.keys))]
		op.Values = wl.values.Take(1)
		op.Values[0] = "v" + strconv.FormatUint(id, 10)
	case "DEL":
		op.Keys = wl.single[c.rng.IntN(len(wl.keys))]
	case "INCR":
		op.Keys = wl.single[len(wl.keys)+c.rng.IntN(len(wl.counters))]
	case "MGET", "MSET":
		op.Keys = c.distinctKeys(2 + c.rng.IntN(2))
		if op.Name == "MSET" {
			op.Values = wl.values.Take(len(op.Keys))
			for i := range op.Keys {
				op.Values[i] = "v" + strconv.FormatUint(id, 10) + "." + strconv.Itoa(i)
			}
		}
	}
	cmd := wl.command()
	cmd.Name, cmd.ID, cmd.Done = op.Name, id, wl.done
	cmd.Expect = opShapes[kind]
	cmd.Frame = appendOpFrame(cmd.Frame[:0], op)
	wl.live = append(wl.live, liveOp{cmd: cmd, caller: c})
	wl.open++
	b := w.Trace.Begin("op issue")
	b = b.Uint("id", id)
	b = b.Int("caller", c.idx)
	b = b.Word(op.Name)
	for i, k := range op.Keys {
		b = b.Word(k)
		if op.Values != nil {
			b = append(b, '=')
			b = append(b, op.Values[i]...)
		}
	}
	w.Trace.End(b)
	c.op = idx
	c.deadline = w.Sched.Now() + w.Scenario.Client.CommandTimeout
	c.arm()
	w.submit(cmd)
	return true
}

// command returns a command to issue: a reused one when possible. A command is reused only after
// its completion callback ran (or it was withdrawn, so that it never will) and the operation that
// used it ended; retired commands become free at the next issue, after the synchronous completion
// path that retired them (including a second, buggy completion) has returned.
func (wl *Callers) command() *engine.Command {
	wl.free = append(wl.free, wl.retired...)
	clear(wl.retired)
	wl.retired = wl.retired[:0]
	if n := len(wl.free); n > 0 {
		cmd := wl.free[n-1]
		wl.free[n-1] = nil
		wl.free = wl.free[:n-1]
		cmd.Reset()
		return cmd
	}
	return &engine.Command{Frame: make([]byte, 0, 64)}
}

// retire marks operation idx's command reusable once both its operation ended and its command
// completed, or once the caller owns it again (withdrawn: see engine.Abandonment.Owned).
func (wl *Callers) retire(idx int, owned bool) {
	lo := wl.lookup(idx)
	if lo.cmd == nil || !lo.returned || (lo.completions == 0 && !owned) {
		return
	}
	wl.retired = append(wl.retired, lo.cmd)
	lo.cmd = nil
	wl.open--
	if idx < wl.w.Result.OpBase {
		delete(wl.kept, idx)
	}
}

// Quiet reports whether every operation issued so far has ended and its command is retired: no
// caller waits and the engine holds none of the workload's commands, so the records of the
// operations so far are complete on the client's side.
func (wl *Callers) Quiet() bool { return wl == nil || wl.open == 0 }

// QuietBut is Quiet, except that an operation that returned to its caller while the engine
// still holds its command (the caller timed out after it was written) does not count when
// held(its command id) says the command can never be applied nor answered: its record is then
// final, and only a late completion, traced and retired, can follow (Forget keeps what that
// needs).
func (wl *Callers) QuietBut(held func(id uint64) bool) bool {
	if wl == nil || wl.open == 0 {
		return true
	}
	if len(wl.lingering) < wl.open {
		return false // some open operation has not returned
	}
	n := 0
	for _, idx := range wl.lingering {
		if lo := wl.lookup(idx); lo != nil && lo.cmd != nil {
			wl.lingering[n] = idx
			n++
		}
	}
	wl.lingering = wl.lingering[:n]
	if n != wl.open {
		return false
	}
	for _, idx := range wl.lingering {
		if !held(uint64(idx) + 1) {
			return false
		}
	}
	return true
}

// lookup returns the runtime state of operation idx, or nil when it was forgotten.
func (wl *Callers) lookup(idx int) *liveOp {
	base := wl.w.Result.OpBase
	if idx >= base && idx < base+len(wl.live) {
		return &wl.live[idx-base]
	}
	return wl.kept[idx]
}

// Forget drops the runtime state of the operations before Result.OpBase, once the runner handed
// their records over (only when QuietBut: none of them can complete again, except the
// lingering ones, whose state is kept until their command completes).
func (wl *Callers) Forget() {
	if wl == nil {
		return
	}
	from := wl.w.Result.OpBase - len(wl.live) // the index of wl.live[0] before the cut
	for _, idx := range wl.lingering {
		if i := idx - from; i >= 0 && i < len(wl.live) && wl.live[i].cmd != nil {
			if wl.kept == nil {
				wl.kept = map[int]*liveOp{}
			}
			lo := wl.live[i]
			wl.kept[idx] = &lo
		}
	}
	clear(wl.live)
	wl.live = wl.live[:0]
}

// pick draws the next command kind from the mix.
func (c *caller) pick() int {
	wl := c.wl
	v := c.rng.IntN(wl.cumulative[5])
	for i, cum := range wl.cumulative {
		if v < cum {
			return i
		}
	}
	return 0
}

// distinctKeys draws n distinct string keys (fewer if there are not enough).
func (c *caller) distinctKeys(n int) []string {
	keys := c.wl.keys
	n = min(n, len(keys))
	out := make([]string, 0, n)
	for len(out) < n {
		k := keys[c.rng.IntN(len(keys))]
		dup := false
		for _, x := range out {
			dup = dup || x == k
		}
		if !dup {
			out = append(out, k)
		}
	}
	return out
}

// appendOpFrame encodes the operation's request.
func appendOpFrame(dst []byte, op *record.Op) []byte {
	switch op.Name {
	case "SET":
		dst = resp.AppendArrayHeader(dst, 3)
		dst = resp.AppendBulkString(dst, "SET")
		dst = resp.AppendBulkString(dst, op.Keys[0])
		return resp.AppendBulkString(dst, op.Values[0])
	case "MSET":
		dst = resp.AppendArrayHeader(dst, 1+2*len(op.Keys))
		dst = resp.AppendBulkString(dst, "MSET")
		for i, k := range op.Keys {
			dst = resp.AppendBulkString(dst, k)
			dst = resp.AppendBulkString(dst, op.Values[i])
		}
		return dst
	}
	dst = resp.AppendArrayHeader(dst, 1+len(op.Keys))
	dst = resp.AppendBulkString(dst, op.Name)
	for _, k := range op.Keys {
		dst = resp.AppendBulkString(dst, k)
	}
	return dst
}

// completed is every command's Done callback. It records the first completion of an operation
// that is still waiting; a completion after the caller gave up (timeout) is recorded in the trace
// only, and a second completion of the same command (a bug) in the trace and in Result.Duplicates.
// The caller's side follows the engine's caller protocol, as the client's calls do: Answered tells
// a completion the caller waits for from a late one.
func (wl *Callers) completed(cmd *engine.Command) {
	w := wl.w
	idx := int(cmd.ID) - 1
	base := w.Result.OpBase
	lo := wl.lookup(idx)
	if lo == nil {
		return
	}
	lo.completions++
	outcome, errText := classify(cmd)
	if lo.completions > 1 {
		w.Result.Duplicates = append(w.Result.Duplicates, record.Duplicate{CmdID: cmd.ID, At: w.Sched.Now()})
		wl.traceDone("op duplicate-completion", cmd.ID, outcome, cmd.FinalStage().String(), errText)
		return
	}
	if !cmd.Answered() {
		wl.traceDone("op late-completion", cmd.ID, outcome, cmd.FinalStage().String(), errText)
		wl.retire(idx, false)
		return
	}
	lo.returned = true
	lo.caller.op = -1
	op := &w.Result.Ops[idx-base]
	op.Return = w.Sched.Now()
	op.Outcome = outcome
	op.Stage = cmd.FinalStage().String()
	op.Err = errText
	if outcome == record.OpOK {
		if cmd.Reply.IsError() {
			op.ServerError = cmd.Reply.ErrorMessage()
		} else {
			op.Reply = wl.decodeReply(&cmd.Reply)
		}
	}
	wl.traceDone("op done", cmd.ID, outcome, op.Stage, errText)
	if outcome == record.OpUnknown {
		wl.settle(cmd) // settle.go: fences, when the scenario enables them
	}
	wl.retire(idx, false)
	wl.next(lo.caller)
}

// verdictOutcomes maps the engine's verdicts to operation outcomes.
var verdictOutcomes = [...]record.OpOutcome{engine.VerdictReplied: record.OpOK, engine.VerdictFailed: record.OpFailed, engine.VerdictUnknown: record.OpUnknown}

// classify maps a completed command to an operation outcome.
func classify(cmd *engine.Command) (record.OpOutcome, string) {
	v := cmd.Verdict()
	if v == engine.VerdictReplied {
		return record.OpOK, ""
	}
	return verdictOutcomes[v], cmd.Err.Error()
}

// timeout ends operation idx if it is still waiting, by the engine's caller protocol
// (Engine.Abandon), as the client's calls do: withdrawn before it was sent (failed), or unknown
// once a connection owns it.
func (wl *Callers) timeout(idx int) bool {
	w := wl.w
	base := w.Result.OpBase
	if idx < base || idx >= base+len(wl.live) {
		return false
	}
	lo := &wl.live[idx-base]
	if lo.returned || wl.stopped {
		return false
	}
	a := w.abandon(lo.cmd)
	if a.Wait {
		// The completion is the caller's: it is recorded when it comes.
		return false
	}
	lo.returned = true
	lo.caller.op = -1
	op := &w.Result.Ops[idx-base]
	op.Return = w.Sched.Now()
	op.Err = wl.timeoutText
	op.Outcome = verdictOutcomes[a.Verdict]
	op.Stage = a.Stage.String()
	wl.traceDone("op timeout", op.ID, op.Outcome, op.Stage, op.Err)
	wl.retire(idx, a.Owned)
	if lo.cmd != nil {
		wl.lingering = append(wl.lingering, idx)
	}
	wl.next(lo.caller)
	return true
}

// next schedules the caller's next operation after a think time.
func (wl *Callers) next(c *caller) {
	if wl.stopped {
		return
	}
	wl.w.Sched.After(c.thinkTime(), c, callerIssue)
}

func (wl *Callers) traceDone(what string, id uint64, outcome record.OpOutcome, stage, errText string) {
	w := wl.w
	b := w.Trace.Begin(what)
	b = b.Uint("id", id)
	b = b.Str("outcome", outcome.String())
	b = b.Str("stage", stage)
	if errText != "" {
		b = b.Quoted("err", errText)
	}
	w.Trace.End(b)
}

// decodeReply turns a reply into data: one Datum for a scalar, one per element for an array.
func (wl *Callers) decodeReply(v *resp.Value) []record.Datum {
	switch v.Kind {
	case resp.KindArray, resp.KindSet:
		if v.Len() == 0 {
			return []record.Datum{}
		}
		out := wl.datums.Take(v.Len())
		for i, e := range v.All() {
			out[i] = datum(&e)
		}
		return out
	}
	out := wl.datums.Take(1)
	out[0] = datum(v)
	return out
}

func datum(v *resp.Value) record.Datum {
	switch v.Kind {
	case resp.KindNull:
		return record.Datum{Null: true}
	case resp.KindInteger:
		return record.Datum{Int: v.Int, IsInt: true}
	case resp.KindBoolean:
		if v.Bool {
			return record.Datum{Int: 1, IsInt: true}
		}
		return record.Datum{IsInt: true}
	}
	return record.Datum{Str: string(v.Str)}
}
