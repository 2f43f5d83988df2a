package config

import (
	"strconv"
	"time"

	"github.com/respire-go/respire/engine"
	"github.com/respire-go/respire/fsm"
)

// Defaults and bounds of the replica-read options (Replicas).
const (
	// MaxReplicaEndpoints bounds Replicas.Endpoints.
	MaxReplicaEndpoints = fsm.MaxReplicaCandidates
	// DefaultReplicaRefreshInterval is Replicas.RefreshInterval's default.
	DefaultReplicaRefreshInterval = time.Second
	// MaxReplicaRefreshInterval bounds Replicas.RefreshInterval.
	MaxReplicaRefreshInterval = fsm.RefreshIntervalMax
	// DefaultHedgeDelay is HedgedReads.Delay's default.
	DefaultHedgeDelay = 10 * time.Millisecond
	// DefaultHedgeMaximumExtraLoadPercent is HedgedReads.MaximumExtraLoadPercent's default.
	DefaultHedgeMaximumExtraLoadPercent = 5
)

var policyNames = [...]string{"Primary", "Replica", "PrimaryPreferred", "ReplicaPreferred", "Nearest", "AzAffinity",
	"AzAffinityReplicasAndPrimary"}

// PolicyName returns a read policy's name as users write it ("Primary", "ReplicaPreferred",
// ...); client.ReadFrom.String returns it.
func PolicyName(r fsm.ReadFrom) string {
	if int(r) < len(policyNames) {
		return policyNames[r]
	}
	return "ReadFrom(" + strconv.Itoa(int(r)) + ")"
}

// Replicas are the replica-read options, with the names and meaning of the client.Options
// fields they come from (ReadFrom, ReplicaEndpoints, ReplicaLatencyTolerance,
// ReplicaRefreshInterval, ClientAvailabilityZone, HedgedReads), plus what the validation needs
// to know of the rest of the options. A simulator scenario's client section fills the same
// fields, so both runtimes have the same defaults, bounds and errors.
type Replicas struct {
	// ReadFrom is the default read policy.
	ReadFrom fsm.ReadFrom
	// Endpoints are the standalone replicas (ReplicaEndpoints): at most MaxReplicaEndpoints,
	// each with a host and a port in 1-65535.
	Endpoints []engine.Endpoint
	// Primaries is the number of primary endpoints configured (client.Options.Endpoints):
	// Endpoints need exactly one.
	Primaries int
	// Sentinel says the Sentinels name the replicas (SentinelPrimaryName is set).
	Sentinel bool
	// Cluster says the client is a Cluster client (UseCluster).
	Cluster bool
	// LatencyTolerance is the width of the latency bands; nil: no bands. Not negative.
	LatencyTolerance *time.Duration
	// RefreshInterval is the validation period (0: DefaultReplicaRefreshInterval; at most
	// MaxReplicaRefreshInterval).
	RefreshInterval time.Duration
	// ClientAvailabilityZone is the client's zone, required by the zone-aware policies.
	ClientAvailabilityZone string
	// HedgedReads turns hedged reads on when not nil.
	HedgedReads *HedgedReads
}

// HedgedReads configures hedged reads, as client.HedgedReadOptions does.
type HedgedReads struct {
	// Delay: 0 means DefaultHedgeDelay; else between fsm.HedgeDelayMin and fsm.HedgeDelayMax.
	Delay time.Duration
	// MaximumExtraLoadPercent: 0 means DefaultHedgeMaximumExtraLoadPercent; else 1 to 100.
	MaximumExtraLoadPercent int
}

// HasSource reports whether the options name a source of replicas: Endpoints, the Sentinels,
// or a Cluster's slots.
func (r *Replicas) HasSource() bool { return len(r.Endpoints) > 0 || r.Sentinel || r.Cluster }

// ValidateReplicas checks r and returns a *FieldError naming the first bad option, or nil. It
// checks every bound before anything is sized from it.
func ValidateReplicas(r *Replicas) error {
	switch {
	case r.ReadFrom >= fsm.ReadPolicies:
		return fieldErr("ReadFrom", "is not a read policy")
	case len(r.Endpoints) > MaxReplicaEndpoints:
		return fieldErr("ReplicaEndpoints", "more than MaxReplicaEndpoints ("+strconv.Itoa(MaxReplicaEndpoints)+")")
	case len(r.Endpoints) > 0 && r.Cluster:
		return fieldErr("ReplicaEndpoints", "cannot be combined with UseCluster (a Cluster's replicas come from its slots)")
	case len(r.Endpoints) > 0 && r.Sentinel:
		return fieldErr("ReplicaEndpoints", "cannot be combined with SentinelPrimaryName (the Sentinels name the replicas)")
	case len(r.Endpoints) > 0 && r.Primaries != 1:
		return fieldErr("ReplicaEndpoints", "needs exactly one primary in Endpoints")
	case r.ReadFrom != fsm.ReadPrimary && !r.HasSource():
		return fieldErr("ReadFrom", PolicyName(r.ReadFrom)+" needs replicas: set ReplicaEndpoints, SentinelPrimaryName or UseCluster")
	case r.ReadFrom.ZoneAware() && r.ClientAvailabilityZone == "":
		return fieldErr("ClientAvailabilityZone", "must be set for "+PolicyName(r.ReadFrom))
	case r.LatencyTolerance != nil && *r.LatencyTolerance < 0:
		return fieldErr("ReplicaLatencyTolerance", "must not be negative")
	case r.RefreshInterval < 0 || r.RefreshInterval > MaxReplicaRefreshInterval:
		return fieldErr("ReplicaRefreshInterval", "must be in [0, "+MaxReplicaRefreshInterval.String()+"] (0: the default, 1s)")
	}
	if h := r.HedgedReads; h != nil {
		switch {
		case !r.HasSource():
			return fieldErr("HedgedReads", "needs replicas: ReplicaEndpoints, SentinelPrimaryName or UseCluster")
		case h.Delay != 0 && (h.Delay < fsm.HedgeDelayMin || h.Delay > fsm.HedgeDelayMax):
			return fieldErr("HedgedReads.Delay", "must be 0 (the default, 10ms) or in [1ms, 1m]")
		case h.MaximumExtraLoadPercent < 0 || h.MaximumExtraLoadPercent > 100:
			return fieldErr("HedgedReads.MaximumExtraLoadPercent", "must be 0 (the default, 5) or in [1, 100]")
		}
	}
	for i, ep := range r.Endpoints {
		if ep.Host == "" || ep.Port <= 0 || ep.Port > 65535 {
			return fieldErr("ReplicaEndpoints", "endpoint "+strconv.Itoa(i)+" needs a host and a port in 1-65535")
		}
	}
	return nil
}

// ResolveReplicas validates r (ValidateReplicas) and returns the read router's configuration
// with every default filled in, without its candidates: the caller sets Endpoints to the
// primary followed by the replicas (a Sentinel client, for each set the Sentinels report).
func ResolveReplicas(r *Replicas) (fsm.RouterConfig, error) {
	if err := ValidateReplicas(r); err != nil {
		return fsm.RouterConfig{}, err
	}
	cfg := fsm.RouterConfig{Default: r.ReadFrom, RefreshInterval: r.RefreshInterval, Zone: r.ClientAvailabilityZone}
	if cfg.RefreshInterval == 0 {
		cfg.RefreshInterval = DefaultReplicaRefreshInterval
	}
	if t := r.LatencyTolerance; t != nil {
		cfg.Banded, cfg.Tolerance = true, *t
	}
	if h := r.HedgedReads; h != nil {
		cfg.HedgeDelay, cfg.HedgeLoadPercent = h.Delay, h.MaximumExtraLoadPercent
		if cfg.HedgeDelay == 0 {
			cfg.HedgeDelay = DefaultHedgeDelay
		}
		if cfg.HedgeLoadPercent == 0 {
			cfg.HedgeLoadPercent = DefaultHedgeMaximumExtraLoadPercent
		}
	}
	return cfg, nil
}
