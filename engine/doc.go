// Package engine drives respire's pure state machines (package fsm) against the outside world.
//
// One Engine serves one standalone endpoint with a multiplexer of command slots. Every input
// (a caller's demand, a transport result, a timer) becomes an fsm.Event. The engine stamps it with
// the runtime's time and a random draw, appends it to the journal, steps the machine, and then
// executes the effects through narrow interfaces:
//
//   - Transport and Conn: opening, handshaking and using connections (netio for real sockets,
//     sim for the simulator; one conformance suite, enginetest, runs against both);
//   - Runtime: time, randomness and timers (ClockRuntime in production, virtual time in sim);
//   - Observer: lifecycle observations, delivered in order (Dispatcher moves them off the loop);
//   - Meter: recovery measurements (OTelMeter for OpenTelemetry).
//
// After each step that changed a route, the engine publishes an immutable routing snapshot.
// Submit reads it without locks, so a command on a healthy connection never waits for the event
// loop, records no recovery metric and reads no policy counter.
//
// A caller that stops waiting for a command (its timeout or its context) follows the caller's
// protocol (caller.go): Engine.Abandon withdraws a command still waiting for a connection (a
// definite failure) or leaves one a connection owns to it (an unknown outcome, whose late
// completion Command.Answered reports). The client and the simulator's callers both use it.
//
// The engine runs its loop on a goroutine (Start) in production, or is driven synchronously with
// RunPending by the simulator, with no goroutines at all.
package engine
