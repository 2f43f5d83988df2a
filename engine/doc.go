// Package engine drives respire's pure state machines (package fsm) against the outside world.
//
// One Engine serves one standalone endpoint and drives four machines, which share one event
// loop, one random source and one journal:
//
//   - fsm.Mux: the command slots, the multiplexed connections that Submit writes to, with their
//     recovery and their lifetime recycling;
//   - fsm.Pool: the dedicated connections that Rent and Return lend out for blocking commands,
//     transactions and exclusive use;
//   - two fsm.Episode machines, one for regular pub/sub (channels and patterns) and one for
//     sharded pub/sub, each owning its subscriber connection (Subscribe, Unsubscribe).
//
// With Config.Cluster, the Engine is a Redis Cluster client's: one fsm.Cluster machine replaces
// the Mux and the Pool and runs one of each per node. Submit computes a command's slot from its
// frame (FrameSlot) and writes to a ready connection of the node serving it, read from a
// snapshot of the published fsm.ClusterMap; MOVED, ASK, READONLY, TRYAGAIN and CLUSTERDOWN
// replies are followed within a budget of five, never an unknown outcome (cluster*.go).
//
// Every input (a caller's demand, a rent, a subscription, a transport result, a timer) becomes
// an fsm.Event. The engine stamps it with the runtime's time and a random draw, appends it to the
// journal, and steps it into its machine: connection and timer events go to the machine whose
// identifier range holds their id (fsm.MachineOf), caller events to Event.Machine, and
// retirement and disposal to all four in a fixed order. The effects are then executed through
// narrow interfaces:
//
//   - Transport, Conn and Sink: opening, handshaking and using connections (netio for real
//     sockets, sim for the simulator; one conformance suite, enginetest, runs against both);
//   - Runtime: time, randomness and timers (ClockRuntime in production, virtual time in sim);
//   - Observer: lifecycle observations, delivered in order (Dispatcher moves them off the loop);
//   - Meter: recovery measurements (OTelMeter for OpenTelemetry);
//   - PubSubSink: subscriptions to send, gap markers and ends for the pub/sub machines (Router,
//     which also delivers messages to bounded Mailboxes).
//
// After each step that changed a command slot's route, the engine publishes an immutable routing
// snapshot. Submit reads it without locks, so a command on a healthy connection never waits for
// the event loop, records no recovery metric and reads no policy counter. A connection that is
// draining refuses an offered command untouched (Offerer), and the command then goes through the
// loop as a demand.
//
// Replay steps recorded events into fresh machines built from the same Config and reproduces
// every effect, as long as the events start at the engine's first one: the simulator records
// every step and replays whole runs. Journal keeps only the most recent Config.JournalSize events;
// once it has wrapped (Journal.Complete reports false), its tail shows what happened but cannot
// be replayed from fresh machines.
//
// Config.Capture keeps such a tail replayable: a ring of the last events with their effects and
// snapshots of the machines' state (capture.go, snapshot.go), dumped as JSON Lines by
// DumpCapture or by its triggers (Deps.OnCapture). ReadCapture and CaptureFile.Replay restore the
// machines from the snapshot, step the events after it and name the first divergence;
// respire-sim replay and respire-sim scenario are built on them (docs/capture.md).
//
// The engine's Config comes from package engine/config, the resolver that client.Options and the
// simulator's scenarios share, so both runtimes configure the machines the same way.
//
// A caller that stops waiting for a command (its timeout or its context) follows the caller's
// protocol (caller.go): Engine.Abandon withdraws a command still waiting for a connection (a
// definite failure) or leaves one a connection owns to it (an unknown outcome, whose late
// completion Command.Answered reports). The client and the simulator's callers both use it.
//
// The engine runs its loop on a goroutine (Start) in production, or is driven synchronously with
// RunPending by the simulator, with no goroutines at all.
package engine
