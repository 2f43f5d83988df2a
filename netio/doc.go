// Package netio binds respire's engine to real sockets: dialing (TCP, Multipath TCP, Unix
// sockets, a custom dial hook, TLS), the Redis handshake (HELLO, AUTH, SELECT, CLIENT SETNAME and
// SETINFO, driven by the pure Handshake machine of package wire), and pipelined connection I/O
// over the RESP codec of package resp.
//
// Every protocol decision that is not a system call lives in package wire, which the simulator
// drives too: the handshake, a connection's pending commands (wire.Pipeline: stages, reply
// pairing, pushes, drain, failure, the idle-read verdict), the subscriber protocol
// (wire.Subscriber), the connection errors and their classification. netio keeps the names of
// the types under aliases (HandshakeConfig, ConnectError, IOError, ...) and adds what only
// sockets need: dialing, TLS (and the classification of TLS failures), deadlines, and the writer
// and reader goroutines with their two locks.
//
// netio is mechanism only: it never retries. One Transport.Open is one attempt, reported to the
// engine's Sink as Dialed, then Ready or Failed (with a Classify class), then at most one Lost.
// Backoff, reconnects, budgets and everything else that decides what happens next live in the
// state machines above (packages fsm and engine). The only timers are I/O deadlines: the connect
// timeout around dial and TLS, and the handshake timeout around the Redis handshake.
//
// # Connections
//
// A Conn pipelines commands. Send appends the command to a queue and returns; one writer
// goroutine takes everything queued, writes it in one write (concurrent callers are coalesced)
// and flushes only when its queue is empty, with no timers. One reader goroutine parses each reply
// into the command's own Reply value (reusing its storage: no allocation in steady state) and
// completes commands strictly in FIFO order. RESP3 pushes go to TransportConfig.Push and never
// complete a command; server error replies are replies.
//
// A command's stage tells what a failure means: a command that fails at engine.StageBuffered
// never left the client, one that fails later may have been executed (Command.MaybeSent). netio
// never resends either.
//
// Pub/sub connections (OpenRequest.Machine MachinePubSub or MachineShardedPubSub) are SubConns:
// subscriber-mode connections that send the episodes' (un)subscription commands and read their
// acknowledgements and messages, as arrays outside the request/reply flow on RESP2 and as pushes
// on RESP3, handing them to TransportConfig.PubSub.
//
// # Errors
//
// Failed attempts report a *ConnectError (endpoint, connection id, stage, whether the connect or
// handshake budget expired, cause); established connections fail with an *IOError (endpoint,
// connection id, operation, cause). Handshake rejections are *HandshakeError causes. Errors and
// the String forms of configurations never contain credentials.
package netio
