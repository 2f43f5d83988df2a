package sim

import (
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"syscall"
	"time"

	"github.com/respire-go/respire/engine"
	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/netio/resp"
	"github.com/respire-go/respire/netio/wire"
	"github.com/respire-go/respire/sim/node"
	"github.com/respire-go/respire/sim/record"
	"github.com/respire-go/respire/sim/scenario"
	"github.com/respire-go/respire/sim/stream"
)

// Connection phases, client side.
const (
	phaseDialing uint8 = iota
	phaseHandshaking
	phaseReady
	phaseClosed
)

// Connection events (the arg of a simConn's scheduler events).
const (
	connSyn uint64 = iota + 1
	connSynAck
	connConnectDeadline
	connHandshakeDeadline
	connAcceptThenDrop
	connIdleCheck
	connStallCheck
	connSynRetransmit
	connSynAckRetransmit
)

// frame attributes one command frame written on a connection to its command id, out of band: the
// node looks it up by the stream offset where the request it parsed starts.
type frame struct {
	start, end     uint64
	id             uint64
	afterHandshake bool
}

// simConn is one simulated connection: both pipes, the client side (implementing engine.Conn and
// running the handshake) and the node side's state. A run allocates one per connection attempt:
// keep it within 1016 bytes, which with the allocator's header fit its 1024-byte size class (the
// flags sit together for that).
type simConn struct {
	// reqArgs is requestLen's scratch (multi.go).
	reqArgs [][]byte
	w       *world
	// synRTO is the retransmission timeout of a held SYN or SYN-ACK (doubling per retry).
	synRTO  time.Duration
	id      fsm.ConnID
	slot    int
	attempt int
	ep      engine.Endpoint
	node    *server
	sink    engine.Sink
	ctx     context.Context
	rng     rand.PCG
	// machine is the machine the connection serves; sub, for pub/sub connections, is their
	// subscriber mode (pubsub.go).
	machine fsm.Machine
	sub     *wire.Subscriber

	up, down pipe

	// Client side.
	phase uint8
	// gen is the client generation whose engine opened the connection (actions.go): id is the
	// engine's identifier plus record.GenOffset(gen), and the engine is told of it by eid.
	gen          uint8
	reported     bool  // Ready or Failed was reported to the sink
	refused      bool  // the connect was answered with a reset
	unresolved   bool  // the endpoint's host did not resolve: the connect went nowhere
	moves        uint8 // node.moves when the connect resolved: a later move leaves it at the old address
	holed        bool  // the connect went to an old address that a move black-holed (move.go)
	engineClosed bool  // the engine called Close or Drain: no Lost
	clientClosed bool
	unanswered   bool // closed with commands written and unanswered (fence.go)
	flushPending bool // the connection is in the world's flushes
	// idleArmed says an idle-read check event is in the heap (liveness.go; the pipeline keeps
	// the progress of the replies).
	idleArmed bool
	hs        *wire.Handshake
	hsCfg     *wire.HandshakeConfig // overrides the world's handshake (conformance harness)
	hsBuf     []byte
	scratch   resp.Value
	// p is the pending commands: the same machine netio's connections run (netio/wire).
	p wire.Pipeline
	// swallow counts the replies owed to frames the replay-accepted plant wrote, which no command
	// awaits: they come first on their connection and are dropped.
	swallow int
	frames  []frame
	fhead   int
	readyAt time.Duration

	// srv is the node's side of the connection.
	srv node.Conn

	// Write-stall watchdog (liveness.go): stalled says more than network.send_buffer bytes are
	// written but not delivered, since stallFrom (or the last progress); stallArmed says a check
	// event is in the heap.
	stallFrom  time.Duration
	stalled    bool
	stallArmed bool

	// Faults.
	crossed   int64
	dropLimit int64
	dropFault *faultState
	loseFault *faultState
	finished  bool
}

var _ engine.Conn = (*simConn)(nil)

// transport implements engine.Transport on the simulated network.
type transport struct {
	w *world
	// attempts are the connections still dialing or handshaking, in open order.
	attempts []*simConn
	// slotConn is the latest connection opened for each slot.
	slotConn []*simConn
	// pubsub receives what the pub/sub connections of a client bound to a Host read (its
	// router: Host.BindPubSub); nil in a run, whose pub/sub world receives them.
	pubsub engine.PubSubReceiver
}

var _ engine.Transport = (*transport)(nil)

// Open implements engine.Transport: the connect travels the network (SYN, then SYN-ACK or reset),
// bounded by the connect timeout; then the handshake runs over the simulated bytes, bounded by the
// command timeout. ctx is checked at every simulated step and after every engine step.
func (t *transport) Open(ctx context.Context, req engine.OpenRequest) {
	req = t.w.plantSink(req)
	t.open(ctx, req, t.w.sentinelOpen(ctx, &req))
}

// open starts an attempt; hs, when not nil, replaces the world's handshake configuration.
func (t *transport) open(ctx context.Context, req engine.OpenRequest, hs *wire.HandshakeConfig) {
	w := t.w
	c := &simConn{w: w, id: w.runConn(req.Conn), gen: uint8(w.gen), slot: req.Slot, attempt: req.Attempt, ep: req.Endpoint, sink: req.Sink, ctx: ctx, hsCfg: hs}
	c.machine = req.Machine
	c.p.Init(req.Endpoint, c.id)
	c.p.Plant(w.shared)
	if req.Machine == fsm.MachinePubSub || req.Machine == fsm.MachineShardedPubSub || req.Machine == fsm.MachineSentinelMonitor {
		c.sub = &wire.Subscriber{}
		c.sub.Plant(w.shared)
	}
	stream.Init(&c.rng, w.seed, stream.Network, uint64(c.id))
	c.up = pipe{c: c, toNode: true}
	c.down = pipe{c: c}
	if addrs, err := engine.DialAddresses(ctx, w.resolver(), req.Endpoint); err != nil {
		c.unresolved = true
	} else {
		// One simulated node per name: the first answer is the one dialed.
		c.node = w.serverAt(addrs[0])
		if c.node != nil {
			c.moves = c.node.moves
		}
		c.holed = c.node == nil && w.holed(addrs[0])
	}
	w.conns = append(w.conns, c)
	if req.Slot >= 0 && req.Slot < len(t.slotConn) {
		t.slotConn[req.Slot] = c
	}
	t.attempts = append(t.attempts, c)
	w.tr.End(w.tr.Begin("conn open").Uint("conn", uint64(c.id)).Int("slot", c.slot).Int("attempt", c.attempt).
		Str("endpoint", req.Endpoint.String()))
	w.recordDial(c)
	w.k.after(w.sc.Client.ConnectTimeout, c, connConnectDeadline)
	switch {
	case c.holed:
		// Nothing listens at the old address, and nothing answers: the connect hangs until its
		// deadline.
	case c.node == nil || !w.holds(c, true):
		w.k.after(c.oneWay(), c, connSyn)
	default:
		// A black-holed SYN vanishes; the client retransmits it as TCP does, until the connect
		// deadline ends the attempt.
		c.synRTO = initialSynRTO
		w.k.after(c.synRTO, c, connSynRetransmit)
	}
}

// initialSynRTO is TCP's initial retransmission timeout for a SYN or SYN-ACK that got no answer
// (RFC 6298): the retransmissions come 1s, 2s, 4s... after one another.
const initialSynRTO = time.Second

// retransmit handles the retransmission timer of a lost SYN (the client's) or SYN-ACK (the
// node's): the packet goes again if its way is open, else the timer doubles.
func (c *simConn) retransmit(synAck bool) bool {
	if c.phase != phaseDialing || c.reported {
		return false
	}
	if c.cancelled() {
		return true
	}
	w := c.w
	what, toNode, ev := "syn", true, connSyn
	if synAck {
		what, toNode, ev = "syn-ack", false, connSynAck
	}
	w.tr.End(w.tr.Begin("conn retransmit").Uint("conn", uint64(c.id)).Word(what))
	if w.holds(c, toNode) {
		c.synRTO *= 2
		next := connSynRetransmit
		if synAck {
			next = connSynAckRetransmit
		}
		w.k.after(c.synRTO, c, next)
		return true
	}
	w.k.after(c.oneWay(), c, ev)
	return true
}

// sweep fails attempts whose context was cancelled (the engine cancels an attempt it closes).
func (t *transport) sweep() {
	for i := 0; i < len(t.attempts); {
		c := t.attempts[i]
		if c.ctx.Err() != nil {
			c.failAttempt(c.connectError(c.stage(), false, 0, c.ctx.Err()))
			continue // failAttempt removed it
		}
		i++
	}
}

func (t *transport) remove(c *simConn) {
	for i, x := range t.attempts {
		if x == c {
			t.attempts = append(t.attempts[:i], t.attempts[i+1:]...)
			return
		}
	}
}

// run handles the connection's own events.
func (c *simConn) Run(arg uint64) bool {
	switch arg {
	case connSyn:
		return c.synArrived()
	case connSynAck:
		return c.synAckArrived()
	case connSynRetransmit:
		return c.retransmit(false)
	case connSynAckRetransmit:
		return c.retransmit(true)
	case connConnectDeadline:
		if c.phase != phaseDialing || c.reported {
			return false
		}
		c.failAttempt(c.connectError(wire.StageDial, true, c.w.sc.Client.ConnectTimeout, errTimeout("dial")))
		return true
	case connHandshakeDeadline:
		if c.phase != phaseHandshaking || c.reported {
			return false
		}
		c.failAttempt(c.connectError(wire.StageHandshake, true, c.w.sc.Client.CommandTimeout, errTimeout("read")))
		return true
	case connAcceptThenDrop:
		if c.clientClosed || !c.srv.Open() {
			return false
		}
		c.Reset("accept-then-drop")
		return true
	case connIdleCheck:
		return c.idleCheck()
	case connStallCheck:
		return c.stallCheck()
	}
	return false
}

// cancelled fails the attempt if its context was cancelled, and reports whether it was.
func (c *simConn) cancelled() bool {
	if err := c.ctx.Err(); err != nil {
		c.failAttempt(c.connectError(c.stage(), false, 0, err))
		return true
	}
	return false
}

func (c *simConn) stage() wire.ConnectStage {
	if c.phase == phaseDialing {
		return wire.StageDial
	}
	return wire.StageHandshake
}

// synArrived: the connect reached the node, which accepts or refuses it.
func (c *simConn) synArrived() bool {
	if c.phase != phaseDialing || c.reported {
		return false
	}
	if c.cancelled() {
		return true
	}
	n := c.node
	if n != nil && n.moves != c.moves && n.movedAwayHoled(c.moves) {
		return true // resolved before a move that black-holed the old address: no answer
	}
	if n == nil || n.Down() || n.moves != c.moves || c.w.refusing(c) {
		c.refused = true
	} else {
		n.Accept(&c.srv, c.id, c)
		c.w.armPending(c)
	}
	if c.w.holds(c, false) {
		// The answer is held on its way back: the node retransmits it as TCP does.
		c.synRTO = initialSynRTO
		c.w.k.after(c.synRTO, c, connSynAckRetransmit)
		return true
	}
	c.w.k.after(c.oneWay(), c, connSynAck)
	return true
}

// synAckArrived: the client learns the connect's result.
func (c *simConn) synAckArrived() bool {
	if c.phase != phaseDialing || c.reported {
		return false
	}
	if c.cancelled() {
		return true
	}
	w := c.w
	if c.refused {
		var cause error = errRefused()
		if c.unresolved {
			cause = &net.DNSError{Err: "no such host", Name: c.ep.Host, IsNotFound: true}
		}
		c.failAttempt(c.connectError(wire.StageDial, false, 0, cause))
		return true
	}
	c.phase = phaseHandshaking
	w.tr.End(w.tr.Begin("conn dialed").Uint("conn", uint64(c.id)))
	c.sink.Dialed(c.eid())
	w.k.after(w.sc.Client.CommandTimeout, c, connHandshakeDeadline)
	cfg := w.handshake
	if c.hsCfg != nil {
		cfg = *c.hsCfg
	}
	c.hs = wire.NewHandshake(cfg)
	c.nextBatch()
	return true
}

// nextBatch writes the handshake's next batch, or makes the connection ready when it is done.
func (c *simConn) nextBatch() {
	frames, n := c.hs.Next(c.hsBuf[:0])
	c.hsBuf = frames
	if n == 0 {
		c.becomeReady()
		return
	}
	c.up.write(frames)
}

func (c *simConn) becomeReady() {
	w := c.w
	c.phase = phaseReady
	c.reported = true
	c.readyAt = w.k.now
	w.tp.remove(c)
	w.tr.End(w.tr.Begin("conn ready").Uint("conn", uint64(c.id)).Int("proto", c.hs.Protocol()))
	if c.sub != nil {
		c.sub.Init(c.ep, c.id, c.hs.Protocol())
	}
	w.maintReady(c)
	c.sink.Ready(c.eid(), c)
	if after, ok := w.acceptThenDrop(c); ok {
		w.k.after(after, c, connAcceptThenDrop)
	}
	w.replayOnReady(c)
}

// failAttempt ends an attempt that did not become ready: the connection is closed and Failed is
// reported once.
func (c *simConn) failAttempt(err error) {
	if c.reported {
		return
	}
	c.reported = true
	w := c.w
	w.tp.remove(c)
	w.tr.End(w.tr.Begin("conn failed").Uint("conn", uint64(c.id)).Quoted("err", err.Error()))
	c.closeClient(err)
	c.sink.Failed(c.eid(), err, wire.Classify(err))
}

// closeClient closes the client side: pending commands fail with err, the node sees an orderly
// close after the bytes already in flight, and replies in flight are discarded.
func (c *simConn) closeClient(err error) {
	if c.clientClosed {
		return
	}
	c.clientClosed = true
	c.phase = phaseClosed
	c.down.kill()
	if c.srv.Open() {
		c.up.commit(ctlEOF)
	} else {
		c.up.kill()
	}
	// Every pending command completes with err: the unwritten ones at StageBuffered (a definite
	// failure), the written ones at StageAwaitingReply (unknown outcome).
	c.unanswered = c.p.InFlight() > 0
	c.w.maintClosed(c, c.p.InFlight())
	c.p.Stop(err, c.engineClosed)
	c.p.Aborted()
	if c.sub != nil {
		for _, cmd := range c.sub.TakeCommands() {
			cmd.Complete(err)
		}
	}
	c.maybeFinished()
}

// peerClosed handles an orderly close or reset from the node's side.
func (c *simConn) peerClosed(cause error) {
	if c.clientClosed {
		return
	}
	if c.phase != phaseReady {
		c.failAttempt(c.connectError(c.stage(), false, 0, cause))
		return
	}
	c.lose(c.ioError("read", cause))
}

// lose fails a ready connection on its own: commands fail, and Lost is reported unless the engine
// already gave the connection up.
func (c *simConn) lose(err error) {
	if c.clientClosed {
		return
	}
	w := c.w
	w.captureReplay(c)
	w.tr.End(w.tr.Begin("conn lost").Uint("conn", uint64(c.id)).Quoted("err", err.Error()))
	c.closeClient(err)
	if !c.engineClosed {
		c.sink.Lost(c.eid(), err)
	}
}

// Send implements engine.Conn: cmd is queued at StageBuffered and written when the current
// scheduler action ends, at the same virtual instant, like a writer that flushes as soon as it
// runs: commands sent in one action are pipelined in one chunk.
func (c *simConn) Send(cmd *engine.Command) {
	if c.sub != nil {
		c.sendSubscriber(cmd)
		return
	}
	if err := c.p.Accept(cmd); err != nil {
		cmd.Complete(err)
		return
	}
	if !c.flushPending {
		c.flushPending = true
		c.w.flushes = append(c.w.flushes, c)
	}
}

// sendSubscriber writes cmd on a pub/sub connection at once; its reply comes through the
// subscriber protocol, in the order of everything the connection owes, as on netio's SubConn.
func (c *simConn) sendSubscriber(cmd *engine.Command) {
	if err := c.p.Rejection(); err != nil || c.clientClosed {
		if err == nil {
			err = c.p.ClosedError()
		}
		cmd.Complete(err)
		return
	}
	c.sub.Send(cmd)
	cmd.Writing()
	c.writeFrame(cmd.Frame, cmd.ID, true)
	c.up.commit(ctlData)
	cmd.Written()
}

// drained reports whether a draining connection has answered every command it accepted.
func (c *simConn) drained() bool {
	if c.sub != nil {
		return c.p.Draining() && c.sub.CommandsPending() == 0
	}
	return c.p.Drained(c.p.Answered())
}

// flush writes every buffered command, as netio's writer does: it takes the queue, writes the
// frames and hands the commands to the flight (Writing), then marks them written.
func (c *simConn) flush() bool {
	c.flushPending = false
	if c.clientClosed || !c.p.Queued() {
		return false
	}
	batch := c.p.Take()
	for _, cmd := range batch {
		c.writeCommand(cmd, c.phase == phaseReady)
	}
	c.p.Hold(batch)
	first, last, wasIdle := c.p.Handoff()
	if wasIdle && c.swallow == 0 {
		c.watchIdle() // replies become pending
	}
	c.p.Wrote(first, last)
	c.up.commit(ctlData)
	c.watchStall()
	return true
}

// writeFrame appends one command frame to the up pipe, attributing it to id for the node, and
// records the Send.
func (c *simConn) writeFrame(f []byte, id uint64, afterHandshake bool) {
	w := c.w
	if id != 0 {
		w.res.Sends = append(w.res.Sends, record.Send{CmdID: id, Conn: c.id, At: w.k.now})
		if w.seg != nil {
			w.seg.written(id, c, c.up.offset())
		}
		if !c.up.dead {
			start := c.up.offset()
			c.frames = append(c.frames, frame{start: start, end: start + uint64(len(f)), id: id, afterHandshake: afterHandshake})
		}
	}
	c.up.append(f)
}

// Command implements node.Link: the command id of the request the node parsed at stream offset
// start.
func (c *simConn) Command(start uint64) (uint64, bool) {
	for c.fhead < len(c.frames) && c.frames[c.fhead].end <= start {
		c.fhead++
	}
	if c.fhead == len(c.frames) || c.frames[c.fhead].start != start {
		c.compactFrames()
		return 0, true
	}
	f := c.frames[c.fhead]
	c.fhead++
	c.compactFrames()
	return f.id, f.afterHandshake
}

func (c *simConn) compactFrames() {
	if c.fhead == len(c.frames) {
		c.frames = c.frames[:0]
		c.fhead = 0
	}
}

// receive parses the replies the node's bytes delivered: handshake replies go to the handshake,
// others complete commands in FIFO order through the pipeline; RESP3 pushes never complete a
// command.
func (c *simConn) receive() {
	if c.phase == phaseHandshaking && c.cancelled() {
		return
	}
	c.p.Progress(c.w.k.now) // bytes arrived: the idle-read clock starts again
	p := &c.down
	for p.rd < p.ready && !c.clientClosed {
		v := &c.scratch
		n, err := resp.Parse(p.data[p.rd:p.ready], v, nil)
		if errors.Is(err, resp.ErrIncomplete) {
			break
		}
		if err != nil {
			c.protocolFailure(err)
			return
		}
		p.rd += n
		switch c.phase {
		case phaseHandshaking:
			if v.Kind == resp.KindPush {
				continue
			}
			if err := c.hs.Reply(v); err != nil {
				c.failAttempt(c.connectError(wire.StageHandshake, false, 0, err))
				return
			}
			if c.hs.Answered() {
				c.nextBatch()
			}
		case phaseReady:
			if c.sub != nil {
				if !c.subscriberFrame(v) {
					return
				}
				continue
			}
			if c.p.Unsolicited(v) {
				c.maintPush(v)
				continue
			}
			if c.swallow > 0 {
				c.swallow--
				continue
			}
			cmd, err := c.p.Next()
			if err != nil {
				c.protocolFailure(err)
				return
			}
			if id := entryID(cmd); id != 0 {
				c.w.recordReply(&c.w.res.Paired, id, c.id, p.data[p.rd-n:p.rd])
				if c.w.seg != nil {
					c.w.seg.paired(id)
				}
			}
			c.w.noteReadOnly(v)
			var done bool
			done, err = wire.Deliver(cmd, v)
			if err != nil {
				// Not the command's reply: the connection cannot pair replies any more. The
				// command completes first, then the connection fails the others. (netio stops
				// taking commands before it completes the command, as a caller on another
				// goroutine may send at once; here callers act only in later events.)
				ioErr := c.ioError("read", err)
				wire.CompleteMisfit(cmd, err, ioErr)
				c.lose(ioErr)
				return
			}
			if !done {
				continue // a pipeline's reply: it completes with its last (engine.Multi)
			}
			c.w.maybeDoubleComplete(cmd)
			if c.drained() {
				c.closeClient(c.p.ClosedError())
			}
		default:
			c.protocolFailure(&resp.ProtocolError{Reason: "reply before the handshake"})
			return
		}
	}
	p.compact()
}

func (c *simConn) protocolFailure(err error) {
	if c.phase != phaseReady {
		c.failAttempt(c.connectError(c.stage(), false, 0, err))
		return
	}
	c.lose(c.ioError("read", err))
}

// Drain implements engine.Conn: no new commands; the connection closes once the accepted ones
// completed.
func (c *simConn) Drain() {
	c.engineClosed = true
	if c.clientClosed || c.p.Draining() {
		return
	}
	c.p.Drain()
	c.traceClose("drain")
	if c.drained() {
		c.closeClient(c.p.ClosedError())
	}
}

// Close implements engine.Conn: the connection closes at once; pending commands fail (unwritten
// ones at StageBuffered). No Lost is reported.
func (c *simConn) Close() {
	c.engineClosed = true
	if c.clientClosed || c.w.maintLateClose(c) {
		return
	}
	c.traceClose("close")
	c.closeClient(c.p.ClosedError())
}

func (c *simConn) traceClose(how string) {
	w := c.w
	w.tr.End(w.tr.Begin("conn").Word(how).Uint("conn", uint64(c.id)))
}

// Reset resets the connection at the network (node.Link): bytes in flight are lost both ways, the
// node side closes at once and the client sees a reset one latency later (or when a black-hole
// heals).
func (c *simConn) Reset(reason string) {
	if c.finished {
		return
	}
	w := c.w
	w.tr.End(w.tr.Begin("conn cut").Uint("conn", uint64(c.id)).Str("reason", reason))
	c.up.kill()
	if c.node != nil {
		c.node.Remove(&c.srv)
	}
	if !c.clientClosed {
		c.down.discard()
		c.down.commit(ctlRST)
	}
	c.maybeFinished()
}

// maybeFinished forgets a connection both of whose sides are closed.
func (c *simConn) maybeFinished() {
	if c.finished || !c.clientClosed || c.srv.Open() {
		return
	}
	c.finished = true
	w := c.w
	for i, x := range w.conns {
		if x == c {
			w.conns = append(w.conns[:i], w.conns[i+1:]...)
			break
		}
	}
}

// triggerDrop fires a drop-after-bytes fault on c.
func (c *simConn) triggerDrop() {
	fs := c.dropFault
	c.dropFault = nil
	c.dropLimit = 0
	if fs != nil {
		fs.armed--
		if fs.armed <= 0 {
			fs.finish()
		}
	}
	c.Reset("drop-after-bytes")
}

// Errors, shaped like netio's so that the engine and checkers see the same types in both runtimes.

func (c *simConn) connectError(stage wire.ConnectStage, timedOut bool, budget time.Duration, cause error) error {
	return memo(&wire.ConnectError{Endpoint: c.ep, Conn: c.id, Stage: stage, TimedOut: timedOut, Budget: budget, Err: cause})
}

func (c *simConn) ioError(op string, cause error) error {
	return memo(&wire.IOError{Endpoint: c.ep, Conn: c.id, Op: op, Err: cause})
}

// memoError carries a netio error with its message computed once: the trace prints a failure
// several times (the event, the lifecycle emit, the waiter's completion). errors.Is and errors.As
// reach the netio error and its causes through Unwrap.
type memoError struct {
	err error
	msg string
}

func memo(err error) error { return &memoError{err: err, msg: err.Error()} }

// Error implements error.
func (e *memoError) Error() string { return e.msg }

// Unwrap returns the netio error.
func (e *memoError) Unwrap() error { return e.err }

func errRefused() error {
	return &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
}

func errReset() error {
	return &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}
}

func errEOF() error { return io.EOF }

func errTimeout(op string) error {
	return &net.OpError{Op: op, Net: "tcp", Err: os.ErrDeadlineExceeded}
}

// retryPermanentSink implements the retry-permanent plant: it reports a permanent connection
// failure of a dedicated attempt as transient, so the pool retries it.
type retryPermanentSink struct {
	engine.Sink
	w *world
}

func (s retryPermanentSink) Failed(id fsm.ConnID, err error, class fsm.FailureClass) {
	if class == fsm.Permanent {
		s.w.tr.Plant("retry-permanent", uint64(id))
		class = fsm.Transient
	}
	s.Sink.Failed(id, err, class)
}

// plantSink wraps a dedicated attempt's sink when the retry-permanent plant is set.
func (w *world) plantSink(req engine.OpenRequest) engine.OpenRequest {
	if req.Machine == fsm.MachinePool && w.sc.Planted(scenario.PlantRetryPermanent) {
		req.Sink = retryPermanentSink{Sink: req.Sink, w: w}
	}
	return req
}
