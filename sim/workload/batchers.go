package workload

import (
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/respire-go/respire/engine"
	"github.com/respire-go/respire/netio/resp"
	"github.com/respire-go/respire/sim/record"
	"github.com/respire-go/respire/sim/scenario"
	"github.com/respire-go/respire/sim/stream"
)

// The batchers send batches on the command slots (workload.batches) and record them
// (Result.Batches). They stand in for client.Client.Pipeline and Atomic, and send a batch as
// they do: a pipeline as one command whose frame holds every INCR's frame back to back
// (engine.Multi, with one id per INCR in Multi.IDs for the checkers), an atomic batch (and any
// batch on a Cluster, whose engine refuses a Multi) as one group of commands
// (Engine.SubmitGroup). The batcher waits for all the replies within one client.command_timeout
// budget from the batch's start. When the budget
// fires it asks the relaxation of the connection that took the batch (the lead command's,
// engine.Relax.Extend: the rule the client's waits ask too) for more time. A batch that times
// out is withdrawn if no connection took it yet, and otherwise left to its connection, with an
// unknown outcome. A pipeline keeps the replies that arrived before a failure or a timeout
// (BatchOp.Replied); its other INCRs have an unknown outcome when the pipeline may have been
// written, a definite failure otherwise. Nothing is ever resent.

// Batcher event kinds (the event's arg): issue, or the timer with sequence number arg.
const batcherIssue uint64 = 0

// batchTimedOut is the error of a batch whose budget fired (the prefix the
// maint-relaxed-deadlines checker recognizes).
const batchTimedOut = "sim: command timed out (batch)"

// Batchers runs the batchers of workload.batches.
type Batchers struct {
	w        *Env
	spec     *scenario.BatchWorkload
	batchers []*batcher
	think    float64
	nextCmd  uint64
	seq      uint64
	stopped  bool
}

// batcher is one batcher: at most one batch at a time.
type batcher struct {
	bw  *Batchers
	idx int
	key string
	rng *rand.Rand
	cur *batchRun
}

// batchRun is the runtime state of one batch.
type batchRun struct {
	b    *batcher
	idx  int
	cmds []*engine.Command
	// multi is the reply side of a pipeline sent as one command (cmds[0]); nil for a group.
	multi   *engine.Multi
	pending int
	timer   uint64
	ended   bool
}

// NewBatchers schedules the batchers of w's scenario, or returns nil when it has none.
func NewBatchers(w *Env) *Batchers {
	spec := w.Scenario.Workload.Batches
	if spec == nil {
		return nil
	}
	bw := &Batchers{w: w, spec: spec, nextCmd: record.BatchIDBase}
	bw.think = float64(spec.Batchers) / float64(spec.Rate) * float64(time.Second)
	for i := range spec.Batchers {
		b := &batcher{bw: bw, idx: i, key: "b" + strconv.Itoa(i), rng: rand.New(stream.New(w.Seed, stream.Batches, uint64(i)))}
		bw.batchers = append(bw.batchers, b)
		w.Sched.Schedule(spec.Start+b.thinkTime(), b, batcherIssue)
	}
	return bw
}

func (b *batcher) thinkTime() time.Duration {
	return time.Duration(b.rng.ExpFloat64() * b.bw.think)
}

func (b *batcher) Run(arg uint64) bool {
	if arg == batcherIssue {
		return b.issue()
	}
	run := b.cur
	if run == nil || run.ended || run.timer != arg {
		return false
	}
	return run.expire()
}

// issue submits the batcher's next batch and arms its budget.
func (b *batcher) issue() bool {
	bw := b.bw
	w := bw.w
	if bw.stopped || w.Sched.Now() >= bw.spec.Stop || b.cur != nil {
		return false
	}
	atomic := b.rng.IntN(bw.spec.Pipeline+bw.spec.Atomic) >= bw.spec.Pipeline
	op := record.BatchOp{ID: len(w.Result.Batches) + 1, Batcher: b.idx, Atomic: atomic, Call: w.Sched.Now()}
	run := &batchRun{b: b, idx: op.ID - 1}
	add := func(args ...string) {
		bw.nextCmd++
		cmd := &engine.Command{ID: bw.nextCmd, Name: args[0], Frame: resp.AppendCommand(nil, args...), Done: run.cmdDone}
		run.cmds = append(run.cmds, cmd)
		op.Cmds = append(op.Cmds, cmd.ID)
	}
	if atomic || w.Scenario.IsCluster() {
		if atomic {
			add("MULTI")
		}
		for range bw.spec.Size {
			add("INCR", b.key)
		}
		if atomic {
			add("EXEC")
		}
	} else {
		run.multi = &engine.Multi{IDs: make([]uint64, 0, bw.spec.Size), Expect: make([]engine.Shape, 0, bw.spec.Size)}
		var frame []byte
		for range bw.spec.Size {
			bw.nextCmd++
			run.multi.IDs = append(run.multi.IDs, bw.nextCmd)
			run.multi.Expect = append(run.multi.Expect, engine.ShapeInt) // as the client's typed INCR
			frame = resp.AppendCommand(frame, "INCR", b.key)
		}
		run.multi.Reset(bw.spec.Size)
		op.Cmds = append(op.Cmds, run.multi.IDs...)
		run.cmds = append(run.cmds, &engine.Command{ID: run.multi.IDs[0], Name: "PIPELINE", Frame: frame, Multi: run.multi, Done: run.cmdDone})
	}
	run.pending = len(run.cmds)
	w.Result.Batches = append(w.Result.Batches, op)
	b.cur = run
	w.Trace.End(w.Trace.Begin("batch issue").Int("id", op.ID).Int("batcher", b.idx).Int("cmds", len(op.Cmds)))
	if own := w.Scenario.Client.CommandTimeout; own > 0 {
		run.schedule(own)
	}
	w.Engine.SubmitGroup(run.cmds)
	return true
}

func (run *batchRun) op() *record.BatchOp { return &run.b.bw.w.Result.Batches[run.idx] }

// schedule arms the batch's timer to fire after d.
func (run *batchRun) schedule(d time.Duration) {
	bw := run.b.bw
	bw.seq++
	run.timer = bw.seq
	bw.w.Sched.After(d, run.b, run.timer)
}

// cmdDone receives one command's completion; the last one ends the batch.
func (run *batchRun) cmdDone(cmd *engine.Command) {
	if run.ended || !cmd.Answered() {
		return
	}
	run.pending--
	if run.pending > 0 {
		return
	}
	op := run.op()
	outcome, errText := record.BatchOK, ""
	if m := run.multi; m != nil {
		// Its first Stored replies arrived; when it failed, the others never came.
		op.Replied = m.Stored()
		if cmd.Err != nil {
			outcome, errText = record.BatchFailed, cmd.Err.Error()
			op.Unknown = cmd.MaybeSent()
		}
		run.end(outcome, errText)
		return
	}
	op.Replied = len(run.cmds)
	for i, c := range run.cmds {
		if c.Verdict() != engine.VerdictReplied {
			outcome, errText = record.BatchFailed, c.Err.Error()
			op.Replied = i
			op.Unknown = c.MaybeSent()
			break
		}
	}
	run.end(outcome, errText)
}

// expire is the budget firing: the relaxation of the connection that took the batch may keep it
// alive (the maint-ignore-relaxation plant never asks); otherwise the batcher stops waiting.
func (run *batchRun) expire() bool {
	bw := run.b.bw
	w := bw.w
	now := w.Sched.Now()
	if rl := run.cmds[0].Relax(); rl != nil && !w.Scenario.Planted(scenario.PlantMaintIgnoreRelaxation) {
		own := w.Scenario.Client.CommandTimeout
		wake, ok := rl.Extend(record.MaintEpoch.Add(now), record.MaintEpoch.Add(run.op().Call), own)
		if ok {
			at := wake.Sub(record.MaintEpoch)
			run.schedule(max(at-now, time.Nanosecond))
			w.Trace.End(w.Trace.Begin("batch relaxed").Int("id", run.op().ID).Str("until", at.String()))
			return true
		}
	}
	if w.Engine.Withdraw(run.cmds[0]) {
		run.end(record.BatchWithdraw, batchTimedOut)
		return true
	}
	if run.multi != nil {
		// The client's rule for leaving a pipeline (engine.Command.LeaveMulti): the replies
		// that arrived are kept, the rest unknown.
		var arrived int
		if !run.cmds[0].LeaveMulti(func(n int) { arrived = n }) {
			return false // its completion came first and ended the batch
		}
		op := run.op()
		op.Replied, op.Unknown = arrived, true
		run.end(record.BatchTimeout, batchTimedOut)
		return true
	}
	for _, c := range run.cmds {
		c.Leave()
	}
	run.op().Unknown = true
	run.end(record.BatchTimeout, batchTimedOut)
	return true
}

// end records the batch's outcome and schedules the batcher's next batch.
func (run *batchRun) end(outcome, errText string) {
	b := run.b
	w := b.bw.w
	run.ended = true
	run.timer = 0
	op := run.op()
	op.Outcome, op.Err, op.Return = outcome, errText, w.Sched.Now()
	bl := w.Trace.Begin("batch done").Int("id", op.ID).Str("outcome", outcome)
	if errText != "" {
		bl = bl.Quoted("err", errText)
	}
	w.Trace.End(bl)
	if b.cur == run {
		b.cur = nil
	}
	if !b.bw.stopped {
		w.Sched.After(b.thinkTime(), b, batcherIssue)
	}
}

// Recheck is called when a notice ended or shortened relaxation rl: every batch rl keeps alive
// past its own budget asks again now, as the client's waits do when engine.Relax.Shrunk is
// closed.
func (bw *Batchers) Recheck(rl *engine.Relax) {
	if bw == nil {
		return
	}
	now := bw.w.Sched.Now()
	for _, b := range bw.batchers {
		run := b.cur
		if run == nil || run.ended || run.timer == 0 || run.cmds[0].Relax() != rl ||
			now < run.op().Call+bw.w.Scenario.Client.CommandTimeout {
			continue
		}
		run.expire()
	}
}

// Stop stops the batchers from starting batches; those in flight still record how they end.
func (bw *Batchers) Stop() {
	if bw != nil {
		bw.stopped = true
	}
}
