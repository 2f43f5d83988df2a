// Package simbind is the seam between package client and the simulator's test harness
// (simtest). It lets simtest build a *client.Client whose engine runs on the simulator's
// virtual clock and simulated network, without adding anything to client's public API and
// without client importing sim.
//
// Package client registers Create in its init function; simtest calls it with a Host. A
// client built without a Host (client.Create, client.Connect) never looks at this package: its
// only cost on the command path is one nil comparison.
package simbind

import (
	"context"
	"time"

	"github.com/respire-go/respire/engine"
	"github.com/respire-go/respire/engine/config"
	"github.com/respire-go/respire/fsm"
)

// Wake says why Host.Wait returned.
type Wake int

const (
	// Ready: the condition the caller waits for holds.
	Ready Wake = iota
	// Cancelled: the caller's context ended first.
	Cancelled
	// TimedOut: the wait's budget, in virtual time, passed first.
	TimedOut
)

// Host is the simulated world a client is bound to: the engine's runtime and transport, and the
// scheduler that runs the application's goroutines one at a time.
type Host interface {
	// Bind checks the client's resolved configuration against the world's (the simulated
	// connections open with the world's handshake and timeouts) and returns the engine's
	// runtime, transport and step observer. The error explains a mismatch.
	Bind(r *config.Resolved) (engine.Runtime, engine.Transport, func(*fsm.Event, []fsm.Effect), error)
	// BindPubSub hands over the client's pub/sub receiver: what the simulated pub/sub
	// connections read goes there.
	BindPubSub(r engine.PubSubReceiver)
	// BindSentinel hands over a Sentinel client's receiver of the Sentinels' messages: the
	// simulated world opens the Sentinel connections and reports what they read there.
	BindSentinel(r *engine.SentinelReceiver)
	// Attach hands over the client's engine, built for stepper mode: the host steps it
	// (Engine.RunPending) and never starts its loop.
	Attach(eng *engine.Engine)
	// CommandID returns a fresh command id, which the simulated nodes record in their apply log.
	CommandID() uint64
	// Wait parks the calling goroutine, which must be one of the host's tasks, until ready
	// reports true, ctx ends, or timeout passes in virtual time (zero or negative: no budget).
	// ready is evaluated by the host while the task is parked; it must only read state that
	// the simulated world changes (a buffered channel's length, a context's error).
	Wait(ctx context.Context, ready func() bool, timeout time.Duration) Wake
	// Closed reports that the client disposed its engine: the host steps the disposal.
	Closed()
	// MaintNow returns the virtual time as the time the simulated connections give their
	// maintenance relaxation (engine.Relax): a wait whose budget passed asks the relaxation for
	// more time at this time, as a production wait asks at time.Now.
	MaintNow() time.Time
}

// Create builds a client bound to host, and connects it first when connect is set (the
// caller must then be one of the host's tasks). opts is a client.Options and the result a
// *client.Client; package client sets Create when it is initialized.
var Create func(ctx context.Context, opts any, host Host, connect bool) (any, error)
