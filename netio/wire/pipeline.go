package wire

import (
	"time"

	"github.com/respire-go/respire/engine"
	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/internal/plant"
	"github.com/respire-go/respire/netio/resp"
)

// Pipeline is the pending commands of one pipelined connection, as a machine: what a connection
// decides about its commands between the engine's Send and their completion. The driver does
// the I/O: netio over a socket with a writer and a reader goroutine, the simulator over simulated
// pipes in virtual time. Both run this code, so a command's stages, the pairing of replies, the
// handling of pushes, drain and failure are the same in both runtimes.
//
// A command goes through three parts, each owned by one side of a driver that writes and reads
// concurrently:
//
//   - the queue (Accept, Take, Drain, Stop and the methods that read them): accepted commands
//     the writer has not taken yet, at engine.StageBuffered. netio guards it with its queue lock.
//   - the batch (Hold, Handoff's input): commands the writer took and is encoding. Only the
//     writer touches it.
//   - the flight (Handoff, Wrote, Next, Progress, Idle and the methods that read them): commands
//     being written or written, in the order they were written, each completed by the next reply
//     that is not a push. netio guards it with its flight lock, so that the writer and the reader
//     never contend for one lock.
//
// A single-threaded driver calls everything without locks.
//
// Rules it enforces:
//   - stages advance Buffered (Accept), Writing (Handoff, just before the first byte is written)
//     and AwaitingReply (Wrote, or Next when the reply proves the write complete), so a failure
//     tells a definite failure (never written) from an unknown outcome;
//   - replies pair with commands strictly in FIFO order; a RESP3 push never completes a command
//     (Unsolicited); a reply with nothing in flight is a protocol error;
//   - a reply whose shape does not fit its command's Expect fails the connection before anything
//     else completes (Deliver), since nothing after it can be trusted to pair;
//   - the first Stop wins, and the driver completes everything pending once with its error, in
//     FIFO order (Aborted): written commands at their later stage, the others at Buffered;
//   - a connection that reached its idle-read bound with replies pending fails (Idle).
//
// Bounds: the queue and the flight hold the commands callers sent and have not seen complete; the
// engine and the client above bound those. The flight's ring grows by doubling and never shrinks
// below its high-water mark.
type Pipeline struct {
	// Queue side.
	queue    []*engine.Command
	state    pipelineState
	accepted uint64
	err      error // the first Stop's error
	quiet    bool  // the connection stopped by Close or Drain: report nothing
	ep       engine.Endpoint
	id       fsm.ConnID
	closed   error // completes what is pending at Close or Drain (built when first needed)
	rejected error // answers Accept after Close or Drain (built when first needed)
	taken    bool  // TakeQueued ran: AcceptLate queues nothing more

	// Writer side.
	spare []*engine.Command // the queue's next storage, swapped with it by Take
	held  []*engine.Command // taken by the writer, not yet handed to the flight

	// Flight side.
	flight   ring
	pushed   uint64 // commands ever handed to the flight
	popped   uint64 // commands ever taken from the flight
	answered uint64 // commands Next took for a reply
	progress time.Duration

	// plants are the deliberate bugs of the simulator's positive controls; nil in production.
	plants *plant.Set
}

// pipelineState says whether a connection takes commands.
type pipelineState uint8

const (
	pipelineOpen     pipelineState = iota // taking commands
	pipelineDraining                      // finishing accepted commands, then closing
	pipelineStopped                       // failed, closed or drained
)

// Init prepares the pipeline of connection id to ep: the errors it answers with after Close or
// Drain name them.
func (p *Pipeline) Init(ep engine.Endpoint, id fsm.ConnID) { p.ep, p.id = ep, id }

// Plant switches on the deliberate bugs of s in this pipeline, for the simulator's positive
// controls. Only code inside respire can build a plant.Set; nil plants nothing.
func (p *Pipeline) Plant(s *plant.Set) { p.plants = s }

// ClosedError is the error that completes the commands pending when the engine closes or drains
// the connection: an *IOError wrapping ErrClosed, built on the first call. Queue side (a driver
// that needs it from several goroutines keeps the first result).
func (p *Pipeline) ClosedError() error {
	if p.closed == nil {
		p.closed = &IOError{Endpoint: p.ep, Conn: p.id, Op: "close", Err: ErrClosed}
	}
	return p.closed
}

// Accept queues cmd, which must be at engine.StageBuffered, for the writer, and returns nil. On a
// connection that stopped or drains it returns the error that rejects cmd instead (leaving cmd
// untouched): the failure's error, or an *IOError wrapping ErrClosed after Close or Drain. Queue
// side.
func (p *Pipeline) Accept(cmd *engine.Command) error {
	if err := p.Rejection(); err != nil {
		return err
	}
	p.queue = append(p.queue, cmd)
	p.accepted++
	return nil
}

// AcceptGroup queues every command of cmds, all of them or none: they reach the writer together,
// so that one write carries their frames back to back. It returns the error that rejects them
// when the connection does not take commands. Queue side.
func (p *Pipeline) AcceptGroup(cmds []*engine.Command) error {
	if err := p.Rejection(); err != nil {
		return err
	}
	p.queue = append(p.queue, cmds...)
	p.accepted += uint64(len(cmds))
	return nil
}

// Rejection returns the error Accept answers with, or nil while the connection takes commands.
// Queue side.
func (p *Pipeline) Rejection() error {
	switch {
	case p.state == pipelineOpen:
		return nil
	case p.err != nil && !p.quiet:
		return p.err
	case p.rejected == nil:
		p.rejected = &IOError{Endpoint: p.ep, Conn: p.id, Op: "send", Err: ErrClosed}
	}
	return p.rejected
}

// Queued reports whether commands wait for the writer. Queue side.
func (p *Pipeline) Queued() bool { return len(p.queue) > 0 }

// Take hands the writer everything queued, oldest first. The writer encodes the batch and gives
// it back with Hold. Writer, under the queue side.
func (p *Pipeline) Take() []*engine.Command {
	batch := p.queue
	p.queue = p.spare[:0]
	p.spare = nil
	return batch
}

// Hold records that the writer encoded batch (from Take): its commands go to the flight at the
// next Handoff. The batch's storage becomes the queue's next. Writer side.
func (p *Pipeline) Hold(batch []*engine.Command) {
	p.held = append(p.held, batch...)
	clear(batch)
	p.spare = batch[:0]
}

// Holding reports how many commands the writer holds (taken, not yet handed off). Writer side.
func (p *Pipeline) Holding() int { return len(p.held) }

// Handoff moves the held commands to the flight just before their bytes are written, marking them
// engine.StageWriting: from now on a failure leaves their outcome unknown. It returns the range of
// flight sequence numbers they took, for Wrote, and whether nothing was in flight before (replies
// just became pending: the idle-read clock starts). Writer, under the flight side.
func (p *Pipeline) Handoff() (first, last uint64, wasIdle bool) {
	first = p.pushed
	wasIdle = p.flight.n == 0
	for _, cmd := range p.held {
		cmd.Writing()
		p.flight.push(cmd)
	}
	p.pushed += uint64(len(p.held))
	clear(p.held)
	p.held = p.held[:0]
	return first, p.pushed, wasIdle
}

// Wrote marks the commands of one Handoff that are still in flight fully written
// (engine.StageAwaitingReply). Writer, under the flight side.
func (p *Pipeline) Wrote(first, last uint64) {
	for seq := max(first, p.popped); seq < last; seq++ {
		p.flight.at(int(seq - p.popped)).Written()
	}
}

// InFlight returns the number of commands being written or awaiting their replies. Flight side.
func (p *Pipeline) InFlight() int { return p.flight.n }

// At returns the i-th oldest command in flight. Flight side.
func (p *Pipeline) At(i int) *engine.Command { return p.flight.at(i) }

// Unsolicited reports whether a frame read from the connection is a RESP3 push: it completes no
// command, whatever it says, and goes to the push handler instead.
func (p *Pipeline) Unsolicited(v *resp.Value) bool {
	if v.Kind != resp.KindPush {
		return false
	}
	if p.plants != nil && p.flight.n > 0 && p.plants.Fire(plant.PushCompletesCommand, p.flight.at(0).ID) {
		return false // planted: the push is taken for the oldest command's reply
	}
	return true
}

// errNoPending is the cause of the failure of a connection that read a reply with nothing in
// flight.
var errNoPending = &resp.ProtocolError{Reason: "reply without a pending command"}

// Next takes the command the reply just read belongs to: the oldest in flight, marked written if
// its write had not returned yet (its reply proves the server received all of it). With nothing
// in flight it returns a *resp.ProtocolError: the connection must fail. The caller completes the
// command with Deliver, outside the flight side's lock. Flight side.
func (p *Pipeline) Next() (*engine.Command, error) {
	if p.flight.n == 0 {
		return nil, errNoPending
	}
	if cmd := p.flight.at(0); !cmd.Pair() {
		return cmd, nil // a pipeline (engine.Multi) with more replies to come: it stays in flight
	}
	cmd := p.flight.pop()
	p.popped++
	p.answered++
	if p.plants != nil && cmd.Left() && p.flight.n > 0 && p.plants.Fire(plant.LateReplyToNextCaller, cmd.ID) {
		// Planted: nobody waits for the oldest command, so the reply goes to the next one (and
		// the oldest is never completed).
		cmd = p.flight.pop()
		p.popped++
	}
	if cmd.Stage() == engine.StageWriting {
		cmd.Written()
	}
	return cmd, nil
}

// Deliver completes cmd with the reply in *reply and reports whether cmd completed. The reply
// moves into the command and the command's old storage moves into *reply, to read the next reply
// into: no copy, and no allocation once both storages are large enough. A pipeline
// (engine.Multi) stores the reply in its next slot and completes only with its last reply.
// Decide anything about cmd before: once it completed, it is its caller's again.
//
// A reply that does not fit cmd's Expect leaves cmd uncompleted and returns the
// *resp.ProtocolError of the misfit (Command.Misfit): the driver must first stop the connection
// taking commands, then complete cmd (CompleteMisfit), then fail the connection with the error
// before it completes anything else.
func Deliver(cmd *engine.Command, reply *resp.Value) (bool, error) {
	return deliver(cmd, reply, true)
}

// DeliverInRun is Deliver for a driver that delivers a run of replies together: a pipeline's
// reply is not published to its caller (engine.Multi.Arrived) until the driver calls Published
// after the run.
func DeliverInRun(cmd *engine.Command, reply *resp.Value) (bool, error) {
	return deliver(cmd, reply, false)
}

// Published publishes the replies stored in cmd, a pipeline the last reply of a run was delivered
// to (DeliverInRun) and that has not completed. Call it before anything else is read.
func Published(cmd *engine.Command) {
	if cmd.Multi != nil {
		cmd.Multi.Publish()
	}
}

func deliver(cmd *engine.Command, reply *resp.Value, publish bool) (bool, error) {
	if cmd.Multi != nil {
		return cmd.DeliverPart(reply, publish)
	}
	cmd.Reply, *reply = *reply, cmd.Reply
	if err := cmd.Misfit(); err != nil {
		return false, err
	}
	cmd.Complete(nil)
	return true, nil
}

// CompleteMisfit completes cmd, whose reply did not fit it (Deliver's error misfit), once its
// connection stopped taking commands and is about to fail with connErr, which wraps misfit. A
// single command completes with misfit. A pipeline (engine.Multi) completes with connErr: here
// if the misfit was its last reply, otherwise with the rest of the flight when the connection
// fails; its error is the same either way, whatever the reads that brought its replies. It
// reports whether cmd completed here (it left the flight: Command.Paired). Every driver, netio's
// and the simulator's, completes a misfit's command through it.
func CompleteMisfit(cmd *engine.Command, misfit, connErr error) bool {
	if !cmd.Paired() {
		return false
	}
	if cmd.Multi != nil {
		cmd.Complete(connErr)
	} else {
		cmd.Complete(misfit)
	}
	return true
}

// Answered returns the number of replies Next paired with commands. Flight side.
func (p *Pipeline) Answered() uint64 { return p.answered }

// Drain stops taking commands; the connection closes once every command it accepted completed.
// It returns the number of commands accepted and reports whether the connection was open (a
// second Drain, or a Drain after a failure, changes nothing). Queue side.
func (p *Pipeline) Drain() (accepted uint64, ok bool) {
	if p.state != pipelineOpen {
		return p.accepted, false
	}
	p.state = pipelineDraining
	return p.accepted, true
}

// Draining reports whether the connection drains. Queue side.
func (p *Pipeline) Draining() bool { return p.state == pipelineDraining }

// Drained reports whether a draining connection has answered every command it accepted, given
// the number of replies delivered (Answered, or the driver's own count when the flight side is
// under another lock): the driver then closes it quietly. Queue side.
func (p *Pipeline) Drained(answered uint64) bool {
	return p.state == pipelineDraining && p.accepted == answered
}

// Stop records the end of the connection: the first failure, or Close (quiet: nothing is reported
// to the engine). A connection that drains stops quietly whatever ends it. It reports false if
// the connection had already stopped. The driver then completes everything pending with Err.
// Queue side.
func (p *Pipeline) Stop(err error, quiet bool) bool {
	if p.err != nil {
		return false
	}
	p.err = err
	p.quiet = quiet || p.state == pipelineDraining
	p.state = pipelineStopped
	return true
}

// Stopped reports whether the connection stopped. Queue side.
func (p *Pipeline) Stopped() bool { return p.err != nil }

// Err returns the error the connection stopped with and whether it stopped quietly (closed or
// drained by the engine: no Lost), or nil while it runs. Queue side.
func (p *Pipeline) Err() (err error, quiet bool) { return p.err, p.quiet }

// TakeQueued removes and returns the commands the writer never took, for the driver to complete
// once the connection stopped. Queue side.
func (p *Pipeline) TakeQueued() []*engine.Command {
	q := p.queue
	p.queue = nil
	p.taken = true
	return q
}

// TakeHeld removes and returns the commands the writer held but never handed off. Writer side.
func (p *Pipeline) TakeHeld() []*engine.Command {
	h := p.held
	p.held = nil
	return h
}

// TakeFlight appends the commands in flight to dst, oldest first, and removes them. Flight side.
func (p *Pipeline) TakeFlight(dst []*engine.Command) []*engine.Command {
	for p.flight.n > 0 {
		dst = append(dst, p.flight.pop())
		p.popped++
	}
	return dst
}

// Aborted completes every pending command with the error the connection stopped with, in the
// order they were sent: those in flight (at their later stage: an unknown outcome), then those
// held and queued (at Buffered: a definite failure). It is the single-threaded driver's end of a
// connection; netio does the same in three steps, one per side. Each command completes once.
func (p *Pipeline) Aborted() {
	err := p.err
	for p.flight.n > 0 {
		cmd := p.flight.pop()
		p.popped++
		cmd.Complete(err)
	}
	for _, cmd := range p.TakeHeld() {
		cmd.Complete(err)
	}
	for _, cmd := range p.TakeQueued() {
		cmd.Complete(err)
	}
}

// Progress records progress of the replies at now: bytes arrived, or replies became pending on a
// connection that had none (Handoff's wasIdle). The idle-read bound counts from the last
// progress. Flight side.
func (p *Pipeline) Progress(now time.Duration) { p.progress = now }

// Idle is the verdict of the idle-read bound.
type Idle struct {
	// Pending reports that replies are pending; without them the bound does not run.
	Pending bool
	// Expired reports that the bound expired: no progress for the bound with replies pending. The
	// connection must fail with a *LivenessError.
	Expired bool
	// Due is when the bound expires if no progress is made (when Pending and not Expired).
	Due time.Duration
}

// Idle judges the idle-read bound at now: a connection with replies pending that made no progress
// for bound fails. Flight side.
func (p *Pipeline) Idle(now, bound time.Duration) Idle {
	if p.flight.n == 0 {
		return Idle{}
	}
	due := p.progress + bound
	if now < due {
		return Idle{Pending: true, Due: due}
	}
	if p.plants != nil && p.plants.Fire(plant.TimeoutKeepsPairing, p.flight.at(0).ID) {
		// Planted: give up on the oldest command alone (it is never completed) and keep the
		// connection, as if the bound concerned that command only.
		p.flight.pop()
		p.popped++
		p.progress = now
		if p.flight.n == 0 {
			return Idle{}
		}
		return Idle{Pending: true, Due: now + bound}
	}
	return Idle{Pending: true, Expired: true, Due: due}
}

// ring is a FIFO of commands in a power-of-two circular buffer that grows when full.
type ring struct {
	buf  []*engine.Command
	head int
	n    int
}

func (r *ring) push(cmd *engine.Command) {
	if r.n == len(r.buf) {
		r.grow()
	}
	r.buf[(r.head+r.n)&(len(r.buf)-1)] = cmd
	r.n++
}

func (r *ring) pop() *engine.Command {
	cmd := r.buf[r.head]
	r.buf[r.head] = nil
	r.head = (r.head + 1) & (len(r.buf) - 1)
	r.n--
	return cmd
}

// at returns the i-th oldest command.
func (r *ring) at(i int) *engine.Command {
	return r.buf[(r.head+i)&(len(r.buf)-1)]
}

func (r *ring) grow() {
	size := max(64, 2*len(r.buf))
	buf := make([]*engine.Command, size)
	for i := 0; i < r.n; i++ {
		buf[i] = r.at(i)
	}
	r.buf = buf
	r.head = 0
}
