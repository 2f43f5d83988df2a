// Package workload is the simulated application: the logical callers that issue commands through
// the client's shared connections (callers.go), the renters of dedicated connections for blocking
// pops, pushes and transactions (renters.go), and the subscribers and publisher of pub/sub
// (pubsub.go). Each uses the client (engine.Engine) as a service does, follows the engine's
// caller protocol when it stops waiting, draws from its own random stream, and records what it
// saw (sim/record) for the checkers.
//
// The workload runs on the simulator's scheduler (Scheduler) and writes to the run's trace; the
// runner (package sim) gives it both through Env.
package workload

import (
	"time"

	"github.com/respire-go/respire/engine"
	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/sim/record"
	"github.com/respire-go/respire/sim/scenario"
	"github.com/respire-go/respire/sim/trace"
)

// Actor is something the scheduler runs at a virtual time. arg is the value given when the
// event was scheduled, so that one actor can receive several kinds of events without a closure
// per event. Run reports whether the event did anything (a stale event does not).
type Actor interface {
	Run(arg uint64) bool
}

// Scheduler is the simulator's virtual clock and event heap.
type Scheduler interface {
	// Now returns the virtual time.
	Now() time.Duration
	// Schedule runs a.Run(arg) at time at (not before now).
	Schedule(at time.Duration, a Actor, arg uint64)
	// After runs a.Run(arg) after d.
	After(d time.Duration, a Actor, arg uint64)
}

// Env is what the workload runs with.
type Env struct {
	// Scenario is the resolved scenario, whose workload section the workload follows.
	Scenario *scenario.Scenario
	// Seed is the run's seed: each caller, renter and publisher draws from its own stream of it.
	Seed uint64
	// Sched schedules the workload's events.
	Sched Scheduler
	// Trace is the run's trace.
	Trace *trace.Tracer
	// Result receives the operations and what the subscribers received.
	Result *record.Result
	// Engine is the client under test.
	Engine *engine.Engine
	// Client, when set, takes the callers' commands instead of Engine: a client that routes
	// reads to replicas (sim/replica.go) and follows the caller protocol on the engine that
	// holds each command.
	Client Client
	// Reads, when set, rents the renters' blocking reads (XREAD) where the read policy sends
	// them, instead of Engine's pool.
	Reads ReadRenter
	// SegmentOps, when positive, says the runner hands the records over in segments of about
	// that many operations (sim.RunOptions.Sink): the workload sizes its records for one segment
	// instead of the whole run.
	SegmentOps int
}

// ReadRenter rents the dedicated connection of a blocking read (a renter's XREAD) where the
// client's read policy sends it: the replica client of a run with replication, which selects
// through the read router and checks a replica's connection with ROLE before handing it over,
// as client.Client's blocking reads do.
type ReadRenter interface {
	// RentRead starts a rent; done receives its one answer. Cancel withdraws it: done then
	// receives a cancelled answer unless the rent was answered already.
	RentRead(done func(ReadGrant)) (cancel func())
}

// ReadGrant is the answer to a ReadRenter's rent.
type ReadGrant struct {
	// Engine is the engine the connection came from, which takes it back (Return); nil when no
	// server could take the read (Grant.Outcome then says why, Err the reason).
	Engine *engine.Engine
	// Grant is the pool's answer, its connection id the engine's own.
	Grant engine.Grant
	// RunConn is the connection's id in the run's records (the engine's offset added).
	RunConn fsm.ConnID
	// Waiters are the rents the read made, as the run's records number them.
	Waiters []fsm.WaiterID
	// Err is the failure's text when the read got no connection.
	Err string
}

// Client is what the callers need of a client that is more than one engine.
type Client interface {
	// Submit sends cmd, as Engine.Submit does.
	Submit(cmd *engine.Command)
	// Abandon is Engine.Abandon for a command sent with Submit.
	Abandon(cmd *engine.Command) engine.Abandonment
}

// submit sends a caller's command to the client.
func (w *Env) submit(cmd *engine.Command) {
	if w.Client != nil {
		w.Client.Submit(cmd)
		return
	}
	w.Engine.Submit(cmd)
}

// abandon is the caller protocol's withdrawal on the client.
func (w *Env) abandon(cmd *engine.Command) engine.Abandonment {
	if w.Client != nil {
		return w.Client.Abandon(cmd)
	}
	return w.Engine.Abandon(cmd)
}
