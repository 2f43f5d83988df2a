package netio

import (
	"sync/atomic"

	"github.com/respire-go/respire/engine"
	"github.com/respire-go/respire/netio/resp"
	"github.com/respire-go/respire/netio/wire"
)

// Replies in runs.
//
// One read of the socket usually brings many replies: a batch of 100 GETs comes back in a few
// reads of several KiB. Pairing each reply with its command under its own hold of the flight
// lock (fmu) costs a lock and an atomic per reply, on a lock that the writer takes for every
// write, so the lock's cache line travels between the reader's core and the writers'. The read
// side therefore pairs a run: after the blocking read of a reply, it also decodes the replies
// that are already whole in the read buffer (resp.Reader.ReadBuffered, which never reads the
// socket), up to runMax in all and while they took fewer than runBytes of the buffer, takes
// their commands from the flight under one hold of fmu, and then completes them in order,
// outside the lock, exactly as it completes a single reply.
//
// What stays the same:
//   - Order: replies pair with the flight strictly in FIFO order, and commands complete in that
//     order.
//   - Stages: a command leaves the flight only when its reply has been decoded, so the reply
//     proves its write complete (wire.Pipeline.Next marks it written), as before. Nothing the
//     reader holds is ever waiting for a reply: a run is paired and completed within one call of
//     handle, so a failure later in the stream finds every command without a reply still in the
//     flight, where finish completes it once.
//   - Failure within a run: a reply that does not fit its command (Deliver's misfit) stops the
//     connection before that command completes; the commands of the run after it, whose
//     replies arrived but can no longer be trusted to pair, complete with the connection's
//     error, before everything still in the flight (finish), so each completes exactly once and
//     in order. A protocol error in a buffered reply, or a reply with nothing in flight, fails
//     the connection after the replies before it completed, as a blocking read would.
//   - Pushes: runs are used only on connections without a push handler and without
//     maintenance notices, whose pushes are dropped; a push in a run is dropped too. A
//     connection that hands pushes on pairs one reply at a time, so that pushes and
//     completions keep their order.
//   - Drain, Close and the caller-reads hand-over see the same counts: the count of replies
//     delivered (completed) advances by the run's replies once the run completed (one atomic
//     store per run), and the reader then checks Drain, as it does after a single reply.
//
// Bounds: runMax replies per run. The run's values keep the storage of the replies they last
// held (the commands' previous replies, swapped out by Deliver), like the scratch value does:
// at most runMax-1 storages besides the scratch value's, reused by the next runs.

// runMax is the most replies the read side pairs under one hold of the flight lock.
const runMax = 32

// runBytes ends a run early once the replies decoded after its first took this many bytes of the
// read buffer. A run's commands complete only after all its replies are decoded, so a long run
// of costly replies (a ZRANGE of ten members with scores is some 30 values) keeps its first
// callers waiting while the rest decode, and callers that wait send nothing, which leaves the
// server idle. Small replies still make long runs: SET's +OK fills runMax, a GET of a 64-byte
// value (71 bytes on the wire) about 30. Measured at 64 callers against runs bounded by runMax
// alone (docs/performance.md, "Sorted sets and hashes"): ZRANGE 8 to 10 % and HGETALL 2 to 8 %
// more commands per second, GET and SET unchanged.
const runBytes = 2 << 10

// replyRun is the read side's storage for a run (owned by whoever holds the read side).
type replyRun struct {
	// vals are the replies after the first (which is the Conn's scratch value).
	vals [runMax - 1]resp.Value
	// cmds are the commands the run paired its replies with, in order: a pipeline
	// (engine.Multi) once per reply.
	cmds [runMax]*engine.Command
	// popped[i] reports that cmds[i] left the flight with the i-th reply (its last).
	popped [runMax]bool
	// runs counts the runs of more than one reply (tests).
	runs atomic.Uint64
}

// initRun decides whether the connection pairs replies in runs. Called by start, after the
// handshake decided on maintenance notices.
func (c *Conn) initRun() {
	if c.push == nil && c.relax == nil {
		c.replies = new(replyRun)
	}
}

// reply returns the i-th reply of the current run.
func (c *Conn) reply(i int) *resp.Value {
	if i == 0 {
		return &c.scratch
	}
	return &c.replies.vals[i-1]
}

// handleRun pairs and completes the reply in c.scratch (not a push) and the whole replies behind
// it in the read buffer, up to runMax. It returns the error that fails the connection. It runs
// on whoever holds the read side.
func (c *Conn) handleRun() error {
	if cmd := c.head; cmd != nil {
		return c.handleMultiRun(cmd)
	}
	// The reply may be the first of a pipeline: then its replies go straight into it.
	c.fmu.Lock()
	var head *engine.Command
	if c.p.InFlight() > 0 {
		head = c.p.At(0)
	}
	c.fmu.Unlock()
	if head != nil && head.Unpaired() > 1 {
		c.head = head
		return c.handleMultiRun(head)
	}
	r := c.replies
	n := 1
	var readErr error
	// The reads below never read the socket, so what they consume is what Buffered loses.
	buffered := c.rd.Buffered()
	for n < runMax && buffered-c.rd.Buffered() < runBytes {
		ok, err := c.rd.ReadBuffered(&r.vals[n-1])
		if err != nil {
			readErr = c.ioError("read", err)
			break
		}
		if !ok {
			break
		}
		if c.p.Unsolicited(&r.vals[n-1]) {
			continue // nobody takes pushes on this connection (initRun): dropped, as by handle
		}
		n++
	}

	if n > 1 {
		r.runs.Add(1)
	}
	c.fmu.Lock()
	k := 0
	popped := 0
	var pairErr error
	for k < n {
		cmd, err := c.p.Next()
		if err != nil {
			pairErr = err
			break
		}
		r.cmds[k] = cmd
		r.popped[k] = cmd.Paired()
		if r.popped[k] {
			popped++
		}
		k++
	}
	c.inFlight.Add(-int64(popped))
	c.fmu.Unlock()
	if k > 0 && !r.popped[k-1] {
		c.head = r.cmds[k-1] // a pipeline whose next replies the next run reads into it
	}

	for i := 0; i < k; i++ {
		cmd := r.cmds[i]
		r.cmds[i] = nil
		done, err := wire.DeliverInRun(cmd, c.reply(i))
		if !done && err == nil && i == k-1 {
			wire.Published(cmd) // a pipeline that continues in the next run
		}
		if done {
			c.nread++
		}
		if err != nil {
			// As in handle; the rest of the run cannot be trusted to pair either.
			ioErr := c.misfit(cmd, err)
			c.failRun(cmd, r.cmds[i+1:k], r.popped[i+1:k])
			return ioErr
		}
	}
	// One store of the delivered count per run, not per reply, then one look at draining: Drain
	// sets draining before it loads the count, so either it sees every reply of the run
	// delivered or this sees draining (a count reached within the run is the run's last, since
	// every command of the run was accepted).
	if k > 0 {
		c.completed.Store(c.nread)
		if c.draining.Load() && c.drained(c.nread) {
			c.shutdown(c.closedErr, true)
		}
	}
	if pairErr != nil {
		return c.ioError("read", pairErr)
	}
	return readErr
}

// failRun completes the commands of a run after a reply that failed the connection (that of
// failed) with the error the connection stopped with, in order: those that left the flight with
// the run (popped), except failed, which its reply completed; finish completes the others.
func (c *Conn) failRun(failed *engine.Command, cmds []*engine.Command, popped []bool) {
	if len(cmds) == 0 {
		return
	}
	c.qmu.Lock()
	err, _ := c.p.Err()
	c.qmu.Unlock()
	for i, cmd := range cmds {
		cmds[i] = nil
		if popped[i] && cmd != failed {
			cmd.Complete(err)
		}
	}
}

// handleMultiRun is handleRun when the reply in c.scratch belongs to cmd, a pipeline
// (engine.Multi) at the head of the flight that awaits more replies (c.head). Its replies are
// read straight into its slots (engine.Command.StoreNext: no storage of the reader's in between,
// no copy of a reply from one value to another), as many as the buffer holds whole and cmd still
// awaits, then paired under one hold of the flight lock; cmd completes once its last reply is
// stored and paired, and otherwise publishes what it stored (engine.Multi.Publish). A reply the
// direct read declines (an aggregate, a long string, a value not whole yet) is read into
// c.scratch as usual and stored from there; a push is dropped, as in handleRun. The rules of
// handleRun hold: FIFO order, a reply that does not fit its shape fails the connection before cmd
// completes (cmd completes with the error if that was its last reply, and with the rest of the
// flight otherwise), and a read error comes after the replies before it.
func (c *Conn) handleMultiRun(cmd *engine.Command) error {
	want := cmd.Unpaired()
	k := 1
	misfit := cmd.StoreReply(&c.scratch)
	var readErr error
	for misfit == nil && k < want {
		read, err := cmd.StoreNext(c.rd)
		if !read {
			ok, rerr := c.rd.ReadBuffered(&c.scratch)
			if rerr != nil {
				readErr = c.ioError("read", rerr)
				break
			}
			if !ok {
				break
			}
			if c.p.Unsolicited(&c.scratch) {
				continue // nobody takes pushes on this connection (initRun): dropped
			}
			err = cmd.StoreReply(&c.scratch)
		}
		k++
		misfit = err
	}

	c.fmu.Lock()
	for i := 0; i < k; i++ {
		c.p.Next() // cmd heads the flight with at least k replies to pair: no error
	}
	popped := cmd.Paired()
	if popped {
		c.inFlight.Add(-1)
	}
	c.fmu.Unlock()
	if popped {
		c.head = nil
	}

	switch {
	case misfit != nil:
		return c.misfit(cmd, misfit) // as in handle
	case popped:
		cmd.Complete(nil)
		c.delivered()
	default:
		cmd.Multi.Publish()
	}
	return readErr
}
