package scenario

import (
	"slices"
	"strconv"
	"strings"
)

// CheckerNames lists every checker a scenario may name under expect.invariants and expect.fail,
// in the order package check runs them. Package check registers exactly these names (a test
// there holds the two lists equal), so a misspelt name is a load error instead of a checker
// silently left out.
var CheckerNames = []string{
	"no-replay", "outcomes", "honest", "pairing", "policy", "handshake-first", "replay",
	"rent-budget", "rent-permanent", "dedicated-no-resend", "pool",
	"pubsub-subscriptions", "pubsub-gaps", "pubsub-exhaustion", "pubsub-policy",
	"linearizable", "lifetime", "liveness",
	"expect-events", "expect-outcomes", "expect-dedicated", "expect-pubsub",
	"expect-during", "expect-dial-rate", "expect-connect",
	"dials", "retired-dials",
	"expect-monitors", "replica-writes",
	"fence",
}

// checkerLiveness is the checker that only expect.liveness configures.
const checkerLiveness = "liveness"

// validateCheckerName reports why name cannot be selected under field, or nil.
func (sc *Scenario) validateCheckerName(field, name string) error {
	if !slices.Contains(CheckerNames, name) {
		return fieldErr(field, "unknown checker "+strconv.Quote(name)+" (want one of "+strings.Join(CheckerNames, ", ")+")")
	}
	if name == checkerLiveness && sc.Expect.Liveness == nil {
		return fieldErr(field, "liveness needs its bound: set expect.liveness {within: ...}")
	}
	return nil
}
