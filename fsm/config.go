package fsm

import (
	"strconv"
	"time"
)

// MaxSlots bounds MuxConfig.Slots: the command slots of one multiplexer generation. Validate
// checks it before NewMux allocates the slots.
const MaxSlots = 1024

// ConfigError reports an invalid field of a machine's configuration (MuxConfig, PoolConfig or
// EpisodeConfig). Match it with errors.As; an invalid policy field also matches *PolicyError.
type ConfigError struct {
	// Config names the configuration: "MuxConfig", "PoolConfig" or "EpisodeConfig".
	Config string
	// Field is the offending field; a field of the reconnect policy is "Policy.<field>".
	Field string
	// Reason says what is wrong with it.
	Reason string
	// Err is the underlying error, or nil: the *PolicyError of an invalid policy.
	Err error
}

// Error implements error.
func (e *ConfigError) Error() string {
	return "respire: invalid " + e.Config + ": " + e.Field + " " + e.Reason
}

// Unwrap returns the underlying error.
func (e *ConfigError) Unwrap() error { return e.Err }

// Validate reports the first invalid field of c, or nil. NewMux panics with this error.
func (c *MuxConfig) Validate() error {
	bad := func(field, reason string) error {
		return &ConfigError{Config: "MuxConfig", Field: field, Reason: reason}
	}
	switch {
	case c.Slots < 1:
		return bad("Slots", "must be at least 1")
	case c.Slots > MaxSlots:
		return bad("Slots", "must be at most "+strconv.Itoa(MaxSlots))
	case c.MaxWaiters < 0:
		return bad("MaxWaiters", "must not be negative")
	case !isIDBase(c.IDBase):
		return bad("IDBase", "must be the IDBase of a machine")
	}
	if err := validateLifetime("MuxConfig", c.Lifetime, c.LifetimeJitter); err != nil {
		return err
	}
	return validatePolicy("MuxConfig", c.Policy)
}

// Validate reports the first invalid field of c, or nil. NewPool panics with this error.
func (c *PoolConfig) Validate() error {
	bad := func(field, reason string) error {
		return &ConfigError{Config: "PoolConfig", Field: field, Reason: reason}
	}
	switch {
	case c.MinimumSize < 0:
		return bad("MinimumSize", "must not be negative")
	case c.MaximumSize < 0:
		return bad("MaximumSize", "must not be negative")
	case c.MaximumIdle < 0:
		return bad("MaximumIdle", "must not be negative")
	case c.IdleTimeout < 0:
		return bad("IdleTimeout", "must not be negative")
	case c.MaxWaiters < 0:
		return bad("MaxWaiters", "must not be negative")
	case !isIDBase(c.IDBase):
		return bad("IDBase", "must be the IDBase of a machine")
	}
	if err := validateLifetime("PoolConfig", c.Lifetime, c.LifetimeJitter); err != nil {
		return err
	}
	return validatePolicy("PoolConfig", c.Policy)
}

// Validate reports the first invalid field of c, or nil. NewEpisode panics with this error.
func (c *EpisodeConfig) Validate() error {
	bad := func(field, reason string) error {
		return &ConfigError{Config: "EpisodeConfig", Field: field, Reason: reason}
	}
	switch {
	case c.Machine != MachinePubSub && c.Machine != MachineShardedPubSub:
		return bad("Machine", "must be MachinePubSub or MachineShardedPubSub")
	case c.MaxWaiters < 0:
		return bad("MaxWaiters", "must not be negative")
	case !isIDBase(c.IDBase):
		return bad("IDBase", "must be the IDBase of a machine")
	}
	return validatePolicy("EpisodeConfig", c.Policy)
}

// isIDBase reports whether base is IDBase(m) for some machine m (only its machine bits are set),
// or NodeIDBase(m, node) for a node machine m (its machine and node bits).
func isIDBase(base uint64) bool { return base&(idSpaceOf(base)-1) == 0 }

func validateLifetime(config string, lifetime, jitter time.Duration) error {
	bad := func(field, reason string) error {
		return &ConfigError{Config: config, Field: field, Reason: reason}
	}
	switch {
	case lifetime < 0:
		return bad("Lifetime", "must not be negative")
	case jitter < 0:
		return bad("LifetimeJitter", "must not be negative")
	case jitter > 0 && lifetime == 0:
		return bad("LifetimeJitter", "requires Lifetime")
	}
	return nil
}

func validatePolicy(config string, p *Policy) error {
	err := p.Validate()
	if err == nil {
		return nil
	}
	pe := err.(*PolicyError)
	return &ConfigError{Config: config, Field: "Policy." + pe.Field, Reason: pe.Reason, Err: pe}
}
