package netio

import (
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/respire-go/respire/engine"
	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/netio/resp"
	"github.com/respire-go/respire/netio/wire"
)

const (
	// maxBatchBytes is how much the writer gathers before it writes even though more commands are
	// queued. Below it, the writer writes only when its queue is empty.
	maxBatchBytes = 256 << 10
	// maxRetainedBuffer is the largest write buffer kept for reuse; a larger one (a batch holding a
	// big value) is dropped after its write so that one large command does not pin memory.
	maxRetainedBuffer = 1 << 20
	// readAhead is the size the read buffer grows to while reads keep filling it
	// (resp.Reader.SetReadAhead): a busy connection reads up to 32 KiB of replies per read
	// system call instead of 4 KiB; a quiet one keeps 4 KiB.
	readAhead = 32 << 10
)

// Conn is one established, handshaken connection to a Redis server: the netio implementation of
// engine.Conn. It pipelines: Send only queues, a writer goroutine writes everything queued in one
// batch (flushing only when its queue is empty), and a reader goroutine parses replies into the
// commands' own Reply values and completes them strictly in FIFO order. RESP3 pushes never
// complete a command; they go to TransportConfig.Push. On an idle connection (writer parked,
// nothing queued, nothing in flight) a caller whose frames total at most 16 KiB writes them
// itself instead of waking the writer (conn_direct.go); such a write fits the empty send buffer,
// so Send still returns without waiting for the network.
//
// Commands complete (their Done runs) on the reader goroutine, or on the caller's goroutine when
// Send rejects them at once. A Done callback must not block, and must not call Close of the
// connection that completes it (Close waits for the reader): replies arrive in order behind it.
// Send and Drain may be called from a Done callback.
//
// What it decides about its commands (stages, pairing, pushes, drain, failure, the idle-read
// verdict) is wire.Pipeline's, the machine the simulator runs too; Conn adds the socket, the two
// goroutines and the locks: the pipeline's queue side under one lock, its flight side under
// another, so that the writer and the reader do not contend.
//
// When the connection fails (a read or write error, the server closing it, a protocol error) it
// fails once: every pending command completes with the same *IOError (those never written at
// StageBuffered, written ones at their later stage, so MaybeSent tells an unknown outcome from a
// definite failure), the socket closes, and the Sink's Lost is called exactly once. After Close or
// Drain the connection reports nothing to the Sink.
//
// Bounds: the queue and the in-flight list are bounded only by the commands callers have sent
// and not yet seen complete; the engine and client above bound those. The write buffer holds one
// write: it stops gathering once it reaches maxBatchBytes (so it holds at most that plus the
// last take of the queue), and a buffer grown beyond maxRetainedBuffer is dropped after its
// write. The read buffer is bounded by resp.Limits; it grows to readAhead (32 KiB) and stays
// there once replies arrive faster than 4 KiB per read.
//
// Liveness bounds (TransportConfig.IdleReadTimeout and WriteStallTimeout, the spec's
// ConnectionIdleReadTimeout and GatheredWriteStallTimeout) use socket deadlines, never timers of
// their own (see liveness.go):
//   - idle read: while replies are pending, the connection fails once no byte arrived for
//     IdleReadTimeout since the last progress (the last bytes, or the write that made replies
//     pending on a connection that had none). New commands do not postpone it.
//   - write stall: each write of the socket, in pieces of at most stallChunk bytes, fails when it
//     cannot complete within WriteStallTimeout.
//
// Both fire between the bound and 1.25 times the bound: deadlines are re-armed lazily, only when
// less than the bound remains, so that a busy connection does not reset a socket deadline on
// every read and write.
//
// An expired bound fails the connection like any other I/O error: an *IOError (Timeout true)
// whose cause is a *LivenessError; written commands end with an unknown outcome, Lost is reported.
type Conn struct {
	id fsm.ConnID
	ep engine.Endpoint
	nc net.Conn
	// sys is nc when it makes raw system calls (sysio_linux.go), else nil.
	sys   *sysConn
	sink  engine.Sink
	push  func(resp.Value)
	proto int
	// readOnly: the handshake sends READONLY (engine.OpenRequest.ReadOnly).
	readOnly bool
	// relax hosts the maintenance relaxation when the handshake enabled notifications (maint.go).
	relax *engine.Relax

	// ident is the connection's CLIENT ID and physical peer (fence.go), set by the handshake;
	// unanswered records that it failed with commands written and unanswered (set by finish,
	// before done closes).
	ident      engine.Identity
	identified bool
	fenceable  bool
	unanswered atomic.Bool

	// Liveness bounds (zero: off) and whether the idle-read watchdog runs (set by start, once the
	// handshake's own deadline is gone).
	idleRead   time.Duration
	writeStall time.Duration
	watching   bool
	// writeArmed is the socket's write deadline (writer-owned; zero: none).
	writeArmed time.Time

	// origin is the time base of the pipeline's instants (the idle-read clock).
	origin time.Time

	// p is the pending commands (netio/wire): its queue side is guarded by qmu, its flight side
	// by fmu, its batch side is the writer's.
	p wire.Pipeline
	// closedErr is p.ClosedError(), read without a lock.
	closedErr error

	// Sender side, guarded by qmu (with p's queue side).
	qmu        sync.Mutex
	writerIdle bool // the writer waits on wake
	wake       chan struct{}
	failed     atomic.Bool // the pipeline stopped (read without the lock by the writer)

	// Writer-owned (with p's batch side).
	buf []byte // frames of the held commands

	// In flight: p's flight side and the idle-read watchdog state (liveness.go), guarded by fmu.
	fmu sync.Mutex
	// readArmed is the socket's read deadline (zero: none).
	readArmed time.Time

	// inFlight mirrors p.InFlight, readable without fmu: the writer's hint that other callers
	// are active.
	inFlight atomic.Int64

	// Reader-owned: owned by whoever holds the read side, the reader goroutine or a caller
	// reading its own replies (conn_callread.go).
	rd        *resp.Reader
	scratch   resp.Value
	nread     uint64        // replies delivered (completed's only writer)
	completed atomic.Uint64 // replies delivered, for Drain
	draining  atomic.Bool

	// cr is the caller-reads mode (conn_callread.go); its side fields are guarded by fmu.
	cr callRead
	// replies holds the replies paired under one hold of fmu (conn_run.go); nil when replies are
	// paired one at a time. Reader-owned.
	replies *replyRun
	// head is the pipeline (engine.Multi) at the head of the flight that awaits more replies,
	// once a reply paired with it; nil otherwise (read side: conn_run.go).
	head *engine.Command

	writerDone chan struct{}
	announced  chan struct{} // closed once Sink.Ready returned: Lost may follow
	done       chan struct{}
}

var (
	_ engine.Conn         = (*Conn)(nil)
	_ engine.Offerer      = (*Conn)(nil)
	_ engine.GroupOfferer = (*Conn)(nil)
	_ engine.Stopper      = (*Conn)(nil)
)

// newConn wraps an established transport connection; its goroutines start with start.
func newConn(nc net.Conn, req *engine.OpenRequest, cfg *TransportConfig) *Conn {
	nc = wrapSys(nc)
	c := &Conn{
		sys:        sysOf(nc),
		id:         req.Conn,
		ep:         req.Endpoint,
		nc:         nc,
		sink:       req.Sink,
		push:       cfg.Push,
		proto:      2,
		readOnly:   req.ReadOnly,
		idleRead:   idleReadBound(req, cfg),
		writeStall: max(cfg.WriteStallTimeout, 0),
		wake:       make(chan struct{}, 1),
		writerDone: make(chan struct{}),
		announced:  make(chan struct{}),
		done:       make(chan struct{}),
	}
	if c.idleRead > 0 {
		c.rd = resp.NewReader(idleReader{c}, cfg.Limits)
	} else {
		c.rd = resp.NewReader(nc, cfg.Limits)
	}
	c.rd.SetReadAhead(readAhead)
	c.origin = time.Now()
	c.p.Init(c.ep, c.id)
	c.closedErr = c.p.ClosedError() // built once, before any goroutine shares it
	return c
}

// ID returns the connection's id.
func (c *Conn) ID() fsm.ConnID { return c.id }

// Endpoint returns the connection's destination.
func (c *Conn) Endpoint() engine.Endpoint { return c.ep }

// Protocol returns the negotiated RESP version, 2 or 3.
func (c *Conn) Protocol() int { return c.proto }

// Stopped implements engine.Stopper: it reports whether the connection has stopped for good
// (failed, closed, or drained and closed).
func (c *Conn) Stopped() bool { return c.failed.Load() }

// Err returns the error the connection failed or closed with, or nil while it is open.
func (c *Conn) Err() error {
	c.qmu.Lock()
	defer c.qmu.Unlock()
	err, _ := c.p.Err()
	return err
}

// Send queues cmd, which must be at engine.StageBuffered, for writing and returns without waiting
// for the network. On a connection that failed, closed or drains, it completes cmd at once, on
// the caller's goroutine, with an error at StageBuffered: the failure's *IOError, or an *IOError
// wrapping ErrClosed after Close or Drain. While a failed connection's reader is still
// completing the commands that were pending, cmd completes after them instead, on the reader
// goroutine, with the same error, so that completions stay in the order of the sends.
func (c *Conn) Send(cmd *engine.Command) {
	if err := c.enqueue(false, cmd); err != nil {
		if c.completeLate(cmd) {
			return
		}
		cmd.Complete(err)
	}
}

// completeLate hands cmd, which Send could not queue, to the reader's finish when the connection
// failed and finish has not yet completed what was pending: cmd then completes after the
// commands sent before it, in FIFO order (wire.Pipeline.AcceptLate). A failure stops the
// connection before its reader completes the command whose reply failed it, so without this a
// Send in between would be answered first. It reports false when cmd must complete at once.
func (c *Conn) completeLate(cmd *engine.Command) bool {
	c.qmu.Lock()
	defer c.qmu.Unlock()
	return c.p.AcceptLate(cmd)
}

// Offer implements engine.Offerer: it queues cmd like Send and reports true, or, when the
// connection no longer takes commands (draining, closed or failed), reports false and leaves cmd
// untouched so that the engine routes it to another connection.
func (c *Conn) Offer(cmd *engine.Command) bool { return c.enqueue(false, cmd) == nil }

// OfferGroup implements engine.GroupOfferer: it queues every command of cmds under one hold of
// the queue's lock, so that the writer, which takes the whole queue at once, writes their frames
// back to back with nothing between them; or, when the connection no longer takes commands, it
// reports false and leaves them untouched.
func (c *Conn) OfferGroup(cmds []*engine.Command) bool { return c.enqueue(true, cmds...) == nil }

// OfferOwnGroup implements engine.OwnGroupOfferer: OfferGroup from the group's caller, which
// calls ReadOwn next, so that a direct write keeps the free read side for it without a claim
// window (conn_callread.go).
func (c *Conn) OfferOwnGroup(cmds []*engine.Command) bool { return c.enqueueOwn(cmds) == nil }

// enqueue queues cmds for the writer, all of them or none, or returns the error that rejects
// them. group: they came as a group (OfferGroup), whose caller may read the replies itself.
func (c *Conn) enqueue(group bool, cmds ...*engine.Command) error {
	return c.enqueueAs(group, false, cmds)
}

// enqueueOwn is enqueue for a group whose caller reads its replies next (OfferOwnGroup).
func (c *Conn) enqueueOwn(cmds []*engine.Command) error { return c.enqueueAs(true, true, cmds) }

// enqueueAs is enqueue; own: the group's caller calls ReadOwn next.
func (c *Conn) enqueueAs(group, own bool, cmds []*engine.Command) error {
	c.qmu.Lock()
	if c.writerIdle && c.inFlight.Load() == 0 && directFits(cmds) {
		// An idle connection: the caller writes its commands itself (conn_direct.go).
		direct, err := c.p.AcceptDirect(cmds)
		if err != nil {
			c.qmu.Unlock()
			return err
		}
		if direct {
			c.writeDirect(cmds, group, own) // releases qmu
			return nil
		}
	}
	if err := c.p.AcceptGroup(cmds); err != nil {
		c.qmu.Unlock()
		return err
	}
	wake := c.writerIdle
	c.writerIdle = false
	c.qmu.Unlock()
	if wake {
		select {
		case c.wake <- struct{}{}:
		default:
		}
	}
	return nil
}

// Drain stops taking commands and closes the connection once every accepted command has
// completed. It returns at once and reports nothing to the Sink, even if the connection fails
// while draining.
func (c *Conn) Drain() {
	c.qmu.Lock()
	accepted, ok := c.p.Drain()
	c.qmu.Unlock()
	if !ok {
		return
	}
	c.draining.Store(true)
	if c.completed.Load() == accepted {
		c.shutdown(c.closedErr, true)
	}
}

// Close aborts the connection: it closes the socket, completes every pending command with an
// *IOError wrapping ErrClosed (never-written ones at StageBuffered, written ones at their later
// stage) and returns once both of the connection's goroutines have finished. It reports nothing
// to the Sink. Close is idempotent; it must not be called from a command's Done callback.
func (c *Conn) Close() {
	c.shutdown(c.closedErr, true)
	<-c.done
}

// shutdown records the connection's first failure, closes the socket and wakes the writer. The
// reader goroutine then completes everything pending (finish).
func (c *Conn) shutdown(err error, quiet bool) {
	c.qmu.Lock()
	if !c.p.Stop(err, quiet) {
		c.qmu.Unlock()
		return
	}
	c.failed.Store(true)
	c.qmu.Unlock()
	_ = c.nc.Close()
	select {
	case c.wake <- struct{}{}:
	default:
	}
	c.wakeParked() // a reader waiting for its read side must see the failure (conn_callread.go)
}

// ioError wraps a failure of the established connection.
func (c *Conn) ioError(op string, err error) error {
	return &IOError{Endpoint: c.ep, Conn: c.id, Op: op, Err: err}
}

// start starts the writer and reader goroutines. Call announce once Sink.Ready has returned.
func (c *Conn) start() {
	c.watching = c.idleRead > 0
	c.cr.init(c)
	c.initRun()
	go c.writeLoop()
	go c.run()
}

// announce records that Sink.Ready returned, so that Lost, if it comes, follows it.
func (c *Conn) announce() { close(c.announced) }

// run is the reader goroutine: it reads replies until the connection fails or closes, then
// completes everything pending and reports Lost unless the engine closed the connection.
func (c *Conn) run() {
	err := c.readLoop()
	c.shutdown(err, false)
	<-c.writerDone
	c.finish()
}

// readLoop parses replies and completes commands in FIFO order. It returns the read failure.
// Between replies, on a connection in the caller-reads mode, it may lend the read side to a
// caller and wait until it comes back (conn_callread.go).
func (c *Conn) readLoop() error {
	for {
		c.sys.readerReads(true)
		if err := c.rd.Read(&c.scratch); err != nil {
			return c.ioError("read", err)
		}
		if err := c.handle(); err != nil {
			return err
		}
		if c.cr.on && c.inFlight.Load() == 0 && c.cr.want.Load() && c.parkReader() {
			if err := c.parked(); err != nil {
				return err
			}
		}
	}
}

// handle processes the frame just read into c.scratch: a push goes to its handler, a reply
// completes the oldest command in flight. It returns the error that fails the connection. It
// runs on whoever holds the read side.
func (c *Conn) handle() error {
	if c.p.Unsolicited(&c.scratch) {
		if c.relax != nil {
			c.maintNotice()
		}
		if c.push != nil {
			c.push(c.scratch)
		}
		return nil
	}
	if c.replies != nil && c.rd.Buffered() > 0 {
		return c.handleRun() // more replies may be whole in the buffer (conn_run.go)
	}
	cmd, err := c.next()
	if err != nil {
		return c.ioError("read", err)
	}
	// The reply moves into the command and the command's old storage becomes the next
	// scratch: no copy, no allocation once the storages are large enough.
	done, err := wire.Deliver(cmd, &c.scratch)
	if err != nil {
		return c.misfit(cmd, err)
	}
	if done {
		c.delivered()
	} // else a pipeline's reply: the pipeline completes with its last (engine.Multi)
	return nil
}

// misfit fails the connection with err, the error of a reply that does not fit cmd
// (wire.Deliver): nothing after it can be trusted to pair either. The connection stops taking
// commands before the caller learns of the failure; cmd completes as wire.CompleteMisfit says
// (a pipeline still in flight completes with the rest of the flight: finish). It returns the
// connection's error.
func (c *Conn) misfit(cmd *engine.Command, err error) error {
	if cmd.Paired() {
		c.nread++
	}
	c.completed.Store(c.nread)
	ioErr := c.ioError("read", err)
	c.shutdown(ioErr, false)
	wire.CompleteMisfit(cmd, err, ioErr)
	return ioErr
}

// delivered counts a completed command and closes a draining connection that answered
// everything.
func (c *Conn) delivered() {
	c.nread++
	c.completed.Store(c.nread)
	if c.draining.Load() && c.drained(c.nread) {
		c.shutdown(c.closedErr, true)
	}
}

// next takes the command the reply just read belongs to (wire.Pipeline.Next).
func (c *Conn) next() (*engine.Command, error) {
	c.fmu.Lock()
	defer c.fmu.Unlock()
	cmd, err := c.p.Next()
	switch {
	case cmd == nil:
	case !cmd.Paired():
		c.head = cmd // a pipeline with more replies to come (conn_run.go)
	default:
		c.inFlight.Add(-1)
		if c.head == cmd {
			c.head = nil
		}
	}
	return cmd, err
}

// drained reports whether every accepted command has completed.
func (c *Conn) drained(completed uint64) bool {
	c.qmu.Lock()
	defer c.qmu.Unlock()
	return c.p.Drained(completed)
}

// finish completes every pending command with the failure, in FIFO order, and reports Lost unless
// the engine closed or drained the connection. It runs on the reader goroutine after the writer
// has exited, so it owns everything left.
func (c *Conn) finish() {
	c.qmu.Lock()
	err, quiet := c.p.Err()
	queued := c.p.TakeQueued()
	c.qmu.Unlock()

	c.fmu.Lock()
	inFlight := c.p.TakeFlight(make([]*engine.Command, 0, c.p.InFlight()))
	c.fmu.Unlock()

	c.unanswered.Store(len(inFlight) > 0)
	for _, cmd := range inFlight {
		cmd.Complete(err)
	}
	for _, cmd := range c.p.TakeHeld() {
		cmd.Complete(err)
	}
	for _, cmd := range queued {
		cmd.Complete(err)
	}
	// Close waits for done; it is closed before Lost so that a Sink may close the connection
	// from Lost.
	close(c.done)
	if !quiet {
		<-c.announced
		c.sink.Lost(c.id, err)
	}
}

// writeLoop is the writer goroutine.
func (c *Conn) writeLoop() {
	defer close(c.writerDone)
	for c.collect() && c.flush() {
	}
}

// collect waits for commands and gathers the next write: everything queued, again and again while
// more arrives and the batch is under maxBatchBytes. It reports false when the connection failed;
// commands it holds then stay held at StageBuffered for finish.
func (c *Conn) collect() bool {
	yielded := false
	c.qmu.Lock()
	for {
		if c.p.Stopped() {
			c.qmu.Unlock()
			return false
		}
		if !c.p.Queued() {
			if held := c.p.Holding(); held > 0 {
				if !yielded && (held > 1 || c.inFlight.Load() > 0) {
					// Other callers are active: their next commands are likely runnable right
					// now (woken by the replies just delivered). Let them run once before
					// flushing so that one write carries them all. A lone sequential caller
					// (nothing else in flight) is flushed at once. No timer is involved.
					yielded = true
					c.qmu.Unlock()
					runtime.Gosched()
					c.qmu.Lock()
					continue
				}
				// The queue is empty: time to flush.
				c.qmu.Unlock()
				return true
			}
			c.writerIdle = true
			c.qmu.Unlock()
			<-c.wake
			c.qmu.Lock()
			continue
		}
		batch := c.p.Take()
		c.qmu.Unlock()
		for _, cmd := range batch {
			c.buf = append(c.buf, cmd.Frame...)
		}
		c.p.Hold(batch)
		if len(c.buf) >= maxBatchBytes {
			return true
		}
		c.qmu.Lock()
	}
}

// flush hands the held commands to the reader, marks them writing, writes their frames in one
// write and then marks those still in flight written. It reports false when the connection failed.
func (c *Conn) flush() bool {
	if c.failed.Load() {
		// Failed while gathering: nothing of held left, they complete at StageBuffered.
		return false
	}
	c.fmu.Lock()
	first, last, wasIdle := c.p.Handoff()
	c.resumeForWriter(!wasIdle) // replies become pending: somebody must read them (conn_callread.go)
	c.sys.writerWrites(true)
	return c.writeHanded(c.buf, first, last, wasIdle)
}

// writeHanded writes buf, the frames of the commands that a handoff just moved to the flight
// (sequence numbers first to last), and then marks those still in flight written. It is called
// with fmu held, by whoever owns the writer's side: the writer goroutine, or a caller writing
// its own commands (writeDirect). It reports false when the connection failed.
func (c *Conn) writeHanded(buf []byte, first, last uint64, wasIdle bool) bool {
	if wasIdle && c.watching {
		c.p.Progress(c.since(time.Now())) // replies become pending: the idle-read clock starts
	}
	c.inFlight.Add(int64(last - first))
	c.fmu.Unlock()

	err := c.write(buf)
	if cap(c.buf) > maxRetainedBuffer {
		c.buf = nil
	} else {
		c.buf = c.buf[:0]
	}
	if err != nil {
		c.shutdown(c.ioError("write", err), false)
		return false
	}
	c.fmu.Lock()
	if wasIdle && c.watching && c.p.InFlight() > 0 {
		// Replies became pending on an idle connection and the write that carries them is done:
		// the idle-read clock starts now. The reader may be blocked without a deadline.
		now := time.Now()
		c.p.Progress(c.since(now))
		c.armRead(now)
	}
	c.p.Wrote(first, last)
	c.fmu.Unlock()
	return true
}

// since returns t as an instant of the pipeline's time base.
func (c *Conn) since(t time.Time) time.Duration { return t.Sub(c.origin) }
