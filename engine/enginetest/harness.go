// Package enginetest is the conformance suite for the engine's I/O seam: any engine.Transport and
// the engine.Conn values it produces, run against the server behind them. It plays the role of
// testing/slogtest for respire: netio runs it against real redis-server processes in real time,
// and the simulator runs it against simulated Redis nodes in virtual time, so both runtimes
// provably honour the same contract.
//
// A runtime implements Harness in its tests and calls Run:
//
//	func TestConformance(t *testing.T) {
//		enginetest.Run(t, newMyHarness(t))
//	}
//
// # What the suite checks
//
//   - Open reports Dialed, then Ready exactly once, and nothing else.
//   - PING, SET, GET (hit and miss), INCR and an unknown command round-trip with the right reply
//     kinds; a server error reply is a reply (Err nil).
//   - 1,000 pipelined commands from eight callers (goroutines, or interleaved submissions for a
//     single-threaded harness) complete strictly FIFO with the right replies.
//   - A command sent after Close completes at once, at StageBuffered, with an error.
//   - Close completes every pending command (written ones with MaybeSent) before it returns,
//     reports no Lost and closes the server side.
//   - A server-side kill reports Lost exactly once; pending written commands complete with
//     MaybeSent; later sends fail at StageBuffered.
//   - A refused endpoint fails transient, without Dialed or Ready.
//   - A wrong password fails permanent with a *netio.HandshakeError of code WRONGPASS, whose text
//     does not contain the password; the right password connects (positive control).
//   - Cancelling the attempt's context (before Open, and while the handshake waits on a server
//     that never answers) fails the attempt with an error wrapping context.Canceled.
//   - Drain lets every accepted command complete with its reply, rejects later sends at
//     StageBuffered, then closes without Lost; Drain with nothing pending closes at once.
//
// Cases run one after another, never in parallel; each opens its own connections and closes
// them before it ends, so one harness (one set of servers) serves the whole run.
package enginetest

import (
	"testing"

	"github.com/respire-go/respire/engine"
)

// EndpointKind names one of the destinations a harness provides.
type EndpointKind int

// Endpoint kinds.
const (
	// Open is a server that requires no password. Most cases use it; KillClients and Clients
	// act on it.
	Open EndpointKind = iota
	// Protected is a server whose default user requires Harness.Password. It may be the same
	// server as Open only if Open then still accepts connections without a password, which Redis
	// does not allow, so in practice it is a second server.
	Protected
	// Refused is an address where connecting is refused at once (no listener).
	Refused
	// Stalled is an address that accepts connections but never answers a byte, so a handshake
	// on it waits until its deadline or cancellation. Required unless Caps.NoStalled.
	Stalled
)

// String returns the lower-case name of the kind.
func (k EndpointKind) String() string {
	switch k {
	case Open:
		return "open"
	case Protected:
		return "protected"
	case Refused:
		return "refused"
	case Stalled:
		return "stalled"
	}
	return "endpoint-kind?"
}

// Caps says what a harness cannot do. The zero value claims everything: a harness sets a flag
// only for a capability it lacks, and the cases that need it are skipped with a message naming
// the flag, so a forgotten flag shows up as a failure, never as a silent skip.
type Caps struct {
	// SingleThreaded: the transport and its connections make progress only inside WaitFor and
	// Settle (a simulator pumping its scheduler), and none of their methods may be called from
	// a goroutine other than the test's. The suite then never starts goroutines: concurrent
	// callers become interleaved submissions from the test goroutine.
	SingleThreaded bool
	// NoBlocking: the server does not implement BLPOP key 0 (block until the list has an
	// element). The suite uses it to hold a written command without a reply; without it the
	// kill and close cases check Lost and Close but not MaybeSent of a pending command.
	NoBlocking bool
	// NoStalled: Endpoint(Stalled) is not available; the cancellation-during-handshake case is
	// skipped (cancellation before Open is still checked).
	NoStalled bool
	// NoClientCount: Clients is not available; the cases do not check that Close and Drain close
	// the server side of the connection.
	NoClientCount bool
}

// Harness connects the suite to a runtime and its servers. Its methods are called from the test
// goroutine only (a subtest's goroutine; never concurrently). The t passed to a method is the
// current subtest's: report failures with t.Fatalf/t.Errorf there.
//
// # Server requirements
//
// The Open and Protected servers speak RESP (2 or 3, whatever the transport negotiates) and
// implement PING (simple string PONG), SET key value (simple string OK), GET (bulk string, or a
// null for a missing key), INCR (integer), BLPOP key 0 unless Caps.NoBlocking, and reject an
// unknown command with an error reply. Keys the suite uses start with "enginetest:" and are unique
// within a run; the suite never deletes data, so servers may start empty and stay dirty.
//
// # Time
//
// WaitFor and Settle are the only places where the suite lets time pass. A real-time harness
// polls with a bounded real-time deadline; a virtual-time harness runs its scheduler. In both,
// Transport.Open, Conn.Send, Drain and Close must return without waiting on the harness: Open
// returns at once, Send and Drain never block, and Close completes every command pending on the
// connection before it returns (a simulated connection does that synchronously).
type Harness interface {
	// Caps reports what the harness cannot do.
	Caps() Caps
	// Transport returns a transport whose handshake authenticates as the default user with
	// password (no AUTH when it is empty) and otherwise uses the runtime's defaults. Its
	// handshake timeout must be longer than WaitFor's bound, so that a stalled handshake ends by
	// cancellation in the cancellation case, not by its deadline.
	Transport(t testing.TB, password string) engine.Transport
	// Endpoint returns the destination of the given kind. Refused and Stalled must stay so for
	// the whole run.
	Endpoint(t testing.TB, kind EndpointKind) engine.Endpoint
	// Password is the password of the Protected server; it must not be empty.
	Password() string
	// WaitFor lets the system run until cond reports true or a bound passes, and returns cond's
	// last result. The bound must comfortably cover a few round trips and a connection attempt
	// (real time: seconds; virtual time: whatever the simulated network needs), and be far
	// shorter than the transport's connect and handshake timeouts. cond is cheap and is called
	// from the test goroutine.
	WaitFor(cond func() bool) bool
	// Settle lets in-flight asynchronous work finish so that the absence of an event means
	// something: after Settle, a Sink call or command completion that was going to happen because
	// of what the suite already did has happened. Real time: a short sleep (tens of
	// milliseconds); virtual time: run every pending event up to a small virtual bound.
	Settle()
	// KillClients drops every client connection of the Open server from the server side (as
	// CLIENT KILL TYPE normal does), without stopping the server. The connections see EOF or a
	// reset.
	KillClients(t testing.TB)
	// Clients returns how many client connections the Open server has now, not counting any the
	// harness itself uses to find out. Not called when Caps.NoClientCount.
	Clients(t testing.TB) int
}
