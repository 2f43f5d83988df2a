package fsm

import (
	"strconv"
	"time"
)

// This file holds the vocabulary of the read router (replica_router.go): the read policies,
// the router's configuration, and its own events and effects. The router is a machine of its
// own, outside the connection machines' Event and Effect lists: it decides where a read goes,
// when a candidate is probed or validated and when a read is hedged, and it opens no
// connection. Its runtime (engine's ReplicaRouter) steps it under one lock and journals its
// events, so a journal replays its decisions exactly.

// ReadFrom is a read policy: where a read-only command may run.
type ReadFrom uint8

// Read policies. The numbering is the client's (client.ReadFrom).
const (
	// ReadPrimary: always the primary (the default).
	ReadPrimary ReadFrom = iota
	// ReadReplica: a validated replica; the read fails when none is available.
	ReadReplica
	// ReadPrimaryPreferred: the primary; a replica when the primary cannot be used.
	ReadPrimaryPreferred
	// ReadReplicaPreferred: a replica; the primary when no replica can be used.
	ReadReplicaPreferred
	// ReadNearest: the lowest measured latency among the primary and the replicas, linked
	// replicas before unlinked ones.
	ReadNearest
	// ReadAzAffinity: same-zone replicas, then other replicas, then the primary.
	ReadAzAffinity
	// ReadAzAffinityReplicasAndPrimary: same-zone replicas, the same-zone primary, other
	// replicas, then the primary.
	ReadAzAffinityReplicasAndPrimary
	// ReadPolicies is the number of read policies.
	ReadPolicies
)

var readFromNames = [...]string{"primary", "replica", "primary-preferred", "replica-preferred", "nearest",
	"az-affinity", "az-affinity-replicas-and-primary"}

// String returns the kebab-case name of the policy.
func (r ReadFrom) String() string {
	if int(r) < len(readFromNames) {
		return readFromNames[r]
	}
	return "read-from(" + strconv.Itoa(int(r)) + ")"
}

// ZoneAware reports whether the policy ranks candidates by availability zone.
func (r ReadFrom) ZoneAware() bool {
	return r == ReadAzAffinity || r == ReadAzAffinityReplicasAndPrimary
}

// Link is a replica's replication link as its ROLE reply reports it.
type Link uint8

// Replication link states, best first.
const (
	// LinkConnected: the replica is in sync with its primary ("connected").
	LinkConnected Link = iota
	// LinkSyncing: the replica is receiving a full synchronisation ("sync").
	LinkSyncing
	// LinkDown: the replica has no link ("connect", "connecting", "handshake", anything else).
	LinkDown
)

var linkNames = [...]string{"connected", "syncing", "down"}

// String returns "connected", "syncing" or "down".
func (l Link) String() string {
	if int(l) < len(linkNames) {
		return linkNames[l]
	}
	return "link(" + strconv.Itoa(int(l)) + ")"
}

// ParseLink maps the state field of a replica's ROLE reply to a Link.
func ParseLink(state string) Link {
	switch state {
	case "connected":
		return LinkConnected
	case "sync":
		return LinkSyncing
	}
	return LinkDown
}

// Bounds and fixed numbers of the read router (the spec's).
const (
	// MaxReplicaCandidates bounds the replicas one router chooses among.
	MaxReplicaCandidates = 64
	// ProbesInFlightMax is the most PING probes a router has outstanding at once.
	ProbesInFlightMax = 4
	// ProbeSpacing is the least time between two probes of one candidate.
	ProbeSpacing = time.Second
	// ProbeDeadline is how long a probe may stay unanswered before it counts as failed, and how
	// long a read waits for a candidate whose probe is pending.
	ProbeDeadline = time.Second
	// EstimateFresh is how long a latency estimate stays usable.
	EstimateFresh = 10 * time.Second
	// RefreshBackoffMax caps the backoff between failed validations of a candidate.
	RefreshBackoffMax = 30 * time.Second
	// PrimaryCooldown is how long the primary is skipped after its connection failed.
	PrimaryCooldown = time.Second
	// ReadsWaitingMax bounds the reads parked while every candidate's probe is pending.
	ReadsWaitingMax = 1024
	// ReadsHedgedMax bounds the reads a router watches for a hedge at once; a read beyond it is
	// routed but never hedged.
	ReadsHedgedMax = 1024
	// RefreshIntervalMax bounds RouterConfig.RefreshInterval.
	RefreshIntervalMax = time.Hour
	// HedgeDelayMin and HedgeDelayMax bound RouterConfig.HedgeDelay when hedging is on.
	HedgeDelayMin = time.Millisecond
	// HedgeDelayMax is the longest hedge delay.
	HedgeDelayMax = time.Minute
	// hedgeCost is the budget a hedge spends, in percent of one read: a hedge is a whole read.
	hedgeCost = 100
)

// RouterConfig configures a read router.
type RouterConfig struct {
	// Endpoints are the candidates: the primary first, then each replica (at least one, at most
	// MaxReplicaCandidates). They only label the router's descriptions; effects name candidates
	// by their index.
	Endpoints []Endpoint
	// Default is the policy of reads that name none.
	Default ReadFrom
	// Banded turns latency tolerance bands on: within the best tier, reads rotate among the
	// candidates whose estimate is at most the fastest plus Tolerance (inclusive). Off, reads
	// rotate among the whole tier, and Nearest keeps only the fastest (and its ties).
	Banded bool
	// Tolerance is the width of a band (0: the fastest ties only). Never negative.
	Tolerance time.Duration
	// RefreshInterval is how often each candidate is validated (ROLE), how long a failing
	// replica is skipped, and half the bound on a validation's age (staleness). In (0,
	// RefreshIntervalMax].
	RefreshInterval time.Duration
	// Zone is the client's availability zone for the zone-aware policies ("" for none: every
	// candidate is then in the other tier).
	Zone string
	// HedgeDelay turns hedging on when positive: a hedgeable read not answered HedgeDelay after
	// it was routed is sent to a second candidate, budget permitting. In [HedgeDelayMin,
	// HedgeDelayMax] when set.
	HedgeDelay time.Duration
	// HedgeLoadPercent is the hedge budget: each hedgeable read earns this percent of a hedge,
	// at most one hedge is stored. In [1, 100] when hedging is on.
	HedgeLoadPercent int
}

// Validate checks the configuration, with a *ConfigError naming the first bad field.
func (c *RouterConfig) Validate() error {
	bad := func(field, reason string) error {
		return &ConfigError{Config: "RouterConfig", Field: field, Reason: reason}
	}
	switch {
	case len(c.Endpoints) < 2:
		return bad("Endpoints", "needs the primary and at least one replica")
	case len(c.Endpoints) > MaxReplicaCandidates+1:
		return bad("Endpoints", "has more than "+strconv.Itoa(MaxReplicaCandidates)+" replicas")
	case c.Default >= ReadPolicies:
		return bad("Default", "is not a read policy")
	case c.Tolerance < 0:
		return bad("Tolerance", "must not be negative")
	case c.RefreshInterval <= 0 || c.RefreshInterval > RefreshIntervalMax:
		return bad("RefreshInterval", "must be in (0, "+RefreshIntervalMax.String()+"]")
	case c.HedgeDelay < 0 || (c.HedgeDelay > 0 && (c.HedgeDelay < HedgeDelayMin || c.HedgeDelay > HedgeDelayMax)):
		return bad("HedgeDelay", "must be zero (off) or in ["+HedgeDelayMin.String()+", "+HedgeDelayMax.String()+"]")
	case c.HedgeDelay > 0 && (c.HedgeLoadPercent < 1 || c.HedgeLoadPercent > 100):
		return bad("HedgeLoadPercent", "must be in [1, 100]")
	}
	return nil
}

// ReadID names one read for the router; the runtime allocates them.
type ReadID uint64

// RouterEventKind says what happened to a router. Events are past-tense facts.
type RouterEventKind uint8

// Router event kinds.
const (
	// Woke: time passed (the timer the last WakeAt effect armed, or the runtime's start).
	Woke RouterEventKind = iota + 1
	// ReadStarted: Read needs a candidate under Policy; Hedgeable says whether it may be hedged.
	ReadStarted
	// ReadWithdrawn: the caller of Read stopped waiting (cancellation, deadline).
	ReadWithdrawn
	// ReadEnded: the attempt of a hedge-watched Read on Target ended; OK says it succeeded.
	ReadEnded
	// TargetFailed: a connection of Target failed or could not be acquired.
	TargetFailed
	// ProbeAnswered: the PING probe of Target was answered in RTT.
	ProbeAnswered
	// ProbeFailed: the PING probe of Target failed (an error, an ACL denial, no reply).
	ProbeFailed
	// RoleAnswered: the validation of Target answered: Replica (its ROLE), Link and ServeStale
	// for a replica, and Zone when ZoneKnown.
	RoleAnswered
	// RoleFailed: the validation of Target failed.
	RoleFailed
)

var routerEventNames = [...]string{"none", "woke", "read-started", "read-withdrawn", "read-ended",
	"target-failed", "probe-answered", "probe-failed", "role-answered", "role-failed"}

// String returns the kebab-case name of the kind.
func (k RouterEventKind) String() string {
	if int(k) < len(routerEventNames) {
		return routerEventNames[k]
	}
	return "router-event(" + strconv.Itoa(int(k)) + ")"
}

// RouterEvent is one input to a read router: a flat value, so a journal is a plain slice.
type RouterEvent struct {
	// Kind says what happened.
	Kind RouterEventKind
	// At is the runtime's time, as an offset from its origin.
	At time.Duration
	// Read is the read of ReadStarted, ReadWithdrawn and ReadEnded.
	Read ReadID
	// Policy is the policy of ReadStarted.
	Policy ReadFrom
	// Hedgeable says whether a started read is eligible for a hedge.
	Hedgeable bool
	// Target is the candidate (0 the primary, i the i-th replica) the event concerns.
	Target int
	// OK says whether a ReadEnded attempt succeeded.
	OK bool
	// RTT is the measured round trip of ProbeAnswered.
	RTT time.Duration
	// Replica says whether a RoleAnswered candidate reported ROLE replica.
	Replica bool
	// Link is a replica's replication link (RoleAnswered).
	Link Link
	// ServeStale says whether an unlinked replica serves reads (replica-serve-stale-data).
	ServeStale bool
	// Zone is the candidate's availability zone when ZoneKnown (RoleAnswered).
	Zone string
	// ZoneKnown says whether the candidate reported a zone.
	ZoneKnown bool
}

// AppendTo appends a deterministic, single-line description of e to dst.
func (e *RouterEvent) AppendTo(dst []byte) []byte {
	dst = appendClock(dst, e.At)
	dst = append(dst, ' ')
	dst = append(dst, e.Kind.String()...)
	switch e.Kind {
	case ReadStarted:
		dst = appendUint(dst, " read=", uint64(e.Read))
		dst = append(dst, " policy="...)
		dst = append(dst, e.Policy.String()...)
		if e.Hedgeable {
			dst = append(dst, " hedgeable"...)
		}
	case ReadWithdrawn:
		dst = appendUint(dst, " read=", uint64(e.Read))
	case ReadEnded:
		dst = appendUint(dst, " read=", uint64(e.Read))
		dst = appendUint(dst, " target=", uint64(e.Target))
		if e.OK {
			dst = append(dst, " ok"...)
		} else {
			dst = append(dst, " failed"...)
		}
	case TargetFailed, ProbeFailed, RoleFailed:
		dst = appendUint(dst, " target=", uint64(e.Target))
	case ProbeAnswered:
		dst = appendUint(dst, " target=", uint64(e.Target))
		dst = append(dst, " rtt="...)
		dst = appendDuration(dst, e.RTT)
	case RoleAnswered:
		dst = appendUint(dst, " target=", uint64(e.Target))
		if e.Replica {
			dst = append(dst, " role=replica link="...)
			dst = append(dst, e.Link.String()...)
			if e.ServeStale {
				dst = append(dst, " serve-stale"...)
			}
		} else {
			dst = append(dst, " role=primary"...)
		}
		if e.ZoneKnown {
			dst = append(dst, " zone="...)
			dst = appendQuote(dst, e.Zone)
		}
	}
	return dst
}

// String returns the description of AppendTo.
func (e *RouterEvent) String() string { return string(e.AppendTo(nil)) }

// RouterEffectKind says what a router asks its runtime to do. Effects are imperatives.
type RouterEffectKind uint8

// Router effect kinds.
const (
	// RouteRead: send Read to Target. Watched says the router watches it for a hedge: the runtime
	// reports each of its attempts (ReadEnded) and completes the caller on SettleRead.
	RouteRead RouterEffectKind = iota + 1
	// FailRead: no candidate can take Read; Reason says why. Nothing was sent.
	FailRead
	// SendHedge: send a copy of Read to Target as well.
	SendHedge
	// SettleRead: Read is decided: the attempt on Target completes the caller (OK: its success;
	// otherwise its failure, the original attempt's).
	SettleRead
	// SendProbe: send a PING to Target and report its round trip.
	SendProbe
	// ValidateTarget: ask Target its ROLE (and availability zone) and report it.
	ValidateTarget
	// WakeAt: step a Woke event at At (replacing the previous WakeAt).
	WakeAt
	// CountMetric: record Value for the metric Name (a count for the counters, the current
	// figure for MetricHedgeExtraLoad).
	CountMetric
)

var routerEffectNames = [...]string{"none", "route", "fail-read", "hedge", "settle", "probe", "validate",
	"wake", "count"}

// String returns the kebab-case name of the kind.
func (k RouterEffectKind) String() string {
	if int(k) < len(routerEffectNames) {
		return routerEffectNames[k]
	}
	return "router-effect(" + strconv.Itoa(int(k)) + ")"
}

// FailReason says why a read found no candidate.
type FailReason uint8

// Reasons a read fails before anything is sent.
const (
	// NoCandidate: no candidate the policy allows is usable (for ReadReplica: no validated
	// replica).
	NoCandidate FailReason = iota + 1
	// ProbesPending: every usable candidate had a probe pending for ProbeDeadline.
	ProbesPending
	// TooManyWaiting: ReadsWaitingMax reads already wait for a probe.
	TooManyWaiting
)

var failReasonNames = [...]string{"none", "no-candidate", "probes-pending", "too-many-waiting"}

// String returns the kebab-case name of the reason.
func (r FailReason) String() string {
	if int(r) < len(failReasonNames) {
		return failReasonNames[r]
	}
	return "fail-reason(" + strconv.Itoa(int(r)) + ")"
}

// Names of the router's metrics (CountMetric effects).
const (
	// MetricHedgeSent counts hedges sent.
	MetricHedgeSent = "respire.read.hedge.sent"
	// MetricHedgeWon counts hedges whose answer completed the read.
	MetricHedgeWon = "respire.read.hedge.won"
	// MetricHedgeExtraLoad is the extra load hedging has added so far, in percent of the
	// hedge-eligible reads (hedges sent * 100 / eligible reads), recorded with each hedge.
	MetricHedgeExtraLoad = "respire.read.hedge.extra_load"
)

// RouterEffect is one thing a router asks its runtime to do.
type RouterEffect struct {
	// Kind says what to do.
	Kind RouterEffectKind
	// Read is the read of RouteRead, FailRead, SendHedge and SettleRead.
	Read ReadID
	// Target is the candidate of RouteRead, SendHedge, SettleRead, SendProbe and ValidateTarget.
	Target int
	// Watched marks a RouteRead the router watches for a hedge.
	Watched bool
	// OK says whether a SettleRead completes with a success.
	OK bool
	// Reason says why a FailRead failed.
	Reason FailReason
	// At is the time of a WakeAt.
	At time.Duration
	// Name and Value are a CountMetric's metric and value.
	Name  string
	Value int64
}

// AppendTo appends a deterministic, single-line description of e to dst.
func (e *RouterEffect) AppendTo(dst []byte) []byte {
	dst = append(dst, e.Kind.String()...)
	switch e.Kind {
	case RouteRead:
		dst = appendUint(dst, " read=", uint64(e.Read))
		dst = appendUint(dst, " target=", uint64(e.Target))
		if e.Watched {
			dst = append(dst, " watched"...)
		}
	case FailRead:
		dst = appendUint(dst, " read=", uint64(e.Read))
		dst = append(dst, " reason="...)
		dst = append(dst, e.Reason.String()...)
	case SendHedge:
		dst = appendUint(dst, " read=", uint64(e.Read))
		dst = appendUint(dst, " target=", uint64(e.Target))
	case SettleRead:
		dst = appendUint(dst, " read=", uint64(e.Read))
		dst = appendUint(dst, " target=", uint64(e.Target))
		if e.OK {
			dst = append(dst, " ok"...)
		} else {
			dst = append(dst, " failed"...)
		}
	case SendProbe, ValidateTarget:
		dst = appendUint(dst, " target=", uint64(e.Target))
	case WakeAt:
		dst = append(dst, ' ')
		dst = appendClock(dst, e.At)
	case CountMetric:
		dst = append(dst, ' ')
		dst = append(dst, e.Name...)
		dst = append(dst, " value="...)
		dst = strconv.AppendInt(dst, e.Value, 10)
	}
	return dst
}

// String returns the description of AppendTo.
func (e *RouterEffect) String() string { return string(e.AppendTo(nil)) }

// RouterOutbox collects a router step's effects. Reset it between steps to reuse its storage.
type RouterOutbox struct {
	Effects []RouterEffect
}

// Reset empties the outbox, keeping its storage.
func (o *RouterOutbox) Reset() { o.Effects = o.Effects[:0] }

func (o *RouterOutbox) add(e RouterEffect) { o.Effects = append(o.Effects, e) }
