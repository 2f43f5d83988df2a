package client

import (
	"time"

	"github.com/respire-go/respire/engine"
	"github.com/respire-go/respire/fsm"
)

// ConnectionStateChange is one connection lifecycle observation, delivered in order to
// Options.OnConnectionStateChange. It describes one recovery source (a command slot, a dedicated
// rent, a pub/sub episode) and the aggregate health of its endpoint after the transition.
//
// Observations can lag the attempts they describe: use them for logs, alerts and metrics, not to
// gate retries.
type ConnectionStateChange struct {
	// Endpoint is the endpoint whose slot, rent or episode changed.
	Endpoint Endpoint
	// State is the endpoint's aggregate health after the transition: EndpointConnected when every
	// command slot has a ready connection. A dedicated rent or a pub/sub episode never changes it.
	State EndpointState
	// Source is the recovery path that changed: SourceCommand for a command slot,
	// SourceDedicated for a dedicated rent, SourcePubSub for pub/sub recovery.
	Source ReconnectSource
	// Scope narrows Source for the discovery paths (ScopeNone otherwise).
	Scope ReconnectScope
	// SourceState is the state of the source itself (the slot, rent or episode), before the
	// endpoint's aggregation.
	SourceState SourceState
	// Slot is the command slot, from 0 to Options.Connections-1, or -1 when the observation
	// concerns no slot (dedicated rents and pub/sub episodes).
	Slot int
	// Attempt is the one-based attempt under the ReconnectPolicy, or 0 when the transition
	// carries no policy metadata (no policy, or an initial connection).
	Attempt int
	// NextDelay is the actual delay scheduled before Attempt, meaningful when Scheduled. With
	// Recycle RecycleRetrying, it is the delay before the lifetime replacement is retried.
	NextDelay time.Duration
	// Scheduled reports that Attempt was scheduled after NextDelay.
	Scheduled bool
	// Exhausted reports that this slot, rent or episode reached the policy's MaxAttempts. An
	// exhausted command slot stays exhausted for the life of the client (see ReconnectPolicy).
	Exhausted bool
	// Episode is a process-local identifier grouping the observations of one dedicated rent or
	// one pub/sub recovery episode, or 0 for paths without episodes. Identifiers are unique per
	// Source.
	Episode uint64
	// Err is the connection error of a failure, or nil. Like every respire error it carries no
	// credentials, keys or values.
	Err error
	// Recycle marks an observation of lifetime recycling (Options.ConnectionMaxLifetime), or is
	// RecycleNone. A recycle never changes SourceState: the source stays connected throughout.
	Recycle RecycleState
}

// stateChangeOf converts the engine's observation. It copies a few words and allocates nothing;
// the enumerations have the machines' numbering (TestLifecycleEnumsMatch).
func stateChangeOf(ch engine.StateChange) ConnectionStateChange {
	l := &ch.Lifecycle
	return ConnectionStateChange{
		Endpoint:    endpointOf(ch.Endpoint),
		State:       EndpointState(l.State),
		Source:      ReconnectSource(l.Source),
		Scope:       ReconnectScope(l.Scope),
		SourceState: SourceState(l.SourceState),
		Slot:        l.Slot,
		Attempt:     l.Attempt,
		NextDelay:   l.NextDelay,
		Scheduled:   l.Scheduled,
		Exhausted:   l.Exhausted,
		Episode:     l.Episode,
		Err:         l.Err,
		Recycle:     RecycleState(l.Recycle),
	}
}

// lifecycle returns c in the machines' form, whose description traces and journals print.
func (c *ConnectionStateChange) lifecycle() fsm.Lifecycle {
	return fsm.Lifecycle{
		State:       fsm.EndpointState(c.State),
		Source:      fsm.Source(c.Source),
		Scope:       fsm.Scope(c.Scope),
		SourceState: fsm.SourceState(c.SourceState),
		Slot:        c.Slot,
		Attempt:     c.Attempt,
		NextDelay:   c.NextDelay,
		Scheduled:   c.Scheduled,
		Exhausted:   c.Exhausted,
		Episode:     c.Episode,
		Err:         c.Err,
		Recycle:     fsm.RecycleState(c.Recycle),
	}
}

// String describes the observation on one line, in the form of respire's traces, after its
// endpoint: "10.0.0.7:6379: lifecycle source=command state=connecting endpoint=disconnected
// slot=0 attempt=1 delay=100ms". Fields at their zero value are left out.
func (c ConnectionStateChange) String() string {
	l := c.lifecycle()
	b := append([]byte(c.Endpoint.String()), ": "...)
	return string(l.AppendTo(b))
}

// ReconnectSource says which recovery path an observation describes.
type ReconnectSource uint8

// Recovery paths.
const (
	// SourceUnspecified: a path other than those below.
	SourceUnspecified ReconnectSource = iota
	// SourceCommand: a command slot, one of the Options.Connections shared connections.
	SourceCommand
	// SourceDedicated: a dedicated rent (Dedicated, WithDedicated, Watch, blocking commands).
	SourceDedicated
	// SourcePubSub: pub/sub recovery (regular or sharded subscriptions).
	SourcePubSub
	// SourceClusterDiscovery: a Redis Cluster discovery round.
	SourceClusterDiscovery
)

// String returns the name used in logs and metric attributes: "command", "dedicated", "pubsub",
// "cluster-discovery" or "unspecified" (the machines' names: one table for both).
func (s ReconnectSource) String() string { return fsm.Source(s).String() }

// ReconnectScope narrows a recovery path: the respire.reconnect.scope metric attribute of the
// Cluster and Sentinel discovery paths. Command slots, dedicated rents and pub/sub have none.
type ReconnectScope uint8

// Scopes.
const (
	// ScopeNone: the path has no scope.
	ScopeNone ReconnectScope = iota
	// ScopeClusterDiscovery: a Cluster discovery round (topology and endpoint fallback).
	ScopeClusterDiscovery
	// ScopeSentinelDiscovery: a Sentinel resolution of the primary.
	ScopeSentinelDiscovery
	// ScopeSentinelMonitor: a Sentinel event monitor's connection.
	ScopeSentinelMonitor
)

// String returns "none", "cluster-discovery", "sentinel-discovery" or "sentinel-monitor".
func (s ReconnectScope) String() string { return fsm.Scope(s).String() }

// SourceState is the state of one recovery source (a slot, a rent or an episode) before the
// endpoint's aggregation.
type SourceState uint8

// Source states.
const (
	// SourceStateUnknown: the observation carries no source state.
	SourceStateUnknown SourceState = iota
	// SourceConnecting: an attempt is scheduled or in progress.
	SourceConnecting
	// SourceConnected: the source has a ready connection.
	SourceConnected
	// SourceDisconnected: the source lost its connection, or an attempt failed.
	SourceDisconnected
)

// String returns "unknown", "connecting", "connected" or "disconnected".
func (s SourceState) String() string { return fsm.SourceState(s).String() }

// EndpointState is the aggregate health of an endpoint.
type EndpointState uint8

// Endpoint states.
const (
	// EndpointDisconnected: at least one command slot of the endpoint has no ready connection.
	EndpointDisconnected EndpointState = iota
	// EndpointConnected: every command slot of the endpoint has a ready connection.
	EndpointConnected
)

// String returns "connected" or "disconnected".
func (s EndpointState) String() string { return fsm.EndpointState(s).String() }

// RecycleState says what a lifetime-recycling observation reports (see
// Options.ConnectionMaxLifetime).
type RecycleState uint8

// Recycle states.
const (
	// RecycleNone: the observation is not about lifetime recycling.
	RecycleNone RecycleState = iota
	// RecyclePublished: the aged connection's replacement now takes new commands; the aged
	// connection finishes the commands it accepted, then closes.
	RecyclePublished
	// RecycleRetrying: the replacement failed (Err); the aged connection stays in use and the
	// replacement is retried after NextDelay.
	RecycleRetrying
)

// String returns "none", "published" or "retrying".
func (r RecycleState) String() string { return fsm.RecycleState(r).String() }
