package client

import (
	"time"

	"github.com/respire-go/respire/engine/config"
)

// Defaults and bounds of DedicatedPoolOptions, shared with the simulator's scenarios through
// package engine/config, which validates the pool options.
const (
	// DefaultDedicatedMaximumIdle is the number of idle dedicated connections retained when
	// DedicatedPoolOptions.MaximumIdle is zero.
	DefaultDedicatedMaximumIdle = config.DefaultDedicatedMaximumIdle
	// NoIdleReuse, assigned to DedicatedPoolOptions.MaximumIdle, retains no idle connection:
	// every returned dedicated connection is closed.
	NoIdleReuse = config.NoIdleReuse
	// MaxDedicatedIdleTimeout bounds DedicatedPoolOptions.IdleTimeout.
	MaxDedicatedIdleTimeout = config.MaxDedicatedIdleTimeout
	// UnblockBudget bounds the cleanup of a cancelled blocking command under
	// DedicatedPoolOptions.UnblockOnCancel: CLIENT UNBLOCK and the drain of the blocked reply
	// must finish within it, or the connection is discarded.
	UnblockBudget = time.Second
)

// DedicatedPoolOptions bounds the pool of exclusive connections that blocking commands,
// WATCH/MULTI/EXEC transactions and Client.Dedicated rent. The zero value is the spec's default:
// demand-driven creation with no total limit, four retained idle connections, no timed
// retirement. Limits apply per client.
type DedicatedPoolOptions struct {
	// MinimumSize is the floor kept by timed idle retirement (IdleTimeout). It is reached
	// through demand only: it does not prewarm connections or replace failed ones. It must not be
	// negative, nor exceed the effective MaximumIdle, nor a non-zero MaximumSize.
	MinimumSize int
	// MaximumSize limits connecting, rented and idle dedicated connections together, including
	// rents that keep their reservation through a reconnect backoff. Zero means no limit. At the
	// limit, a rent waits until a connection is returned or closed, or its context ends: pass a
	// context with a deadline when every connection may be held by an indefinitely blocking
	// command.
	MaximumSize int
	// MaximumIdle bounds the idle connections kept for reuse; a surplus return is closed. Zero
	// means DefaultDedicatedMaximumIdle (4); NoIdleReuse disables idle reuse. It does not limit
	// the number of connections rented at once.
	MaximumIdle int
	// IdleTimeout, when set (1 ms to 24 h), closes idle connections above MinimumSize. The pool
	// scans at this interval, so an idle connection closes between one and two intervals after
	// its return. Zero disables timed retirement.
	IdleTimeout time.Duration
	// UnblockOnCancel, when a caller's context ends while its blocking command waits on the
	// server, sends CLIENT UNBLOCK <id> TIMEOUT through a multiplexed connection, drains the
	// blocked reply and keeps the dedicated connection. If that does not finish within
	// UnblockBudget (one second), the connection is discarded. Without it (the default) the
	// connection is discarded at once.
	UnblockOnCancel bool
}
