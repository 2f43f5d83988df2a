package fsm

import (
	"fmt"
	"math"
	"strconv"
	"time"
)

// DelayCeiling is the largest MaxDelay a Policy accepts: one day.
const DelayCeiling = 24 * time.Hour

// DefaultBackoffMultiplier is the multiplier a Policy uses when BackoffMultiplier is zero.
const DefaultBackoffMultiplier = 2.0

// The schedule of attempts that no policy delays: an immediate attempt, then waits of
// NoPolicyFirstWait doubling up to NoPolicyMaxWait, without limit (see NoPolicyWait). Pub/sub
// recovery without a policy schedules its attempts on it; command slots use it as the least
// spacing between the attempts of one slot that no policy governs, which stay demand-driven.
const (
	NoPolicyFirstWait = 250 * time.Millisecond
	NoPolicyMaxWait   = 5 * time.Second
)

// NoPolicyWait returns the wait of the no-policy schedule after failures consecutive failed
// attempts: zero for none, then NoPolicyFirstWait * 2^(failures-1), at most NoPolicyMaxWait. It
// never overflows, whatever failures.
func NoPolicyWait(failures int) time.Duration { return noPolicyBackoff().wait(failures) }

// Policy is the reconnect policy: how long to wait before each replacement attempt and how many
// consecutive failed attempts an episode may make. A nil *Policy means "no policy": replacement is
// immediate and demand-driven, with no delays and no limit, and a slot whose attempt failed rests
// for the no-policy spacing (NoPolicyWait: 250 ms doubling up to 5 s) before a use may retry it,
// so that a refusing endpoint is never dialed faster than that, whatever the command rate.
//
// A Policy is an immutable value once validated; share it freely between clients.
//
// Zero values:
//   - InitialDelay 0: every attempt is scheduled with no delay (zero stays zero whatever the
//     multiplier and jitter).
//   - BackoffMultiplier 0: DefaultBackoffMultiplier (2).
//   - MaxDelay 0: no cap below DelayCeiling (one day).
//   - JitterRatio 0: no jitter.
//   - MaxAttempts 0: unlimited attempts.
type Policy struct {
	// InitialDelay is the wait before the first replacement attempt of an episode.
	InitialDelay time.Duration
	// BackoffMultiplier multiplies the delay for each further failed attempt. It must be finite
	// and at least 1 when set.
	BackoffMultiplier float64
	// MaxDelay caps every delay, before and after jitter. It must not be below InitialDelay nor
	// above DelayCeiling.
	MaxDelay time.Duration
	// JitterRatio J scales each capped delay by a factor drawn uniformly from [1-J, 1+J]. It must
	// be finite and within [0, 1].
	JitterRatio float64
	// MaxAttempts bounds the consecutive failed attempts of one episode. Zero means unlimited;
	// negative values are invalid.
	MaxAttempts int
}

// PolicyError reports an invalid Policy field.
type PolicyError struct {
	// Field is the name of the offending Policy field.
	Field string
	// Reason says what is wrong with it.
	Reason string
}

// Error implements error.
func (e *PolicyError) Error() string {
	return "respire: invalid reconnect policy: " + e.Field + " " + e.Reason
}

// Validate reports the first invalid field of p, or nil. A nil policy is valid.
func (p *Policy) Validate() error {
	if p == nil {
		return nil
	}
	switch {
	case p.InitialDelay < 0:
		return &PolicyError{"InitialDelay", "must not be negative"}
	case p.MaxDelay < 0:
		return &PolicyError{"MaxDelay", "must not be negative"}
	case p.MaxDelay > DelayCeiling:
		return &PolicyError{"MaxDelay", "must be at most one day"}
	case p.InitialDelay > DelayCeiling:
		return &PolicyError{"InitialDelay", "must be at most one day"}
	case p.MaxDelay != 0 && p.MaxDelay < p.InitialDelay:
		return &PolicyError{"MaxDelay", "must not be below InitialDelay"}
	case math.IsNaN(p.BackoffMultiplier) || math.IsInf(p.BackoffMultiplier, 0):
		return &PolicyError{"BackoffMultiplier", "must be finite"}
	case p.BackoffMultiplier != 0 && p.BackoffMultiplier < 1:
		return &PolicyError{"BackoffMultiplier", "must be at least 1"}
	case math.IsNaN(p.JitterRatio) || math.IsInf(p.JitterRatio, 0):
		return &PolicyError{"JitterRatio", "must be finite"}
	case p.JitterRatio < 0 || p.JitterRatio > 1:
		return &PolicyError{"JitterRatio", "must be between 0 and 1"}
	case p.MaxAttempts < 0:
		return &PolicyError{"MaxAttempts", "must be at least 1 when set"}
	}
	return nil
}

// Cap returns the effective maximum delay: MaxDelay, or DelayCeiling when MaxDelay is zero (or
// negative, in a policy that failed validation).
func (p *Policy) Cap() time.Duration {
	if p.MaxDelay <= 0 {
		return DelayCeiling
	}
	return p.MaxDelay
}

// Multiplier returns the effective backoff multiplier.
func (p *Policy) Multiplier() float64 {
	if p.BackoffMultiplier == 0 {
		return DefaultBackoffMultiplier
	}
	return p.BackoffMultiplier
}

// Unlimited reports whether the policy allows any number of attempts.
func (p *Policy) Unlimited() bool { return p.MaxAttempts == 0 }

// Exhausts reports whether a failure of attempt number n (one-based) exhausts the budget.
func (p *Policy) Exhausts(n int) bool { return p.MaxAttempts > 0 && n >= p.MaxAttempts }

// Base returns the un-jittered delay of attempt n (one-based):
// min(Cap, InitialDelay * Multiplier^(n-1)). It never overflows, whatever n.
func (p *Policy) Base(n int) time.Duration {
	if p.InitialDelay <= 0 {
		return 0
	}
	if n < 1 {
		n = 1
	}
	limit := p.Cap()
	scaled := float64(p.InitialDelay) * math.Pow(p.Multiplier(), float64(n-1))
	if math.IsInf(scaled, 0) || math.IsNaN(scaled) || scaled >= float64(limit) {
		return limit
	}
	return time.Duration(scaled)
}

// Delay returns the actual delay before attempt n (one-based) given draw, a number drawn
// uniformly from [0, 1) by the runtime. The base delay is scaled by 1 - J + 2*J*draw and capped
// again at the effective maximum. Zero initial delay gives zero.
//
// A draw outside [0, 1) is clamped into it first (NaN and negatives count as 0, 1 and above as
// the largest draw below 1), so the delay always lies in the policy's jitter band
// and is never negative, whatever the runtime supplied.
func (p *Policy) Delay(n int, draw float64) time.Duration {
	base := p.Base(n)
	if base == 0 || p.JitterRatio == 0 {
		return base
	}
	factor := 1 - p.JitterRatio + 2*p.JitterRatio*clampDraw(draw)
	scaled := float64(base) * factor
	if limit := p.Cap(); scaled >= float64(limit) {
		return limit
	}
	// Only a policy that failed validation (a jitter ratio outside [0, 1]) can scale below zero
	// or to NaN; its delay is then zero rather than a negative duration.
	if !(scaled > 0) {
		return 0
	}
	return time.Duration(scaled)
}

// clampDraw returns draw within [0, 1), the range every machine expects of a random draw: NaN and
// negative draws become 0, and draws of 1 or more become the largest float64 below 1. It is the
// one clamp of this package: every use of an event's draw goes through it, so a runtime's faulty
// draw can skew a delay within its band but never push it outside.
func clampDraw(draw float64) float64 {
	switch {
	case !(draw >= 0): // NaN or negative
		return 0
	case draw >= 1:
		return lastDraw
	}
	return draw
}

// lastDraw is the largest float64 below 1.
const lastDraw = 1 - 0x1p-53

// String describes the policy deterministically.
func (p *Policy) String() string {
	if p == nil {
		return "policy(none)"
	}
	attempts := "unlimited"
	if p.MaxAttempts > 0 {
		attempts = strconv.Itoa(p.MaxAttempts)
	}
	return fmt.Sprintf("policy(initial=%v multiplier=%s max=%v jitter=%s attempts=%s)",
		p.InitialDelay, strconv.FormatFloat(p.Multiplier(), 'g', -1, 64), p.Cap(),
		strconv.FormatFloat(p.JitterRatio, 'g', -1, 64), attempts)
}
