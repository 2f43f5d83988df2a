package netio

import (
	"net"
	"sync"
	"time"

	"github.com/respire-go/respire/engine"
	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/netio/resp"
	"github.com/respire-go/respire/netio/wire"
)

// isSubscriber reports whether connections of machine m run in subscriber mode: the pub/sub
// episodes' and a Sentinel client's event monitors'.
func isSubscriber(m fsm.Machine) bool {
	return m == fsm.MachinePubSub || m == fsm.MachineShardedPubSub || m == fsm.MachineSentinelMonitor
}

// SubConn is a subscriber-mode connection, the netio implementation of engine.SubscriberConn
// for the pub/sub episodes. Redis answers subscription commands with acknowledgements and then
// sends messages at any time: as arrays outside the request/reply flow on RESP2, as pushes on
// RESP3. A SubConn reads both forms alike. Acknowledgements and refusals go to the transport's
// engine.PubSubReceiver (which reports them to the engine), and messages go to it too, on the
// reader goroutine; they never complete commands. Any other reply completes the oldest command
// sent with Send (a credential renewal, for example) or refuses the oldest subscription command
// that has no acknowledgement yet. Those rules are wire.Subscriber's, which the simulator runs
// too.
//
// Like Conn it is mechanism only: it never resubscribes or reconnects; the episode machine
// decides. When it fails (read or write error, EOF, protocol error) it fails once: pending
// commands complete with the *IOError, the socket closes, and Sink.Lost is called exactly once,
// unless the engine closed it.
//
// Liveness: with TransportConfig.IdleReadTimeout, a connection that owes acknowledgements or
// replies and receives nothing for that long fails (a quiet connection that owes nothing does
// not: subscribers may legitimately hear nothing for hours). With WriteStallTimeout, a write
// that makes no progress for that long fails the connection.
//
// Bounds: the write queue and the expectations hold what the engine sent and the server has not
// answered yet; the episode bounds those (one subscription command per demand and per
// resubscription). Replies and messages are bounded by resp.Limits.
type SubConn struct {
	id      fsm.ConnID
	ep      engine.Endpoint
	nc      net.Conn
	rd      *resp.Reader
	sink    engine.Sink
	recv    engine.PubSubReceiver
	push    func(resp.Value)
	proto   int
	scratch resp.Value
	// idleRead and writeStall are TransportConfig's IdleReadTimeout and WriteStallTimeout.
	idleRead, writeStall time.Duration

	closedErr, rejectedErr error

	mu       sync.Mutex
	out      []byte
	writing  []*engine.Command // commands whose frames are in out
	sub      wire.Subscriber
	failErr  error
	quiet    bool
	draining bool
	wake     chan struct{}

	writerDone chan struct{}
	announced  chan struct{}
	done       chan struct{}
}

var _ engine.SubscriberConn = (*SubConn)(nil)

// newSubConn takes over a handshaken connection's socket and reader in subscriber mode.
func newSubConn(c *Conn, cfg *TransportConfig) *SubConn {
	recv := cfg.PubSub
	if recv == nil {
		recv = discardPubSub{}
	}
	s := &SubConn{
		id: c.id, ep: c.ep, nc: c.nc, rd: c.rd, sink: c.sink, recv: recv, push: cfg.Push, proto: c.proto,
		idleRead: cfg.IdleReadTimeout, writeStall: cfg.WriteStallTimeout,
		wake:       make(chan struct{}, 1),
		writerDone: make(chan struct{}),
		announced:  make(chan struct{}),
		done:       make(chan struct{}),
	}
	s.sub.Init(s.ep, s.id, s.proto)
	s.closedErr = &IOError{Endpoint: s.ep, Conn: s.id, Op: "close", Err: ErrClosed}
	s.rejectedErr = &IOError{Endpoint: s.ep, Conn: s.id, Op: "send", Err: ErrClosed}
	return s
}

// discardPubSub drops what a subscriber connection reads when no receiver is configured.
type discardPubSub struct{}

func (discardPubSub) Acked(fsm.ConnID, fsm.Topic)              {}
func (discardPubSub) Rejected(fsm.ConnID, fsm.Topic, error)    {}
func (discardPubSub) Message(fsm.ConnID, engine.PubSubMessage) {}

// ID returns the connection's id.
func (s *SubConn) ID() fsm.ConnID { return s.id }

// Protocol returns the negotiated RESP version, 2 or 3.
func (s *SubConn) Protocol() int { return s.proto }

// startSubscriber runs the attempt's end for a pub/sub connection: the handshaken c becomes a
// SubConn, which is reported Ready.
func (t *Transport) startSubscriber(c *Conn, req *engine.OpenRequest) {
	s := newSubConn(c, &t.cfg)
	go s.writeLoop()
	go s.run()
	req.Sink.Ready(req.Conn, s)
	close(s.announced)
}

// Subscribe implements engine.SubscriberConn: one command per topic kind (SSUBSCRIBE one per
// shard channel, so that no command spans hash slots), queued for the writer.
func (s *SubConn) Subscribe(topics []fsm.Topic, unsubscribe bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failErr != nil || s.draining {
		return
	}
	s.armIdleRead()
	s.out = s.sub.Subscribe(s.out, topics, unsubscribe)
	s.wakeWriter()
}

// Send implements engine.Conn: cmd is written after what is queued, and completes with the next
// reply that is not a pub/sub event once everything sent before it was answered. On RESP2 a
// subscribed connection accepts only (P|S)(UN)SUBSCRIBE, PING, QUIT and RESET; the server answers
// anything else with an error reply.
func (s *SubConn) Send(cmd *engine.Command) {
	s.mu.Lock()
	if s.failErr != nil || s.draining {
		err := s.rejectedErr
		if s.failErr != nil && !s.quiet {
			err = s.failErr
		}
		s.mu.Unlock()
		cmd.Complete(err)
		return
	}
	s.armIdleRead()
	s.out = append(s.out, cmd.Frame...)
	s.writing = append(s.writing, cmd)
	s.sub.Send(cmd)
	s.wakeWriter()
	s.mu.Unlock()
}

// armIdleRead starts the idle-read bound when the server is about to owe a reply and owed
// nothing so far. Called with mu held.
func (s *SubConn) armIdleRead() {
	if s.idleRead > 0 && s.sub.Owed() == 0 {
		_ = s.nc.SetReadDeadline(time.Now().Add(s.idleRead))
	}
}

// progressed restarts the idle-read bound after a frame was handled while replies are still
// owed, and lifts it when nothing is (a quiet subscriber connection is healthy). Called with mu
// held.
func (s *SubConn) progressed() {
	if s.idleRead <= 0 {
		return
	}
	if s.sub.Owed() > 0 {
		_ = s.nc.SetReadDeadline(time.Now().Add(s.idleRead))
	} else {
		_ = s.nc.SetReadDeadline(time.Time{})
	}
}

func (s *SubConn) wakeWriter() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Drain implements engine.Conn: no new commands; the connection closes once the commands sent
// with Send have their replies. It reports nothing to the Sink.
func (s *SubConn) Drain() {
	s.mu.Lock()
	s.draining = true
	idle := s.sub.CommandsPending() == 0
	s.mu.Unlock()
	if idle {
		s.shutdown(s.closedErr, true)
	}
}

// Close implements engine.Conn: the connection closes at once, pending commands fail, and
// nothing is reported to the Sink. It must not be called from the PubSubReceiver.
func (s *SubConn) Close() {
	s.shutdown(s.closedErr, true)
	<-s.done
}

// shutdown records the first failure, closes the socket and wakes the writer.
func (s *SubConn) shutdown(err error, quiet bool) {
	s.mu.Lock()
	if s.failErr != nil {
		s.mu.Unlock()
		return
	}
	s.failErr, s.quiet = err, quiet || s.draining
	s.mu.Unlock()
	_ = s.nc.Close()
	s.wakeWriter()
}

// writeLoop writes what Subscribe and Send queued, one write per wake-up.
func (s *SubConn) writeLoop() {
	defer close(s.writerDone)
	var buf []byte
	var cmds []*engine.Command
	for range s.wake {
		s.mu.Lock()
		if s.failErr != nil {
			s.mu.Unlock()
			return
		}
		buf, s.out = s.out, buf[:0]
		cmds, s.writing = s.writing, cmds[:0]
		s.mu.Unlock()
		if len(buf) == 0 {
			continue
		}
		for _, c := range cmds {
			c.Writing()
		}
		if s.writeStall > 0 {
			_ = s.nc.SetWriteDeadline(time.Now().Add(s.writeStall))
		}
		if _, err := s.nc.Write(buf); err != nil {
			s.shutdown(&IOError{Endpoint: s.ep, Conn: s.id, Op: "write", Err: err}, false)
			return
		}
		for _, c := range cmds {
			if c.Stage() == engine.StageWriting {
				c.Written()
			}
		}
		clear(cmds)
	}
}

// run is the reader goroutine.
func (s *SubConn) run() {
	err := s.readLoop()
	s.shutdown(err, false)
	// Wake the writer so that it sees the failure and exits.
	s.wakeWriter()
	<-s.writerDone
	s.finish()
}

// finish completes every pending command with the failure and reports Lost unless the engine
// closed the connection.
func (s *SubConn) finish() {
	s.mu.Lock()
	err, quiet := s.failErr, s.quiet
	pending := s.sub.TakeCommands()
	s.writing = nil
	s.mu.Unlock()
	for _, cmd := range pending {
		cmd.Complete(err)
	}
	close(s.done)
	if !quiet {
		<-s.announced
		s.sink.Lost(s.id, err)
	}
}

func (s *SubConn) ioError(err error) error {
	return &IOError{Endpoint: s.ep, Conn: s.id, Op: "read", Err: err}
}

// readLoop reads until the connection fails and returns the failure.
func (s *SubConn) readLoop() error {
	for {
		if s.idleRead > 0 {
			// After each frame (progress), or before the first read.
			s.mu.Lock()
			s.progressed()
			s.mu.Unlock()
		}
		if err := s.rd.Read(&s.scratch); err != nil {
			return s.ioError(err)
		}
		s.mu.Lock()
		f, err := s.sub.Read(&s.scratch)
		drain := f.Kind == wire.FrameReply && s.draining && s.sub.CommandsPending() == 0
		s.mu.Unlock()
		if err != nil {
			return s.ioError(err)
		}
		f.ReportTo(s.recv, s.id)
		switch f.Kind {
		case wire.FramePush:
			if s.push != nil {
				s.push(s.scratch)
			}
		case wire.FrameReply:
			if _, err := wire.Deliver(f.Cmd, &s.scratch); err != nil {
				ioErr := s.ioError(err)
				s.shutdown(ioErr, false)
				f.Cmd.Complete(err)
				return ioErr
			}
			if drain {
				s.shutdown(s.closedErr, true)
			}
		}
	}
}
