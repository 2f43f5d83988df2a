// Package fsm holds respire's connection-recovery state machines and the Cluster topology values
// they will route by. Everything here is pure: no clock reads, no goroutines, no I/O, no global
// randomness, no synchronization, no logging and no telemetry. A test (purity_test.go) enforces
// it by listing the package's imports.
//
// Every machine has a single entry point, Step, which takes an Event and appends Effects to an
// Outbox. An event carries everything the machine needs from the outside world: the current
// (virtual or real) time as an offset from the runtime's origin, a uniform random draw for
// jitter, and the identifiers of the connection, timer or waiter it concerns. Effects are plain
// data (Dial, ArmTimer, CancelTimer, Close, Route, Emit, Record, Complete, Subscribe,
// Unsubscribe, Gap, End) that a runtime executes. The same state and the same event always
// produce the same effects, so a journal of events replays a run exactly.
//
// A client's engine drives four machines on one event loop; every ConnID and TimerID carries its
// machine in its top bits (IDBase, MachineOf), so the engine routes connection and timer events
// without bookkeeping:
//
//   - Mux (mux.go, lifetime.go): the command slots of one multiplexer generation: demand-driven
//     replacement, shared in-progress attempts, sticky per-slot exhaustion, the endpoint-wide
//     reconnect limit, the no-policy rests, and maximum connection lifetime (validated
//     replacement, drain, retry cap).
//   - Pool (pool.go): dedicated connections rented by blocking commands and transactions: idle
//     reuse, size bounds, per-rent retry budgets, idle retirement and lifetime recycling.
//   - Episode (episode.go), twice: regular and sharded pub/sub recovery and resubscription,
//     with gap markers.
//
// A Cluster client's engine drives, instead of the Mux and the Pool, one Cluster machine
// (cluster*.go), which runs a Mux and a Pool per node as its sub-machines: discovery rounds, the
// refresh scheduler, the slot map it publishes (ClusterMap) and the retirement of departed
// nodes. Its nodes' identifiers carry MachineNodeMux or MachineNodePool and the node's number
// (NodeIDBase, NodeOf).
//
// They share one attempt sub-machine (attempt.go), which writes the reconnect policy's rules
// once: the attempt number, the delay (Policy, with the one clamp of the random draw, or a
// backoff schedule for attempts no policy governs, such as NoPolicyWait), exhaustion (one
// definition, Policy.Exhausts), candidate depletion as a distinct outcome, identifier
// allocation, and the attempt, delay and exhausted measurements and lifecycle observations,
// labelled with their Source and Scope. Its transitions are explicit become functions that
// panic on an illegal edge. The Cluster discovery rounds are built on it too, and the Sentinel
// resolution and monitors to come will be.
//
// Beside the machines:
//
//   - Policy (policy.go): the reconnect policy's validation and delay arithmetic.
//   - MuxConfig, PoolConfig and EpisodeConfig Validate the machines' configurations with typed
//     errors (ConfigError, PolicyError); the constructors refuse invalid ones.
//   - Topology (topology*.go): immutable Cluster topology values: canonical endpoints
//     (Endpoint, ParseEndpoint, CanonicalHost), nodes, parsed topology replies, and Apply,
//     under which an invalid or empty reply changes nothing, a partial one updates only the
//     slots it covers, and a conclusive one replaces the picture; it reports what changed.
package fsm
