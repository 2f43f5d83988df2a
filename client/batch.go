package client

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/respire-go/respire/engine"
	"github.com/respire-go/respire/internal/command"
	"github.com/respire-go/respire/netio/resp"
)

// ErrNotRun: the Future belongs to a batch that has not run yet. Match it with errors.Is.
var ErrNotRun = sentinel("respire: the batch of this result has not run")

// Batch is a list of commands sent together: queue them with its typed methods (the same
// names and arguments as Commands', without the context) or with Do, then run the batch with
// Commands.Pipeline or Commands.Atomic. Each queued command returns a *Future that holds its
// result once the batch has run:
//
//	var b client.Batch
//	name := b.HGet("user:1", "name")
//	visits := b.Incr("visits")
//	if err := c.Pipeline(ctx, &b); err != nil { ... }
//	n, err := visits.Result()
//
// Pipeline writes the commands back to back on one connection and reads the replies back:
// one round trip, and each command succeeds or fails on its own. Atomic wraps them in MULTI
// and EXEC: Redis runs them as one unit, with no command of another client in between. Both
// run on a Client's shared connection (the frames go out as one unit, so no other caller's
// command can slip in) or on a DedicatedConn.
//
// The zero Batch is empty and ready to use. Running a batch empties it and keeps its memory
// for reuse; the futures keep their results. A Batch is not safe for concurrent use.
//
// Memory: the string results of at most 256 bytes (GET, HGET, LPOP, ...) share blocks of 8 KiB
// with the batch's other short string results, which spares an allocation per value. A string
// the application keeps therefore keeps its block (at most 8 KiB) in memory, never the batch's
// other blocks; copy it (strings.Clone) to keep a few short values of a large batch for long.
//
// No command of a batch is ever sent twice: when a connection fails in the middle, commands
// whose replies arrived keep them, and each of the others reports its own outcome (an
// *UnknownOutcomeError for a command that may have reached the server, a definite error for
// one that did not). An Atomic batch has one outcome for all its commands.
type Batch struct {
	buf  []byte
	ents []batchEntry
	// err is the first error of a queued command (an invalid argument): the batch is not sent.
	err error
	// run-time storage: blk holds the calls of the run in progress (batch_calls.go); marks and
	// stages are kept for reuse.
	blk    *callBlock
	marks  []bool
	stages []Stage
	// lent: a call of the last run was left to its connection, which may still write it from
	// buf; done gives buf up instead of reusing it.
	lent bool
	// alt is the second buffer of prepare, which rewrites the frames in a namespace.
	alt []byte
	// ns is the namespace of the run in progress (nil: none); the entries' keys fields say
	// where their replies hold keys.
	ns *namespace
	// withScripts: some entries run scripts (RunScript); scripts is prepare's scratch list.
	withScripts bool
	scripts     []*Script
	// slabs holds, per result type, a block of futures not handed out yet (newFuture).
	slabs []any
	// grp signals the completion of a run's calls, once for all of them (callGroup).
	grp *callGroup
	// texts packs the short string results of the batch's runs (batch_text.go).
	texts *textPack
}

// callGroup counts the calls of a batch's run that have not completed yet. Each call completes
// exactly once, through its onDone (the completion was the caller's: Answered) or through the
// caller leaving it (settle): both count it down, and whoever brings the count to zero is the
// last. A completion that does signals done, once per run, instead of each call signalling its
// own channel: the connection's reader, which completes the calls, saves a channel send per
// reply. A group is reused from run to run: when a run is settled, the count is zero and done
// is empty.
type callGroup struct {
	left atomic.Int32
	done chan struct{}
}

// complete counts one completed call down, and signals the group's waiter after the last.
func (g *callGroup) complete() {
	if g.left.Add(-1) == 0 {
		g.done <- struct{}{}
	}
}

// futureSlab is a block of futures of one result type, handed out one by one: a batch of n
// commands allocates about n/futureSlabLen blocks instead of n futures. A block stays in memory
// while the application keeps any of its futures.
type futureSlab[T any] struct{ free []Future[T] }

// futureSlabLen is the number of futures allocated at once.
const futureSlabLen = 32

// newFuture returns a future of the batch, taken from the block of its type.
func newFuture[T any](b *Batch) *Future[T] {
	var sl *futureSlab[T]
	for _, s := range b.slabs {
		if s, ok := s.(*futureSlab[T]); ok {
			sl = s
			break
		}
	}
	if sl == nil {
		sl = &futureSlab[T]{}
		b.slabs = append(b.slabs, sl)
	}
	if len(sl.free) == 0 {
		sl.free = make([]Future[T], futureSlabLen)
	}
	f := &sl.free[0]
	sl.free = sl.free[1:]
	f.err = ErrNotRun
	return f
}

// MaxBatchLen bounds the commands of one Batch (a pipeline or a transaction): queueing more
// fails the batch with a *ConfigError, and nothing of it is sent. Split larger work into
// several batches; a few hundred commands already amortise the round trip.
const MaxBatchLen = 1 << 16

// Tx is the batch of a transaction on a DedicatedConn (see DedicatedConn.Exec).
type Tx = Batch

// batchEntry is one queued command: its frame in the batch's buffer and its result.
type batchEntry struct {
	start, end int
	info       *command.Info
	name       string
	shape      engine.Shape
	out        settler
	// dec decodes the reply into out: a func(*resp.Value) (T, error), or a
	// func(*resp.Value, *textPack) (T, error) that packs short strings (queuePacked), of out's
	// result type T. Kept here rather than in the future, which the application keeps.
	dec any
	// script is the script of a RunScript entry (an EVALSHA frame), nil otherwise.
	script *Script
	block  bool
	// keys says where the reply holds keys, once prepare applied a key prefix.
	keys replyKeys
}

// settler receives an entry's outcome.
type settler interface {
	// settle decodes a reply (a server error reply becomes the entry's *ServerError), its
	// short strings packed by t, and returns the entry's error.
	settle(v *resp.Value, name string, ep Endpoint, t *textPack, dec any) error
	// fail records an error that replaces the reply.
	fail(err error)
}

// Future is the result of a command queued in a Batch, available once the batch has run.
type Future[T any] struct {
	val T
	// err is ErrNotRun until the batch has run (newFuture).
	err error
}

// Result returns the command's value and error. Before the batch has run, the error is
// ErrNotRun.
func (f *Future[T]) Result() (T, error) { return f.val, f.err }

// Val returns the command's value: the zero value if it failed or has not run.
func (f *Future[T]) Val() T { return f.val }

// Err returns the command's error: nil on success, ErrNotRun before the batch has run.
func (f *Future[T]) Err() error { return f.err }

func (f *Future[T]) settle(v *resp.Value, name string, ep Endpoint, t *textPack, dec any) error {
	if v.IsError() {
		f.err = serverError(v, name, ep, "")
		return f.err
	}
	switch d := dec.(type) {
	case func(*resp.Value, *textPack) (T, error):
		f.val, f.err = d(v, t)
	case func(*resp.Value) (T, error):
		f.val, f.err = d(v)
	default:
		panic("respire: a batch entry's decoder does not match its future")
	}
	return f.err
}

func (f *Future[T]) fail(err error) { f.err = err }

// Len returns the number of queued commands.
func (b *Batch) Len() int { return len(b.ents) }

// Reset empties the batch without running it; its futures stay unrun.
func (b *Batch) Reset() {
	b.buf = b.buf[:0]
	clear(b.ents)
	b.ents = b.ents[:0]
	b.err = nil
	b.withScripts = false
}

// bound fails an encoded command that would take the batch beyond MaxBatchLen.
func (b *Batch) bound(e *enc) {
	if len(b.ents) >= MaxBatchLen {
		e.fail("Batch", "more than MaxBatchLen commands")
	}
}

// encoder returns an encoder appending to the batch's buffer.
func (b *Batch) encoder() enc { return enc{buf: &b.buf} }

// queue adds an encoded command whose reply dec decodes and returns its future.
func queue[T any](b *Batch, e *enc, dec func(*resp.Value) (T, error)) *Future[T] {
	return enqueue[T](b, e, dec)
}

// enqueue is queue with the entry's decoder (batchEntry.dec) given as it is stored.
func enqueue[T any](b *Batch, e *enc, dec any) *Future[T] {
	f := newFuture[T](b)
	b.bound(e)
	if e.err != nil {
		b.buf = b.buf[:e.start]
		if b.err == nil {
			b.err = e.err
		}
		f.fail(e.err)
		return f
	}
	e.finish()
	info := e.spec.info
	b.ents = append(b.ents, batchEntry{start: e.start, end: len(b.buf), info: info, name: info.Name(), shape: e.shape,
		block: e.block || info.Blocking() == command.BlockingAlways, out: f, dec: dec})
	return f
}

// Do queues a raw command; arguments are encoded and classified as by Client.Do. Its reply
// is returned as it is, owning its memory. What may run where is decided when the batch runs:
// see Commands.Pipeline and Commands.Atomic.
func (b *Batch) Do(args ...any) *Future[resp.Value] {
	f := newFuture[resp.Value](b)
	start := len(b.buf)
	info, name, err := appendRaw(&b.buf, args)
	if err == nil && len(b.ents) >= MaxBatchLen {
		err = configErr("Batch", "more than MaxBatchLen commands")
	}
	if err != nil {
		b.buf = b.buf[:start]
		if b.err == nil {
			b.err = err
		}
		f.fail(err)
		return f
	}
	ent := batchEntry{start: start, end: len(b.buf), info: info, name: name, shape: anyReply, out: f, dec: decValue}
	if info != nil && info.Blocking() != command.BlockingNever {
		ent.block = info.MayBlock(frameArgs(b.buf[start:]))
	}
	b.ents = append(b.ents, ent)
	return f
}

// batchMode says how a batch runs.
type batchMode uint8

const (
	// modePipeline: the commands one after the other, each with its own outcome.
	modePipeline batchMode = iota
	// modeAtomic: MULTI, the commands, EXEC.
	modeAtomic
	// modeExec: as modeAtomic, for DedicatedConn.Exec (its path in refusals, and its raw
	// results).
	modeExec
)

// Pipeline sends the batch's commands to one connection as one group, written back to back
// (one write, up to the connection's write gathering bound), and reads their replies; each
// Future then holds its command's result. It returns the first command's error
// in queue order, or nil when every command succeeded; a queued command with an invalid
// argument fails the batch before anything is sent.
//
// On a Client, the batch runs on a shared connection: the session-changing commands that
// Client.Do refuses are refused here too, as are blocking commands (they would hold up the
// connection; run them alone), and administrative ones need Options.AllowAdmin. The whole
// batch has one CommandTimeout budget.
//
// When the connection fails or the context ends in the middle, the commands whose replies
// arrived keep them and each other command reports its own outcome: an *UnknownOutcomeError
// (or a *TimeoutError) when it may have reached the server, a definite error when it cannot
// have. Nothing is resent.
func (c Commands) Pipeline(ctx context.Context, b *Batch) error {
	return runBatchHooked(ctx, c.x, b, modePipeline)
}

// Atomic runs the batch as one transaction: MULTI, the commands and EXEC, written as one unit
// so that no other caller's command joins the transaction (no dedicated connection is
// needed). Redis runs the commands together, with nothing in between; each Future holds its
// command's result, and a command that fails at run time (WRONGTYPE, ...) fails alone, as in
// Redis.
//
// Errors: the first command's error in queue order; a *TxQueueError for every command when
// Redis refused to queue one (nothing ran); an *UnknownOutcomeError for every command when
// EXEC's reply was lost (the transaction ran entirely or not at all); a *TxConflictError on a
// DedicatedConn whose watched keys changed. Commands that Tx.Do refuses (MULTI, WATCH, ...),
// blocking commands and, on a Client, session-changing ones are refused before anything is
// sent.
func (c Commands) Atomic(ctx context.Context, b *Batch) error {
	return runBatchHooked(ctx, c.x, b, modeAtomic)
}

// check refuses what the batch may not carry on this executor, before anything is sent: a
// queued command's invalid argument, administrative commands without AllowAdmin, blocking
// commands, and the session commands that Client.Do (shared), DedicatedConn.Do (pipelined on
// a dedicated connection) or Tx.Do (in a transaction) refuse.
func (b *Batch) check(c *Client, shared bool, mode batchMode) error {
	if b.err != nil {
		return b.err
	}
	path := pathPipeline
	switch mode {
	case modeAtomic:
		path = pathAtomic
	case modeExec:
		path = pathTx
	}
	for i := range b.ents {
		ent := &b.ents[i]
		info := ent.info
		if info == nil {
			continue // unknown to the table: sent as it is
		}
		if info.Admin() && !c.opts.AllowAdmin {
			return ErrAdminDisabled
		}
		if ent.block {
			return &SessionCommandError{Command: info.Name(), Path: path,
				Reason:      "a blocking command would hold up the batch's connection",
				Alternative: "run it alone: Commands methods and Client.Do give blocking commands a dedicated connection"}
		}
		var err error
		switch {
		case mode != modePipeline:
			err = refuseTx(info, path)
			if err == nil && shared && info.SessionChanging() {
				err = refuseShared(info, path)
			}
		case shared && info.SessionChanging():
			err = refuseShared(info, path)
		case !shared:
			err = refuseDedicated(info, path)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// prepare rewrites the queued frames for the run, before anything is sent: the first entry of
// each script becomes an EVAL that loads it (script.go), and every frame goes in the namespace
// ns (every key prefixed: prefix.go). A command the namespace cannot be applied to fails the
// batch.
func (b *Batch) prepare(ns *namespace) error {
	b.ns = ns
	if b.withScripts {
		b.alt = b.loadScripts(b.alt[:0])
		b.buf, b.alt = b.alt, b.buf[:0]
	}
	if ns == nil {
		return nil
	}
	out := b.alt[:0]
	for i := range b.ents {
		ent := &b.ents[i]
		start := len(out)
		var err error
		out, ent.keys, err = ns.rewrite(out, b.buf[ent.start:ent.end], ent.info, ent.name)
		if err != nil {
			b.alt = out
			return err
		}
		ent.start, ent.end = start, len(out)
	}
	b.buf, b.alt = out, b.buf[:0]
	return nil
}

// reply returns the reply of entry i as its future decodes it: with the key prefix removed
// from the keys it holds.
func (b *Batch) reply(i int, v *resp.Value) *resp.Value {
	if k := b.ents[i].keys; k != replyNoKeys && !v.IsError() {
		stripped := b.ns.strip(v, k)
		return &stripped
	}
	return v
}

// done empties the batch after a run, keeping its memory (but a buffer that a call left to its
// connection may still be written from).
func (b *Batch) done() {
	b.ns = nil
	if b.lent {
		b.buf, b.lent = nil, false
	}
	b.Reset()
}

// runBatch implements executor: the batch goes to one shared connection as one group.
func (c *Client) runBatch(ctx context.Context, b *Batch, mode batchMode) error {
	return c.runBatchIn(ctx, b, mode, c.ns)
}

// runBatchIn implements baseExecutor.
func (c *Client) runBatchIn(ctx context.Context, b *Batch, mode batchMode, ns *namespace) error {
	defer b.done()
	if err := b.check(c, true, mode); err != nil {
		b.failAll(err)
		return err
	}
	if err := b.prepare(ns); err != nil {
		b.failAll(err)
		return err
	}
	if len(b.ents) == 0 {
		return nil
	}
	if c.closed.Load() {
		b.failAll(ErrClosed)
		return ErrClosed
	}
	if err := ctx.Err(); err != nil {
		b.failAll(err)
		return err
	}
	if c.usePipe(mode) {
		return c.runPipe(ctx, b) // batch_pipe.go
	}
	cls, cmds, g := b.start(c, mode)
	var done, timedOut bool
	var ctxErr error
	if c.sim != nil {
		done, ctxErr, timedOut = c.awaitGroupSim(ctx, g, cmds) // simseam.go
	} else {
		budget := c.submitReadOwn(ctx, cmds)
		select {
		case <-g.done: // read by this goroutine: complete, no timer needed
			done = true
		default:
			done, ctxErr, timedOut = awaitGroup(ctx, g, budget, relaxOf{lead: cmds[0]})
		}
	}
	if !done && c.eng.Withdraw(cmds[0]) {
		// Still waiting for a connection: nothing was sent.
		err := ctxErr
		if timedOut {
			err = c.timeoutErr(cls[0].cmd.Name, StageWaitingForCapacity)
		}
		b.release(c, cls, nil)
		b.failAll(err)
		return err
	}
	return b.settle(c, cls, done, ctxErr, timedOut, mode, nil)
}

// submitReadOwn submits the group cmds and lets the caller read its replies itself, on its own
// goroutine, when the connection that took the group allows it (engine.Engine.SubmitGroupReadOwn:
// a lone caller that wrote its group on an idle connection). That spares the hand-off from the
// connection's reader goroutine to the caller. It reads within the command timeout and until ctx
// ends. It returns the budget left for awaitGroup, which then finds the group complete or waits
// for the rest (and sees ctx's end): all of it when the caller did not read (the clock is then
// not read here: submitting took microseconds).
func (c *Client) submitReadOwn(ctx context.Context, cmds []*engine.Command) time.Duration {
	budget := c.opts.CommandTimeout
	done, deadline := c.eng.SubmitGroupReadOwn(ctx, cmds, c.readDeadline)
	if done || budget <= 0 || deadline.IsZero() {
		return budget // complete, or not read by this caller: the whole budget to wait in
	}
	// Stopped early (the deadline, or a failure): wait for the rest within what is left.
	return max(time.Until(deadline), time.Nanosecond)
}

// awaitGroup waits for every call of the group g to complete, within budget (zero: none) and
// ctx. done is false when the wait was interrupted, by ctx (ctxErr) or by the budget (timedOut):
// settle then leaves the calls still pending to their connection.
//
// When the budget fires, the run asks the relaxation of the connection that took it (relax
// returns it; nil: none) for more time, as a single command does (relaxTimer): while that
// connection is in a maintenance window the run's deadline is max(budget, relaxed) from its
// start, and a completion that shrinks the window ends the wait at once if the run is older
// than its budget.
func awaitGroup(ctx context.Context, g *callGroup, budget time.Duration, relax relaxOf) (done bool, ctxErr error, timedOut bool) {
	var gd groupDeadline
	gd.arm(budget)
	defer gd.stop()
	timeout := gd.fired()
	for {
		select {
		case <-g.done:
			return true, nil, false
		case <-ctx.Done():
			return false, ctx.Err(), false
		case at := <-timeout:
			if gd.expired(relax.relax(), at) {
				return false, nil, true
			}
		case <-gd.shrunk:
			if gd.expired(relax.relax(), time.Time{}) {
				return false, nil, true
			}
		}
	}
}

// relaxOf names where a waiter finds the relaxation of the connection its commands went to:
// the command the engine handed to it (lead: engine.Command.Relax, set when a connection takes
// it), or the connection itself (conn: a dedicated connection's). Both nil: none.
type relaxOf struct {
	lead *engine.Command
	conn engine.Conn
}

// relax returns the relaxation host, or nil.
func (o relaxOf) relax() *engine.Relax {
	if o.lead != nil {
		return o.lead.Relax()
	}
	if r, ok := o.conn.(engine.Relaxer); ok {
		return r.Relax()
	}
	return nil
}

// failAll records err as the outcome of every entry (nothing was sent).
func (b *Batch) failAll(err error) {
	for i := range b.ents {
		b.ents[i].out.fail(err)
	}
}

// failEach records the outcome of a transaction that did not run as each entry's: an unknown
// outcome or a timeout is reported under each entry's own command name.
func (b *Batch) failEach(err error) {
	for i := range b.ents {
		b.ents[i].out.fail(withCommandName(err, b.ents[i].name))
	}
}

// settle turns the calls of a run into the entries' outcomes and returns the first error, then
// releases the calls. When the wait was interrupted (done false: by ctxErr, or by the budget
// when timedOut), the calls still pending are abandoned to their connection, which recycles
// them. raw, when set, receives EXEC's replies (DedicatedConn.Exec).
func (b *Batch) settle(c *Client, cls []*call, done bool, ctxErr error, timedOut bool, mode batchMode, raw *[]resp.Value) error {
	// A call abandoned here belongs to its connection now, which recycles it and may hand it
	// to another caller: what the outcome needs (abandoned or not, and its stage) is recorded
	// before the call is let go, and it is never read again.
	var marks []bool
	var stages []Stage
	if !done {
		n := len(cls)
		marks = append(b.marks[:0], make([]bool, n)...)
		stages = append(b.stages[:0], make([]Stage, n)...)
		b.marks, b.stages = marks, stages
		// Leave every call whose completion has not come: each one left counts down the
		// group as its completion would have. The completions that won are delivered, or
		// being delivered: unless this loop counted the last call down, the last of them
		// signals the group.
		last := false
		for i := range cls {
			stage := stageOf(cls[i].cmd.Stage())
			if cls[i].cmd.Leave() {
				marks[i], stages[i] = true, stage
				if b.grp.left.Add(-1) == 0 {
					last = true
				}
			}
		}
		if !last {
			<-b.grp.done
		}
	}
	abandoned := func(i int) bool { return marks != nil && marks[i] }
	// lost is the outcome of abandoned call i, which runs command name.
	lost := func(i int, name string) error {
		if timedOut {
			return c.timeoutErr(name, stages[i])
		}
		return &UnknownOutcomeError{CommandName: name, Endpoint: c.ep, Stage: stages[i], Err: ctxErr}
	}
	var first error
	if mode == modePipeline {
		texts := b.pack()
		sentinel := c.opts.SentinelPrimaryName != ""
		for i, cl := range cls {
			ent := &b.ents[i]
			var err error
			switch {
			case marks != nil && marks[i]:
				err = lost(i, ent.name)
				ent.out.fail(err)
			case cl.cmd.Err != nil:
				err = c.commandFailure(&cl.cmd)
				ent.out.fail(err)
			default:
				v := &cl.cmd.Reply
				if sentinel {
					c.noteReadOnly(v)
				}
				if ent.keys != replyNoKeys {
					v = b.reply(i, v)
				}
				err = ent.out.settle(v, ent.name, c.ep, texts, ent.dec)
			}
			if first == nil {
				first = err
			}
		}
	} else {
		first = b.settleExec(c, cls, abandoned, lost, raw)
	}
	b.release(c, cls, marks)
	return first
}

// settleExec settles the entries of a transaction from EXEC's reply: every entry shares the
// transaction's fate unless EXEC ran it, when each gets its own reply.
func (b *Batch) settleExec(c *Client, cls []*call, abandoned func(int) bool, lost func(int, string) error, raw *[]resp.Value) error {
	exec := cls[len(cls)-1]
	failAll := func(err error) error {
		b.failEach(err)
		return err
	}
	if abandoned(len(cls) - 1) {
		return failAll(lost(len(cls)-1, "EXEC"))
	}
	if exec.cmd.Err != nil {
		// MULTI may have run and EXEC may not have: either way, EXEC's outcome is each entry's.
		return failAll(c.commandFailure(&exec.cmd))
	}
	multi := &cls[0].cmd
	if err := c.replyErr("MULTI", &multi.Reply); err != nil {
		return failAll(err)
	}
	var queueErr *TxQueueError
	for i, cl := range cls[1 : len(cls)-1] {
		c.noteReadOnly(&cl.cmd.Reply)
		if v := &cl.cmd.Reply; v.IsError() && queueErr == nil {
			queueErr = &TxQueueError{Index: i, Err: serverError(v, cl.cmd.Name, c.ep, "")}
		}
	}
	v := &exec.cmd.Reply
	switch {
	case v.Kind == resp.KindNull:
		return failAll(&TxConflictError{Endpoint: c.ep})
	case v.IsError():
		if queueErr != nil {
			return failAll(queueErr)
		}
		return failAll(c.replyErr("EXEC", v))
	case v.Kind != resp.KindArray || v.Len() != len(b.ents):
		return failAll(unexpected("EXEC", v))
	}
	var first error
	if raw != nil {
		*raw = make([]resp.Value, len(b.ents))
	}
	var e resp.Value // one variable for every element: settle takes its address
	for i, x := range v.All() {
		e = x
		c.noteReadOnly(&e)
		r := b.reply(i, &e)
		err := b.ents[i].out.settle(r, b.ents[i].name, c.ep, b.pack(), b.ents[i].dec)
		if raw != nil {
			(*raw)[i] = r.Clone()
		}
		if first == nil {
			first = err
		}
	}
	return first
}

// runBatch implements executor: the batch goes to the dedicated connection, which is the
// caller's alone.
func (d *DedicatedConn) runBatch(ctx context.Context, b *Batch, mode batchMode) error {
	return d.runBatchRaw(ctx, b, mode, nil, d.c.ns)
}

// runBatchIn implements baseExecutor.
func (d *DedicatedConn) runBatchIn(ctx context.Context, b *Batch, mode batchMode, ns *namespace) error {
	return d.runBatchRaw(ctx, b, mode, nil, ns)
}

func (d *DedicatedConn) runBatchRaw(ctx context.Context, b *Batch, mode batchMode, raw *[]resp.Value, ns *namespace) error {
	defer b.done()
	c := d.c
	if err := b.check(c, false, mode); err != nil {
		b.failAll(err)
		return err
	}
	if err := b.prepare(ns); err != nil {
		b.failAll(err)
		return err
	}
	if len(b.ents) == 0 && mode == modePipeline {
		return nil
	}
	if err := d.acquire(); err != nil {
		b.failAll(err)
		return err
	}
	defer d.release()
	if err := ctx.Err(); err != nil {
		b.failAll(err)
		return err
	}
	for i := range b.ents {
		info := b.ents[i].info
		switch {
		case info == nil:
		case info.Session() == command.SessionState:
			// Marked before sending: even a failed attempt may have changed it.
			d.dirty = true
		case info.Session() == command.SessionWatch:
			// A pipelined WATCH (or UNWATCH: clearing again at Close is harmless) makes Close
			// send UNWATCH before the next renter.
			d.watching = true
		}
	}
	if mode != modePipeline {
		d.watching = false // EXEC and DISCARD end every WATCH
	}
	cls, _, g := b.start(c, mode)
	d.send(cls)
	var done, timedOut bool
	var ctxErr error
	if c.sim != nil {
		done, ctxErr, timedOut = c.awaitGroupHost(ctx, g, d.budget(), relaxOf{conn: d.conn}) // simseam_dedicated.go
	} else {
		done, ctxErr, timedOut = awaitGroup(ctx, g, d.budget(), relaxOf{conn: d.conn})
	}
	// Read what decides the connection's fate before settle recycles the calls. The
	// connection is discarded when it failed, still owns commands, or ran the commands of a
	// transaction one by one after MULTI failed: its state is unknown.
	failed := !done
	if done {
		for _, cl := range cls {
			if cl.cmd.Err != nil {
				failed = true
			}
		}
		if mode != modePipeline && cls[0].cmd.Err == nil && cls[0].cmd.Reply.IsError() {
			failed = true
		}
	}
	err := b.settle(c, cls, done, ctxErr, timedOut, mode, raw)
	if failed {
		d.discard()
	}
	return err
}

// String describes the future's state ("client.Future{pending}", "{ok}" or "{error: ...}")
// without its value, which is user data: print Val to see it.
func (f *Future[T]) String() string {
	switch {
	case f == nil:
		return "client.Future(nil)"
	case f.err == ErrNotRun:
		return "client.Future{pending}"
	case f.err != nil:
		return "client.Future{error: " + f.err.Error() + "}"
	}
	return "client.Future{ok}"
}

// GoString makes %#v print the state only too.
func (f *Future[T]) GoString() string { return f.String() }

// Format makes every fmt verb print the state only.
func (f *Future[T]) Format(s fmt.State, verb rune) { formatRedacted(s, verb, f.String()) }

// LogValue makes slog log the state only.
func (f *Future[T]) LogValue() slog.Value { return slog.StringValue(f.String()) }
