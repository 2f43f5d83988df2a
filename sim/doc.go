// Package sim is respire's deterministic simulator: it runs the real engine and state machines
// against a simulated network and simulated Redis nodes under virtual time, replays YAML fault
// scenarios, and records everything the checkers need.
//
// # Determinism
//
// A run is single-threaded and has no goroutines. One event heap, ordered by virtual time and
// then by scheduling sequence, drives everything: network deliveries, node processing, engine
// timers, fault starts and stops, and the workload's callers. Randomness comes from seeded
// generators, one stream per component (engine draws, each connection's network jitter, each
// caller's workload, each fault's range resolution), so that a change in one component never
// shifts another's draws. No map is iterated where order could matter. The same scenario and seed
// therefore give a byte-identical trace, and Result.TraceHash proves it.
//
// # The kernel and the engine
//
// The engine (package engine) runs in stepper mode: it implements engine.Runtime with virtual
// time, draws from the engine stream and arms timers on the heap, and after every scheduler
// action the runner calls Engine.RunPending, never Start. Every engine step is recorded
// (Result.Steps) and traced; engine.Replay over the recorded events reproduces the effects.
//
// # The network
//
// Each connection is a pair of byte pipes with per-direction latency (base latency plus seeded
// jitter, delivered in order). Bytes really travel: the client writes RESP frames, the node
// parses them with resp.ParseCommand and answers with resp.AppendValue in the connection's
// protocol, and the client parses replies with resp.Parse. Command ids travel out of band: the
// client records which stream offsets carry which command, so the node attributes each request
// to its command id (the apply log) with nothing extra on the wire. Connects travel too (SYN,
// then SYN-ACK or a reset).
//
// Every decision the client makes about those bytes is production code from netio/wire, the
// protocol layer netio runs over sockets: the handshake machine, a connection's pending commands
// (wire.Pipeline: stages, FIFO pairing, pushes, drain, failure, the idle-read verdict), the
// subscriber protocol (wire.Subscriber) and failure classification; the simulated callers end
// their waits by the engine's caller protocol (engine.Engine.Abandon). The simulator imports no
// other client code (TestImportBoundary): it owns only the clock, the pipes, the simulated
// servers, the workload and the checkers.
//
// # Nodes
//
// A simulated standalone node serves PING, HELLO, AUTH, SELECT, CLIENT (SETNAME, GETNAME, ID;
// SETINFO is rejected as Redis 7.0 does), GET, SET (NX, XX, GET, EX, PX, KEEPTTL), DEL, EXISTS,
// INCR, MGET, MSET and QUIT, with an optional requirepass. Every executed command that carries a
// command id is appended to the apply log (Result.Applies). A killed node keeps its dataset
// across restart, modelling persistence. For dedicated connections it also serves lists (LPUSH,
// RPUSH, LPOP, RPOP, LLEN), blocking pops (BLPOP, BRPOP) and transactions (MULTI, EXEC,
// DISCARD, WATCH, UNWATCH); see sim/node and dedicated.go. For pub/sub it serves
// SUBSCRIBE, PSUBSCRIBE, SSUBSCRIBE and their unsubscribes (acknowledged as pushes on RESP3, as
// arrays on RESP2), PUBLISH with glob patterns and SPUBLISH, keeping each connection's
// subscription set as ground truth; see sim/node and pubsub.go.
//
// With a cluster topology the nodes form a Redis Cluster (sim/node's Cluster, cluster.go here):
// shards of a primary and replicas sharing one view of the slot map and one dataset per shard.
// Each node answers CLUSTER SLOTS and ASKING, checks every keyed command's slot (MOVED, ASK,
// READONLY on a demoted primary, CLUSTERDOWN, CROSSSLOT), and the fault kind "cluster" migrates
// slots, promotes replicas, replaces nodes at new addresses, restarts the Cluster with empty
// CLUSTER SLOTS replies and opens CLUSTERDOWN windows. Host names (shard endpoints, DNS names)
// resolve when dialed. The client is the production Cluster client.
//
// # Faults
//
// The timeline (Scenario.Faults) refuses connects, accepts and then drops connections, drops
// connections now or after a number of bytes, loses a reply, black-holes (half-open, both ways
// or one way, with held bytes delivered on heal and held SYNs and SYN-ACKs retransmitted as TCP
// does), delays, kills and restarts (keeping the dataset or losing it), rejects handshakes with
// an error reply, pauses nodes, refuses named commands with error replies (BUSY, OOM, READONLY,
// MOVED, a SELECT alone), makes named commands slow or their replies malformed, and repeats any
// of these (every, count). Windows on one target compose as a union. See Fault for each kind's
// exact semantics.
//
// # Reports
//
// Package report (sim/report) writes a failing run's HTML page: the violations with their
// operation ids and virtual times, a timeline of faults, slot states, dials and outcomes, and
// porcupine's view of each failing key. cmd/respire-sim writes it with the resolved scenario,
// the trace and the violations.
//
// # Plants
//
// Scenario.Plant plants deliberate bugs so that each checker has a positive control: see the
// Plant constants. Most live in the simulator layer. The plants of shared code (netio/wire's
// pipeline and subscriber protocol, the engine's caller logic and grant) are wrong decisions of
// the very code production runs, switched on through internal/plant, which no application can
// reach; each has a control scenario in testdata, and the random runs catch all but the pub/sub
// one (TestRandomRunsCatchSharedPlants).
//
// # Running
//
// Package scenario (sim/scenario) loads a scenario strictly, resolves its ranges for a seed and
// writes it back; Run executes it and returns a Result for the checkers.
package sim
