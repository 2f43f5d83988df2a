// Package fsm holds respire's connection-recovery state machines. They are pure: no clock reads,
// no goroutines, no I/O, no global randomness, no logging and no telemetry.
//
// Every machine has a single entry point, Step, which takes an Event and appends Effects to an
// Outbox. An event carries everything the machine needs from the outside world: the current
// (virtual or real) time as an offset from the runtime's origin, a uniform random draw for
// jitter, and the identifiers of the connection, timer or waiter it concerns. Effects are
// plain data (Dial, ArmTimer, CancelTimer, Close, Route, Emit, Record, Complete) that a runtime
// executes. The same state and the same event always produce the same effects, so a journal of
// events replays a run exactly.
//
// The machines here:
//
//   - Policy: the reconnect policy's validation and delay arithmetic.
//   - Mux: the command slots of one multiplexer generation (demand-driven replacement, shared
//     in-progress attempts, sticky per-slot exhaustion, endpoint-wide reconnect limit), and
//     their maximum connection lifetime (lifetime.go: validated replacement, drain, retry cap).
//
// A test enforces the purity boundary by listing this package's imports.
package fsm
