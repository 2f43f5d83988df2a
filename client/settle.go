package client

import (
	"context"

	"github.com/cockroachdb/errors"

	"github.com/respire-go/respire/engine"
	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/internal/simbind"
	"github.com/respire-go/respire/netio/wire"
)

var (
	// ErrNotUnknownOutcome: Settle was given an error that is not an unknown outcome (nil, a
	// definite failure, or a success): there is nothing to settle.
	ErrNotUnknownOutcome = sentinel("respire: settle needs an unknown-outcome error")
	// ErrNoIdentity: no fence is possible for the command's connection. Its CLIENT ID is not
	// known (Options.EnableFences is off, or the server refused CLIENT ID), or the reply was lost
	// while the connection stayed up (a command timeout or a cancelled context) and the error
	// names no failed connection.
	ErrNoIdentity = sentinel("respire: no fence is possible for the command's connection")
)

// SettleError reports a Settle that returned before the fence was acknowledged: its context
// ended, the fence's CLIENT KILL was refused (for example an ACL without CLIENT KILL), or the
// client was closed. The obligation is not dropped: the client keeps trying to discharge it
// until it is closed. Unwrap gives the cause (the context's error, a *KillError cause, or
// ErrClosed).
type SettleError struct {
	// Reason says why Settle returned early.
	Reason string
	// Err is the cause.
	Err error
}

// Error implements error.
func (e *SettleError) Error() string {
	msg := "respire: fence not acknowledged: " + e.Reason
	if e.Err != nil {
		msg += ": " + causeText(e.Err)
	}
	return msg
}

// Unwrap returns the cause.
func (e *SettleError) Unwrap() error { return e.Err }

// Settle waits until the command whose unknown outcome err reports can no longer execute: when
// it returns nil, the command either ran or never will, so the application can read the
// server's state and decide safely (for example whether to retry a non-idempotent write).
//
// It needs Options.EnableFences. A connection that dies with commands written and their replies
// missing owes a fence: the client opens a connection of its own straight to the address the
// dead one was connected to, with ConnectTimeout, and sends CLIENT KILL ID with the dead
// connection's id. Whatever the server answers about that id proves the old connection is gone,
// and with it any of its bytes still waiting in the server's buffers. The fence bypasses the
// reconnect policy and its attempt limit; failed attempts are retried after 100 ms, doubling up
// to 5 s, until one is answered or the client is closed. Settle only waits for it, so calling it
// is never required for the fence to happen, and calling it twice is harmless.
//
// Errors:
//   - ErrNotUnknownOutcome when err does not match ErrUnknownOutcome;
//   - ErrNoIdentity when no fence is possible for the command's connection;
//   - a *SettleError wrapping ctx's error when ctx ends first, the fence's *KillError when the
//     server refused the kill (the client keeps trying), or ErrClosed when the client is closed.
//
// Settle applies to the client's own shared connections and dedicated connections; an error from
// another client is answered for as a connection that owed nothing.
func (c *Client) Settle(ctx context.Context, err error) error {
	if err == nil || !errors.Is(err, ErrUnknownOutcome) {
		return ErrNotUnknownOutcome
	}
	ep, conn, ok := wire.FailedConn(err)
	if !c.opts.EnableFences || !ok {
		return ErrNoIdentity
	}
	if c.closed.Load() {
		return &SettleError{Reason: "client closed", Err: ErrClosed}
	}
	eng := c.engineOf(ep)
	done := make(chan engine.Grant, 1)
	id := eng.Settle(conn, func(g engine.Grant) { done <- g })
	if c.sim != nil {
		// A simulated client (simtest) waits through the host, in virtual time.
		if c.sim.Wait(ctx, func() bool { return len(done) > 0 }, 0) == simbind.Ready {
			return settleResult(<-done)
		}
		eng.Cancel(fsm.MachineFence, id)
		return &SettleError{Reason: "context done", Err: ctx.Err()}
	}
	select {
	case g := <-done:
		return settleResult(g)
	case <-ctx.Done():
		eng.Cancel(fsm.MachineFence, id)
		return &SettleError{Reason: "context done", Err: ctx.Err()}
	}
}

// settleResult turns the fence machine's answer into Settle's result.
func settleResult(g engine.Grant) error {
	switch {
	case g.Outcome == fsm.OutcomeGranted:
		return nil
	case errors.Is(g.Err, fsm.ErrNoIdentity):
		return ErrNoIdentity
	case g.Outcome == fsm.OutcomeClosed:
		return &SettleError{Reason: "client closed", Err: ErrClosed}
	case g.Outcome == fsm.OutcomeCancelled:
		return &SettleError{Reason: "cancelled", Err: context.Canceled}
	}
	var ke *engine.KillError
	if errors.As(g.Err, &ke) {
		return &SettleError{Reason: "the server refused the fence's CLIENT KILL", Err: &KillError{Message: ke.Message}}
	}
	return &SettleError{Reason: "the fence's CLIENT KILL failed", Err: g.Err}
}

// engineOf returns the engine whose connections go to ep: for a replica read, that replica's
// engine in the current generation; the client's own otherwise.
func (c *Client) engineOf(ep engine.Endpoint) *engine.Engine {
	if rs := c.replicas; rs != nil {
		if g := rs.cur.Load(); g != nil {
			for i, r := range g.eps[1:] {
				if i < len(g.engines) && r.Host == ep.Host && r.Port == ep.Port {
					return g.engines[i]
				}
			}
		}
	}
	return c.eng
}

// KillError is the server's refusal of a fence's CLIENT KILL (a permission error, for example).
// Its message is the server's and names no key, value or credential.
type KillError struct {
	// Message is the server's error reply, its code first.
	Message string
}

// Error implements error.
func (e *KillError) Error() string { return "respire: fence CLIENT KILL rejected: " + e.Message }
