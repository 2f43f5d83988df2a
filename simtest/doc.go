// Package simtest runs an application's own Redis code against respire's simulator: a real
// *client.Client, bound to simulated Redis nodes and a simulated network, under a scenario's
// faults, in virtual time, deterministically. See docs/testing-your-code.md for a guide and a
// worked example.
//
// # A run
//
// Run (or Test, which reports to a testing.T) builds the world of a scenario for a seed, builds
// a client from the scenario's client section, and runs the body as the first task. The body
// reaches the client with Env.Client and starts more tasks with Env.Go; the run ends when every
// task ended, and the client is then closed.
//
// Tasks are goroutines, but only one runs at a time. A task yields at each client call (the
// command's wait, its CommandTimeout and its context run on the simulator's clock) and at the
// package's own waits: Env.Sleep, Env.Yield, Task.Wait, and the contexts of Env.WithTimeout.
// Env.AfterFunc starts a task at a virtual time. When no task can run, the world advances to its
// next event: a reply arrives, a fault starts, a timer fires. Among the tasks ready at once, a
// generator seeded with the run's seed picks the next, so a seed replays the same interleaving
// (Result.TraceHash proves it) and other seeds explore others.
//
// Code under test must therefore wait only at those points: not on its own channels or
// mutexes, not with time.Sleep, not on a context with a real deadline. Tasks share memory
// without locks, since they never run together. A task that blocks elsewhere fails the run
// after Config.Watchdog of real time; tasks that wait for each other, or that outlive the
// scenario's duration, fail it at once.
//
// # What is simulated
//
// A standalone node, a Redis Cluster or a Sentinel deployment (the scenario's topology: a Sentinel
// topology gives a client with SentinelPrimaryName, configured with the Sentinels) with the
// simulator's commands
// (strings, counters, lists, GET/SET and their variants; see package sim), commands and their
// replies, timeouts, redirects, connection recovery and every fault kind of a scenario.
// Batches (pipelines and MULTI/EXEC), dedicated connections, blocking commands, pub/sub and
// Settle (with the scenario's client.enable_fences) run too. Commands sent to every Cluster node
// fail at once with an error saying the simulator does not support them yet; the replica,
// hedged-read, credential-provider, SplitCrossSlotCommands and DedicatedPool.UnblockOnCancel
// options are refused when the client is built.
//
// The scenario's client section is the client's configuration: the options that shape
// connections (timeouts, the reconnect policy, the protocol, credentials) come from it, and
// Config.Options may adjust only the others (a key prefix, hooks, a logger).
//
// # Property tests
//
// Faults is a rapid generator of fault timelines (lost replies, kills, drops, pauses,
// partitions of one client connection's path, and garbled or wrong-kind replies to the
// commands FaultSpace.Commands names) within a FaultSpace. Check runs a property under
// drawn timelines and seeds and shrinks a failure to the smallest failing run; WriteScenario
// saves its resolved scenario as a file that scenario.Load reads back and that replays the
// failure. Sweep runs a property over a fixed number of indexed timelines, for properties that
// must hold on every seed.
package simtest
