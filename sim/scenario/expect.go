package scenario

import "time"

// Expect is what a scenario's checkers must find. It is plain data: the runner ignores it and the
// checkers evaluate it against the Result.
type Expect struct {
	// Invariants selects the invariant checkers to run: "all", or a list of checker names.
	Invariants Invariants `yaml:"invariants,omitempty"`
	// Linearizable asks for the per-key linearizability check.
	Linearizable bool `yaml:"linearizable,omitempty"`
	// Events are assertions on the lifecycle stream, one per slot.
	Events []EventExpect `yaml:"events,omitempty"`
	// Outcomes bounds the counts of operation outcomes.
	Outcomes *OutcomeExpect `yaml:"outcomes,omitempty"`
	// Liveness asks that the client converge after the faults heal.
	Liveness *LivenessExpect `yaml:"liveness,omitempty"`
	// Fail lists checkers that must report violations: the positive controls of planted bugs.
	Fail []string `yaml:"fail,omitempty"`
	// Dedicated bounds the dedicated operations' outcomes (checked by expect-dedicated).
	Dedicated *DedicatedExpect `yaml:"dedicated,omitempty"`
	// PubSub asserts the pub/sub episodes and subscribers (checked by expect-pubsub).
	PubSub *PubSubExpect `yaml:"pubsub,omitempty"`
	// Dials bounds the dials to endpoints in windows of time (checked by dials; cluster.go).
	Dials []DialExpect `yaml:"dials,omitempty"`
	// During holds expectations limited to windows of virtual time (checked by expect-during).
	During []WindowExpect `yaml:"during,omitempty"`
	// DialRate bounds the rate of connection attempts per node (checked by expect-dial-rate).
	DialRate []DialRateExpect `yaml:"dial_rate,omitempty"`
	// Connect asserts that the eager connect fails (checked by expect-connect).
	Connect *ConnectExpect `yaml:"connect,omitempty"`
	// Monitors asserts the Sentinel event monitors (checked by expect-monitors;
	// sentinel_monitor.go).
	Monitors []MonitorExpect `yaml:"monitors,omitempty"`
}

// EventExpect asserts the recovery lifecycle of one slot.
type EventExpect struct {
	// Slot is the slot index.
	Slot int `yaml:"slot"`
	// Attempts are the expected policy attempt numbers of the slot's scheduled attempts, in order.
	Attempts []int `yaml:"attempts,omitempty"`
	// Delays are the expected scheduled delays, aligned with Attempts.
	Delays []time.Duration `yaml:"delays,omitempty"`
	// Exhausted, when set, asserts whether the slot ends exhausted.
	Exhausted *bool `yaml:"exhausted,omitempty"`
}

// OutcomeExpect bounds the number of operations per outcome.
type OutcomeExpect struct {
	// OK bounds the operations that got a reply.
	OK *Bounds `yaml:"ok,omitempty"`
	// Failed bounds the operations that definitely failed.
	Failed *Bounds `yaml:"failed,omitempty"`
	// Unknown bounds the operations with an unknown outcome.
	Unknown *Bounds `yaml:"unknown,omitempty"`
	// ReconnectLimit bounds the failed operations whose error is a reconnect-limit error.
	ReconnectLimit *Bounds `yaml:"reconnect_limit,omitempty"`
}

// Bounds is an inclusive range of counts; a nil end is unbounded.
type Bounds struct {
	// Min is the smallest allowed count, or nil for none.
	Min *int `yaml:"min,omitempty"`
	// Max is the largest allowed count, or nil for none.
	Max *int `yaml:"max,omitempty"`
}

// validate checks the bounds named field (nil bounds are valid).
func (b *Bounds) validate(field string) error {
	switch {
	case b == nil:
		return nil
	case b.Min != nil && *b.Min < 0:
		return fieldErr(field+".min", "must not be negative")
	case b.Max != nil && *b.Max < 0:
		return fieldErr(field+".max", "must not be negative")
	case b.Min != nil && b.Max != nil && *b.Max < *b.Min:
		return fieldErr(field+".max", "must not be below min")
	}
	return nil
}

// LivenessExpect asks that, from After (zero: when the last fault healed), operations succeed
// again within Within.
type LivenessExpect struct {
	// After is when the liveness phase starts; zero means Result.HealedAt.
	After time.Duration `yaml:"after,omitempty"`
	// Within is how soon after After an operation must succeed (positive).
	Within time.Duration `yaml:"within"`
	// From is what Within counts from: "heal" (the default: After) or "demand" (the first
	// operation called at or after After). With demand, a quiet window after the heal is no
	// failure: the client must converge within Within of the first command that needs it, and a
	// run that asks nothing after the heal has nothing to judge.
	From string `yaml:"from,omitempty"`
}

// Liveness origins (LivenessExpect.From).
const (
	// LivenessFromHeal counts the bound from After.
	LivenessFromHeal = "heal"
	// LivenessFromDemand counts it from the first operation called at or after After.
	LivenessFromDemand = "demand"
)

// DedicatedExpect bounds the dedicated operations' outcomes (expect.dedicated), checked by
// expect-dedicated.
type DedicatedExpect struct {
	// OK: operations that completed (a popped element, a push, a committed transaction).
	OK *Bounds `yaml:"ok,omitempty"`
	// Timeout: blocking pops whose block time expired.
	Timeout *Bounds `yaml:"timeout,omitempty"`
	// Conflict: transactions aborted because the watched key changed.
	Conflict *Bounds `yaml:"conflict,omitempty"`
	// Error: operations answered with an error reply.
	Error *Bounds `yaml:"error,omitempty"`
	// Failed: commands that failed definitely (never written).
	Failed *Bounds `yaml:"failed,omitempty"`
	// Unknown: commands written whose reply never came (the connection failed, or the deadline
	// passed).
	Unknown *Bounds `yaml:"unknown,omitempty"`
	// RentFailed: rents that failed at once (no policy, or a permanent rejection).
	RentFailed *Bounds `yaml:"rent_failed,omitempty"`
	// Exhausted: rents that exhausted their attempts.
	Exhausted *Bounds `yaml:"exhausted,omitempty"`
	// Cancelled: rents withdrawn by their operation's deadline.
	Cancelled *Bounds `yaml:"cancelled,omitempty"`
	// Closed: rents stopped by the client's close.
	Closed *Bounds `yaml:"closed,omitempty"`
	// Retried: operations whose rent needed more than one connection attempt.
	Retried *Bounds `yaml:"retried,omitempty"`
	// ConcurrentBackoff bounds the largest number of rents waiting in a backoff at once.
	ConcurrentBackoff *Bounds `yaml:"concurrent_backoff,omitempty"`
}

// NamedBounds is one bounds of an expectation with its YAML name.
type NamedBounds struct {
	// Name is the YAML name of the bounds.
	Name string
	// Bounds are the bounds, or nil when not set.
	Bounds *Bounds
}

// Named returns the bounds of e with their YAML names, in declaration order.
func (e *DedicatedExpect) Named() []NamedBounds {
	return []NamedBounds{{"ok", e.OK}, {"timeout", e.Timeout}, {"conflict", e.Conflict}, {"error", e.Error},
		{"failed", e.Failed}, {"unknown", e.Unknown}, {"rent_failed", e.RentFailed}, {"exhausted", e.Exhausted},
		{"cancelled", e.Cancelled}, {"closed", e.Closed}, {"retried", e.Retried}, {"concurrent_backoff", e.ConcurrentBackoff}}
}

// PubSubExpect asserts the pub/sub episodes and subscribers of a run (checker expect-pubsub).
type PubSubExpect struct {
	// Regular asserts the regular (channel and pattern) episode.
	Regular *EpisodeExpect `yaml:"regular,omitempty"`
	// Sharded asserts the sharded episode.
	Sharded *EpisodeExpect `yaml:"sharded,omitempty"`
	// Subscribers assert individual subscribers.
	Subscribers []SubscriberExpect `yaml:"subscribers,omitempty"`
}

// EpisodeExpect asserts one pub/sub recovery episode's lifecycle.
type EpisodeExpect struct {
	// Attempts are the scheduled policy attempt numbers, in order (0 for scheduled waits
	// without a policy).
	Attempts []int `yaml:"attempts,omitempty"`
	// Delays are the scheduled delays, aligned with Attempts.
	Delays []time.Duration `yaml:"delays,omitempty"`
	// Exhausted, when set, asserts whether the episode exhausted.
	Exhausted *bool `yaml:"exhausted,omitempty"`
	// Dials bounds the connections the episode opened.
	Dials *Bounds `yaml:"dials,omitempty"`
	// Recovered bounds the completed recoveries (connected again after a loss).
	Recovered *Bounds `yaml:"recovered,omitempty"`
}

// SubscriberExpect asserts one subscriber.
type SubscriberExpect struct {
	// Subscriber is the subscriber's index.
	Subscriber int `yaml:"subscriber"`
	// Outcomes are its subscription attempts' outcomes, in order: granted, failed, exhausted,
	// closed.
	Outcomes []string `yaml:"outcomes,omitempty"`
	// Ends are the end reasons of its subscriptions, in order: unsubscribed, closed,
	// reconnect-exhausted, rejected.
	Ends []string `yaml:"ends,omitempty"`
	// Messages bounds the published messages it received.
	Messages *Bounds `yaml:"messages,omitempty"`
	// Gaps bounds the gap markers it received.
	Gaps *Bounds `yaml:"gaps,omitempty"`
	// ReceivesAfter, when set, asserts that it received a message after that time.
	ReceivesAfter *time.Duration `yaml:"receives_after,omitempty"`
}
