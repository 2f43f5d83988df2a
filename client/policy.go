package client

import (
	"time"

	"github.com/cockroachdb/errors"

	"github.com/respire-go/respire/fsm"
)

// Bounds and defaults of ReconnectPolicy.
const (
	// MaxReconnectDelay is the largest InitialDelay and MaxDelay a ReconnectPolicy accepts, and
	// the cap of a policy whose MaxDelay is zero: one day.
	MaxReconnectDelay = fsm.DelayCeiling
	// DefaultBackoffMultiplier is the multiplier of a ReconnectPolicy whose BackoffMultiplier is
	// zero.
	DefaultBackoffMultiplier = fsm.DefaultBackoffMultiplier
	// NoPolicyFirstRest and NoPolicyMaxRest are the rests of a slot without a policy: after
	// its first failed attempt in a row it rests NoPolicyFirstRest, and each further failure
	// doubles the rest up to NoPolicyMaxRest.
	NoPolicyFirstRest = fsm.NoPolicyFirstWait
	// NoPolicyMaxRest: see NoPolicyFirstRest.
	NoPolicyMaxRest = fsm.NoPolicyMaxWait
)

// ReconnectPolicy delays and bounds the replacement of failed connections (Options.ReconnectPolicy).
// It applies alike to each command connection, each dedicated rent and each pub/sub recovery.
//
// Attempt n of a recovery episode (one-based) waits
//
//	min(MaxDelay, InitialDelay × BackoffMultiplier^(n-1))
//
// scaled by a factor drawn uniformly from [1-JitterRatio, 1+JitterRatio] and capped at MaxDelay
// again (see Delay). Attempts stay demand-driven: after a failed attempt, the next use of the
// connection schedules the next one, and concurrent commands share it. A replacement that
// connects, including its handshake, ends the episode: the next failure starts again at
// attempt 1.
//
// Exhaustion: when an episode's failed attempts reach MaxAttempts, that connection slot stops
// recovering for the life of the client. Other slots keep serving; when every slot is
// exhausted, commands fail at once with a *ReconnectLimitError (matching ErrReconnectLimit), and
// nothing revives the client: close it and create a new one. A dedicated rent that exhausts
// fails that rent alone; the next rent starts afresh. Leave MaxAttempts at zero (unlimited) and
// bound the wait with MaxDelay unless the application recreates clients itself.
//
// Zero values:
//   - InitialDelay 0: every attempt is scheduled without delay.
//   - BackoffMultiplier 0: DefaultBackoffMultiplier (2).
//   - MaxDelay 0: no cap below MaxReconnectDelay (one day).
//   - JitterRatio 0: no jitter.
//   - MaxAttempts 0: unlimited attempts.
//
// A nil policy (the default) replaces a failed connection immediately and retries a failed
// replacement on the next use of its slot, with no attempt limit. Each failed attempt rests its
// slot first, NoPolicyFirstRest (250 ms) doubling up to NoPolicyMaxRest (5 s), so that a refusing
// endpoint is dialed at most once per rest per slot whatever the command rate. A command that
// finds no ready slot, no attempt in progress and no slot done resting fails at once with the
// last connection error (a *ConnectionError for a refused connection) instead of waiting out a
// rest. After an outage the client recovers on the first use after the rest in effect: within
// 5 s of the endpoint accepting again.
//
// With a policy or without one, a command starts at most one connection attempt, and commands
// share the attempt in progress. A policy governs replacements only: a slot's initial connection
// (Create's lazy connection) rests between failed attempts as without a policy.
//
// Connect and Create validate the policy (see Validate) and keep a copy of it, so changing it
// afterwards changes nothing; one policy may serve many clients.
type ReconnectPolicy struct {
	// InitialDelay is the wait before the first replacement attempt of an episode: not negative,
	// at most MaxReconnectDelay.
	InitialDelay time.Duration
	// BackoffMultiplier multiplies the delay after each further failed attempt: finite and at
	// least 1 when set.
	BackoffMultiplier float64
	// MaxDelay caps every delay, before and after jitter: not negative, at most
	// MaxReconnectDelay, and when set not below InitialDelay.
	MaxDelay time.Duration
	// JitterRatio J scales each capped delay by a factor drawn uniformly from [1-J, 1+J]: finite
	// and within [0, 1].
	JitterRatio float64
	// MaxAttempts bounds the consecutive failed attempts of one episode; zero means unlimited. It
	// must not be negative. See the type's documentation for what exhaustion means.
	MaxAttempts int
}

// machine returns p as the machines' policy. The two types have the same fields, so the
// conversion neither copies nor allocates; nil stays nil. The compiler checks that the fields
// stay the same.
func (p *ReconnectPolicy) machine() *fsm.Policy { return (*fsm.Policy)(p) }

// policyOf returns the machines' policy p as a ReconnectPolicy, without copying.
func policyOf(p *fsm.Policy) *ReconnectPolicy { return (*ReconnectPolicy)(p) }

// Validate reports the first invalid field of p as a *ConfigError whose Option names it
// ("ReconnectPolicy.JitterRatio"), or nil. A nil policy is valid. Options.Validate calls it.
func (p *ReconnectPolicy) Validate() error {
	err := p.machine().Validate()
	if err == nil {
		return nil
	}
	var pe *fsm.PolicyError
	if errors.As(err, &pe) {
		return configErr("ReconnectPolicy."+pe.Field, pe.Reason)
	}
	return configErr("ReconnectPolicy", err.Error())
}

// Delay returns the delay before attempt n (one-based) of an episode for draw, a number from
// [0, 1) that picks the point in the jitter band: 0 gives the shortest delay, values near 1 the
// longest, 0.5 the un-jittered one. A draw outside [0, 1) (NaN, negative, 1 or more) is clamped
// into it, so the delay always lies in its attempt's band and is never negative. Zero
// InitialDelay gives zero. p must be valid (see Validate).
func (p *ReconnectPolicy) Delay(n int, draw float64) time.Duration { return p.machine().Delay(n, draw) }

// String describes the policy with its effective multiplier and cap, for example
// "policy(initial=250ms multiplier=2 max=5s jitter=0.2 attempts=unlimited)", or "policy(none)"
// for nil.
func (p *ReconnectPolicy) String() string { return p.machine().String() }
