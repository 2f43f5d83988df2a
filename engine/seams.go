package engine

import (
	"context"
	"net"
	"strconv"
	"time"

	"github.com/respire-go/respire/fsm"
)

// Endpoint is a Redis destination: a host and port, or a Unix socket path in Host with Port 0.
type Endpoint struct {
	// Host is a DNS name, an IP literal (IPv6 without brackets) or a Unix socket path.
	Host string
	// Port is the TCP port, or 0 for a Unix socket.
	Port int
}

// IsUnix reports whether the endpoint is a Unix socket.
func (e Endpoint) IsUnix() bool { return e.Port == 0 }

// String returns "host:port" (IPv6 hosts bracketed) or the socket path.
func (e Endpoint) String() string {
	if e.IsUnix() {
		return e.Host
	}
	return net.JoinHostPort(e.Host, strconv.Itoa(e.Port))
}

// Conn is one established, handshaken connection: a real socket (netio) or a simulated one (sim).
//
// A Conn is mechanism only: it never retries, never reconnects and arms no timers beyond I/O
// deadlines. Replies are matched to commands in FIFO order; RESP3 pushes never complete commands.
type Conn interface {
	// Send queues cmd (at StageBuffered) for writing and returns without waiting for the network.
	// The connection
	// completes cmd exactly once (cmd.Done), with a reply or with an error, advancing cmd's stage
	// as its bytes are written. Send on a closed connection completes cmd with an error while its
	// stage is still StageBuffered, so the caller knows the bytes never left.
	Send(cmd *Command)
	// Drain stops taking commands and closes the connection once every accepted command has
	// completed.
	Drain()
	// Close aborts the connection at once. It may be called from inside Sink.Ready and Sink.Lost. Commands not yet written complete with an error at
	// StageBuffered; written ones complete with an error at their later stage (unknown outcome).
	// Close does not report Lost to the Sink.
	Close()
}

// Sink receives the results of Transport.Open. Each method may be called from any goroutine.
type Sink interface {
	// Dialed reports that the transport connection of id is established; its handshake runs.
	Dialed(id fsm.ConnID)
	// Ready reports that id finished its handshake. conn belongs to the engine from now on.
	Ready(id fsm.ConnID, conn Conn)
	// Failed reports that establishing or handshaking id failed.
	Failed(id fsm.ConnID, err error, class fsm.FailureClass)
	// Lost reports that the ready connection id failed on its own (not through Close).
	Lost(id fsm.ConnID, err error)
}

// OpenRequest asks a Transport for one physical connection.
type OpenRequest struct {
	// Conn identifies the attempt; every Sink call names it.
	Conn fsm.ConnID
	// Slot is the command slot the connection is for (diagnostics only).
	Slot int
	// Attempt is the policy attempt number, or 0.
	Attempt int
	// Endpoint is the destination.
	Endpoint Endpoint
	// Machine is the machine the connection is for: command slot, dedicated pool or pub/sub.
	Machine fsm.Machine
	// Sentinel marks a connection to a Sentinel (a Sentinel client's discovery or monitor):
	// open it with the Sentinel credentials and TLS, speaking RESP2, without the data
	// connections' setup (database, client name). Other connections are data connections.
	Sentinel bool
	// ReadOnly marks a connection to a Cluster replica: its handshake sends READONLY, so that
	// the replica serves reads of its primary's slots (wire.HandshakeConfig.ReadOnly).
	ReadOnly bool
	// Sink receives the outcome: Dialed (optional), then exactly one of Ready or Failed, then at
	// most one Lost after Ready.
	Sink Sink
}

// Transport opens connections, including their handshake. Implementations: netio (real sockets)
// and sim (simulated network). One conformance suite runs against both.
type Transport interface {
	// Open starts connecting and returns at once. The attempt stops when ctx is cancelled; a
	// connection that becomes ready after cancellation is closed by the engine.
	Open(ctx context.Context, req OpenRequest)
}

// Runtime is the environment of the event loop: time, randomness and timers. Production uses a
// real clock (benbjohnson/clock at the seam) and a random source; the simulator uses virtual time
// and a seeded generator.
type Runtime interface {
	// Now returns the time elapsed since the runtime's origin.
	Now() time.Duration
	// Draw returns a number drawn uniformly from [0, 1).
	Draw() float64
	// ArmTimer calls fire (from any goroutine) once after the delay, unless cancelled first.
	ArmTimer(id fsm.TimerID, after time.Duration, fire func())
	// CancelTimer cancels a timer; a fire that races with it is ignored by the machines.
	CancelTimer(id fsm.TimerID)
}

// StateChange is a connection lifecycle observation: the machine's metadata plus the endpoint.
type StateChange struct {
	// Endpoint is the endpoint whose slot, rent or episode changed.
	Endpoint Endpoint
	fsm.Lifecycle
}

// Observer receives lifecycle observations in order. The engine calls Observe from its event loop,
// so an Observer must not block: production wraps callbacks in a Dispatcher.
type Observer interface {
	Observe(change StateChange)
}

// ObserverFunc adapts a function to Observer.
type ObserverFunc func(StateChange)

// Observe calls f.
func (f ObserverFunc) Observe(c StateChange) { f(c) }

// Meter records recovery measurements. It must not block.
type Meter interface {
	Record(endpoint Endpoint, m fsm.Metric)
}

// PubSubSink receives the pub/sub machines' effects. The engine calls it from its loop: it must
// not block (hand work to the connection's writer or a queue).
type PubSubSink interface {
	// Subscriptions sends (un)subscribe commands for topics on machine m's connection conn (id).
	// Acknowledgements and rejections come back through Engine.Acked and Engine.Rejected.
	Subscriptions(m fsm.Machine, conn Conn, id fsm.ConnID, topics []fsm.Topic, unsubscribe bool)
	// Gap delivers a gap marker on topic's subscription: it precedes every message received
	// after the topic's acknowledgement.
	Gap(m fsm.Machine, topic fsm.Topic)
	// End ends machine m's subscriptions (only topic's when topic.Name is set) with reason, after
	// what was already delivered.
	End(m fsm.Machine, topic fsm.Topic, reason fsm.EndReason, err error)
}
