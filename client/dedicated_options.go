package client

import (
	"strconv"
	"time"

	"github.com/respire-go/respire/fsm"
)

// Defaults and bounds of DedicatedPoolOptions.
const (
	// DefaultDedicatedMaximumIdle is the number of idle dedicated connections retained when
	// DedicatedPoolOptions.MaximumIdle is zero.
	DefaultDedicatedMaximumIdle = 4
	// NoIdleReuse, assigned to DedicatedPoolOptions.MaximumIdle, retains no idle connection:
	// every returned dedicated connection is closed.
	NoIdleReuse = -1
	// MaxDedicatedIdleTimeout bounds DedicatedPoolOptions.IdleTimeout.
	MaxDedicatedIdleTimeout = 24 * time.Hour
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

// maximumIdle resolves MaximumIdle's zero value and NoIdleReuse.
func (p *DedicatedPoolOptions) maximumIdle() int {
	switch {
	case p.MaximumIdle == 0:
		return DefaultDedicatedMaximumIdle
	case p.MaximumIdle == NoIdleReuse:
		return 0
	}
	return p.MaximumIdle
}

// validate checks the pool options; errors name DedicatedPool.<field>.
func (p *DedicatedPoolOptions) validate() error {
	switch {
	case p.MinimumSize < 0:
		return configErr("DedicatedPool.MinimumSize", "must not be negative")
	case p.MaximumSize < 0:
		return configErr("DedicatedPool.MaximumSize", "must not be negative (zero means no limit)")
	case p.MaximumIdle < NoIdleReuse:
		return configErr("DedicatedPool.MaximumIdle", "must not be negative (use NoIdleReuse to disable idle reuse)")
	case p.MinimumSize > p.maximumIdle():
		return configErr("DedicatedPool.MinimumSize", "must not exceed MaximumIdle ("+strconv.Itoa(p.maximumIdle())+")")
	case p.MaximumSize > 0 && p.MinimumSize > p.MaximumSize:
		return configErr("DedicatedPool.MinimumSize", "must not exceed MaximumSize ("+strconv.Itoa(p.MaximumSize)+")")
	case p.IdleTimeout < 0:
		return configErr("DedicatedPool.IdleTimeout", "must not be negative (zero disables timed retirement)")
	case p.IdleTimeout != 0 && (p.IdleTimeout < time.Millisecond || p.IdleTimeout > MaxDedicatedIdleTimeout):
		return configErr("DedicatedPool.IdleTimeout", "must be between 1ms and 24h")
	}
	return nil
}

// poolConfig is the machine's configuration (the engine fills in the policy and identifiers).
func (p *DedicatedPoolOptions) poolConfig() fsm.PoolConfig {
	return fsm.PoolConfig{
		MinimumSize: p.MinimumSize,
		MaximumSize: p.MaximumSize,
		MaximumIdle: p.maximumIdle(),
		IdleTimeout: p.IdleTimeout,
	}
}
