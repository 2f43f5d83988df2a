package fsm

import (
	"errors"
	"strconv"
	"time"
)

// The vocabulary of the two Sentinel machines: Resolution (sentinel_resolution.go) finds and
// validates the primary, and Monitor (sentinel_monitor.go) watches the Sentinels' events. See
// docs/sentinel.md for how a runtime wires them.

// Bounds and fixed times of the Sentinel machines.
const (
	// MaxSentinels bounds the configured Sentinels (ResolutionConfig.Sentinels and
	// MonitorConfig.Sentinels). Validate checks it before anything is allocated.
	MaxSentinels = 64
	// MaxLearnedSentinels bounds the peers a Resolution learns from SENTINEL SENTINELS replies,
	// over the life of the client. Peers beyond it are not learned.
	MaxLearnedSentinels = 64
	// MaxPrimaryNameLength bounds MonitorConfig.PrimaryName, in bytes.
	MaxPrimaryNameLength = 256
	// RediscoveryInterval is the least time between two rediscoveries the monitor asks for.
	RediscoveryInterval = 100 * time.Millisecond
	// RediscoveryFirstWait and RediscoveryMaxWait are the schedule on which a failed rediscovery
	// asked for by the monitor is retried when no reconnect policy is set: 1 s, doubling, at
	// most 30 s, without limit.
	RediscoveryFirstWait = time.Second
	RediscoveryMaxWait   = 30 * time.Second
	// MonitorDisposalGrace bounds how long disposal waits for the monitor's connections to end.
	MonitorDisposalGrace = 10 * time.Second
)

// MonitorChannels are the Sentinel channels a monitor subscribes to on every Sentinel.
var MonitorChannels = [...]string{"+switch-master", "+sdown", "+odown"}

// Errors a Resolution gives a candidate that failed for what it answered rather than for its
// connection. Match them with errors.Is.
var (
	// ErrStaleSentinel: the Sentinel reported a primary other than the validated one under an
	// older configuration epoch, a different one under the same epoch, or any other one while
	// flagged failover_in_progress (a failover's leader still names the primary it replaces).
	// Following it would roll the client back to a former primary.
	ErrStaleSentinel = errors.New("respire: sentinel reported a primary under an older configuration epoch")
	// ErrNotPrimary: the reported primary answered ROLE with another role (a replica, a
	// Sentinel).
	ErrNotPrimary = errors.New("respire: the reported primary does not have the primary role")
)

// SentinelQuery names a query the Sentinel resolution sends (Query effect, Answered event).
type SentinelQuery uint8

// Sentinel queries. The runtime adds the primary's name where the command takes it.
const (
	SentinelQueryNone SentinelQuery = iota
	// SentinelQueryPrimary is SENTINEL MASTER <name>: the primary's address and configuration
	// epoch.
	SentinelQueryPrimary
	// SentinelQueryPrimaryAddr is SENTINEL GET-MASTER-ADDR-BY-NAME <name>: the address only, the
	// fallback when SENTINEL MASTER is not permitted.
	SentinelQueryPrimaryAddr
	// SentinelQueryPeers is SENTINEL SENTINELS <name>: the other Sentinels.
	SentinelQueryPeers
	// SentinelQueryRole is ROLE, sent to the reported primary.
	SentinelQueryRole
)

var sentinelQueryNames = [...]string{"none", "sentinel-master", "sentinel-get-master-addr-by-name",
	"sentinel-sentinels", "role"}

// String returns the kebab-case name of the query ("sentinel-master", "role", ...).
func (q SentinelQuery) String() string {
	if int(q) < len(sentinelQueryNames) {
		return sentinelQueryNames[q]
	}
	return "sentinel-query(" + strconv.Itoa(int(q)) + ")"
}

// SentinelTrigger says why a rediscovery was asked for.
type SentinelTrigger uint8

// Rediscovery triggers.
const (
	TriggerNone SentinelTrigger = iota
	// TriggerSwitchPrimary: a Sentinel announced +switch-master for the primary.
	TriggerSwitchPrimary
	// TriggerSubjectivelyDown: a Sentinel announced +sdown for the primary.
	TriggerSubjectivelyDown
	// TriggerObjectivelyDown: a Sentinel announced +odown for the primary.
	TriggerObjectivelyDown
	// TriggerMonitorGap: a monitor subscribed again after a window in which it could have missed
	// events (a reconnect, a failed initial subscription).
	TriggerMonitorGap
)

var triggerNames = [...]string{"none", "switch-master", "sdown", "odown", "monitor-gap"}

// String returns the kebab-case name of the trigger.
func (t SentinelTrigger) String() string {
	if int(t) < len(triggerNames) {
		return triggerNames[t]
	}
	return "trigger(" + strconv.Itoa(int(t)) + ")"
}

// MessageKind is the kind of a Sentinel event message.
type MessageKind uint8

// Sentinel event messages, by channel.
const (
	MessageUnknown MessageKind = iota
	// MessageSwitchPrimary is +switch-master: the primary moved from Old to Addr.
	MessageSwitchPrimary
	// MessageSubjectivelyDown is +sdown: the Sentinel sees the instance down.
	MessageSubjectivelyDown
	// MessageSubjectivelyUp is -sdown: it no longer does.
	MessageSubjectivelyUp
	// MessageObjectivelyDown is +odown: the Sentinels agree the instance is down.
	MessageObjectivelyDown
	// MessageObjectivelyUp is -odown: they no longer do.
	MessageObjectivelyUp
)

var messageKindNames = [...]string{"unknown", "+switch-master", "+sdown", "-sdown", "+odown", "-odown"}

// String returns the message's channel ("+switch-master", "+sdown", ...).
func (k MessageKind) String() string {
	if int(k) < len(messageKindNames) {
		return messageKindNames[k]
	}
	return "message(" + strconv.Itoa(int(k)) + ")"
}

// InstanceKind is the kind of instance a Sentinel event is about.
type InstanceKind uint8

// Instance kinds, as Sentinel names them ("master", "slave", "sentinel").
const (
	InstanceUnknown InstanceKind = iota
	InstancePrimary
	InstanceReplica
	InstanceSentinel
)

var instanceKindNames = [...]string{"unknown", "primary", "replica", "sentinel"}

// String returns "primary", "replica", "sentinel" or "unknown".
func (k InstanceKind) String() string {
	if int(k) < len(instanceKindNames) {
		return instanceKindNames[k]
	}
	return "instance(" + strconv.Itoa(int(k)) + ")"
}

// SentinelMessage is a parsed Sentinel event message (netio/wire parses them).
type SentinelMessage struct {
	// Kind is the message's channel.
	Kind MessageKind
	// Instance is the kind of instance the message is about; InstancePrimary for
	// +switch-master.
	Instance InstanceKind
	// Primary is the name of the monitored primary the message concerns.
	Primary string
	// Addr is the instance's address; for +switch-master, the new primary's.
	Addr Endpoint
	// Old is the former primary's address (+switch-master only).
	Old Endpoint
}

// AppendTo appends a deterministic description of m to dst.
func (m *SentinelMessage) AppendTo(dst []byte) []byte {
	dst = append(dst, m.Kind.String()...)
	dst = append(dst, ' ')
	dst = append(dst, m.Instance.String()...)
	dst = append(dst, ' ')
	dst = appendQuote(dst, m.Primary)
	if !m.Old.IsZero() {
		dst = append(dst, ' ')
		dst = m.Old.AppendTo(dst)
		dst = append(dst, "->"...)
	} else {
		dst = append(dst, ' ')
	}
	return m.Addr.AppendTo(dst)
}

// Warning names a condition a runtime logs at warning level (Warn effect).
type Warning uint8

// Warnings.
const (
	WarningNone Warning = iota
	// WarningNoConfigEpoch: SENTINEL MASTER is not permitted, so the configuration epoch cannot
	// be read; the resolution falls back to ROLE checks and cannot reliably order repeated
	// failovers. Given once per client.
	WarningNoConfigEpoch
	// WarningMonitorExhausted: a monitor exhausted its reconnect budget and stopped watching
	// its Sentinel until the next validated primary.
	WarningMonitorExhausted
	// WarningMonitorDisposal: disposal stopped waiting for the monitor's connections after
	// MonitorDisposalGrace.
	WarningMonitorDisposal
)

var warningNames = [...]string{"none", "no-config-epoch", "monitor-exhausted", "monitor-disposal-timeout"}

// String returns the kebab-case name of the warning.
func (w Warning) String() string {
	if int(w) < len(warningNames) {
		return warningNames[w]
	}
	return "warning(" + strconv.Itoa(int(w)) + ")"
}

// SentinelData is the Sentinel payload of an event or effect; each field says which kinds use
// it. Machines keep and share the payloads they are given and give: neither a machine nor a
// runtime may modify one after the step.
type SentinelData struct {
	// Query is the query of a Query effect and of the Answered event that answers it.
	Query SentinelQuery
	// Primary is the primary a Sentinel reported (Answered to SentinelQueryPrimary or
	// SentinelQueryPrimaryAddr) or the validated one (Published; Publish has it in Endpoint).
	Primary Endpoint
	// Epoch is the primary's configuration epoch, meaningful when EpochKnown (Answered to
	// SentinelQueryPrimary, Publish, Published).
	Epoch      uint64
	EpochKnown bool
	// InFailover marks an Answered event to SentinelQueryPrimary from a Sentinel that reports
	// its own failover of the primary as still in progress (flag failover_in_progress). Such a
	// Sentinel already gives the new configuration epoch once it promoted a replica, but still
	// the old primary's address until its replicas are reconfigured: the pair is out of step,
	// so the epoch does not vouch for the address.
	InFailover bool
	// Role is the role a ROLE answer reports (RoleUnknown for a Sentinel's ROLE).
	Role Role
	// Denied marks an Answered event whose query was refused for want of permission (NOPERM).
	Denied bool
	// Peers are the Sentinels a SENTINEL SENTINELS answer lists; for Publish and Published,
	// every Sentinel the client knows: the configured ones, then the learned ones.
	Peers []Endpoint
	// Generation is the primary's generation (Publish, Published, Retire, PrimaryFailed).
	Generation uint64
	// Changed marks a Publish of a primary other than the previous one: a failover.
	Changed bool
	// Message is the event of Notified.
	Message SentinelMessage
	// Trigger is why a rediscovery is asked for (Rediscover, RediscoveryRequested).
	Trigger SentinelTrigger
	// Warning is the warning of Warn.
	Warning Warning
}

// appendEvent appends the fields of d that events of kind k carry.
func (d *SentinelData) appendEvent(dst []byte, k EventKind) []byte {
	if d == nil {
		return dst
	}
	switch k {
	case Answered:
		dst = append(dst, " query="...)
		dst = append(dst, d.Query.String()...)
		switch d.Query {
		case SentinelQueryPrimary, SentinelQueryPrimaryAddr:
			dst = appendAddr(dst, d.Primary)
			dst = d.appendEpoch(dst)
			if d.InFailover {
				dst = append(dst, " in-failover"...)
			}
		case SentinelQueryPeers:
			dst = appendPeers(dst, d.Peers)
		case SentinelQueryRole:
			if d.Role != RoleUnknown {
				dst = append(dst, " role="...)
				dst = append(dst, d.Role.String()...)
			}
		}
		if d.Denied {
			dst = append(dst, " denied"...)
		}
	case Notified:
		dst = append(dst, ' ')
		dst = d.Message.AppendTo(dst)
	case Published:
		dst = appendUint(dst, " generation=", d.Generation)
		dst = appendAddr(dst, d.Primary)
		dst = d.appendEpoch(dst)
		dst = appendPeers(dst, d.Peers)
	case PrimaryFailed:
		dst = appendUint(dst, " generation=", d.Generation)
	case RediscoveryRequested:
		dst = append(dst, " trigger="...)
		dst = append(dst, d.Trigger.String()...)
	}
	return dst
}

// appendEffect appends the fields of d that effects of kind k carry.
func (d *SentinelData) appendEffect(dst []byte, k EffectKind) []byte {
	if d == nil {
		return dst
	}
	switch k {
	case Query:
		dst = append(dst, " query="...)
		dst = append(dst, d.Query.String()...)
	case Publish:
		dst = appendUint(dst, " generation=", d.Generation)
		dst = d.appendEpoch(dst)
		if d.Changed {
			dst = append(dst, " changed"...)
		}
		dst = appendPeers(dst, d.Peers)
	case Retire:
		dst = appendUint(dst, " generation=", d.Generation)
	case Rediscover:
		dst = append(dst, " trigger="...)
		dst = append(dst, d.Trigger.String()...)
	case Warn:
		dst = append(dst, " warning="...)
		dst = append(dst, d.Warning.String()...)
	}
	return dst
}

func (d *SentinelData) appendEpoch(dst []byte) []byte {
	if !d.EpochKnown {
		return dst
	}
	return appendUint(dst, " epoch=", d.Epoch)
}

// appendPeers appends " sentinels=a,b,c", or nothing for none.
func appendPeers(dst []byte, peers []Endpoint) []byte {
	for i, p := range peers {
		if i == 0 {
			dst = append(dst, " sentinels="...)
		} else {
			dst = append(dst, ',')
		}
		dst = p.AppendTo(dst)
	}
	return dst
}

// Shared payloads of the effects that carry nothing but their kind's one field: effects point to
// them instead of allocating.
var (
	queryData   = [...]SentinelData{{Query: SentinelQueryNone}, {Query: SentinelQueryPrimary}, {Query: SentinelQueryPrimaryAddr}, {Query: SentinelQueryPeers}, {Query: SentinelQueryRole}}
	triggerData = [...]SentinelData{{Trigger: TriggerNone}, {Trigger: TriggerSwitchPrimary}, {Trigger: TriggerSubjectivelyDown}, {Trigger: TriggerObjectivelyDown}, {Trigger: TriggerMonitorGap}}
	warningData = [...]SentinelData{{Warning: WarningNone}, {Warning: WarningNoConfigEpoch}, {Warning: WarningMonitorExhausted}, {Warning: WarningMonitorDisposal}}
)

// pushQuery appends a Query effect for q on conn.
func pushQuery(out *Outbox, conn ConnID, q SentinelQuery) {
	f := out.push(Query)
	f.Conn, f.Slot, f.Sentinel = conn, -1, &queryData[q]
}

// pushWarn appends a Warn effect for w about ep.
func pushWarn(out *Outbox, w Warning, ep Endpoint) {
	f := out.push(Warn)
	f.Slot, f.Endpoint, f.Sentinel = -1, ep, &warningData[w]
}

// tagEndpoint sets ep as the endpoint of the Dial, Record and Emit effects appended from index
// from on: the attempt sub-machine appends them without one, and the Sentinel machines' attempts
// concern a Sentinel or a primary rather than the machine's own endpoint.
func tagEndpoint(out *Outbox, from int, ep Endpoint) {
	for i := from; i < len(out.Effects); i++ {
		switch f := &out.Effects[i]; f.Kind {
		case Dial, Record, Emit:
			f.Endpoint = ep
		}
	}
}

// validSentinels reports what is wrong with a configured Sentinel list, or "".
func validSentinels(eps []Endpoint) string {
	switch {
	case len(eps) == 0:
		return "must list at least one Sentinel"
	case len(eps) > MaxSentinels:
		return "must list at most " + strconv.Itoa(MaxSentinels) + " Sentinels"
	}
	for i, e := range eps {
		if !e.Dialable() || e.Port > 65535 || e.Host != CanonicalHost(e.Host) {
			return "entry " + strconv.Itoa(i) + " is not a canonical host and port (see MakeEndpoint)"
		}
		for _, o := range eps[:i] {
			if o == e {
				return "entry " + strconv.Itoa(i) + " repeats an earlier one"
			}
		}
	}
	return ""
}
