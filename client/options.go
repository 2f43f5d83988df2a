package client

import (
	"context"
	"crypto/tls"
	"log/slog"
	"net"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/cockroachdb/errors"

	"github.com/respire-go/respire/engine/config"
	"github.com/respire-go/respire/netio"
)

// Defaults of Options fields left at their zero value. The defaults and bounds shared with the
// simulator's scenarios are defined once, in package engine/config.
const (
	// DefaultConnectTimeout bounds each TCP/TLS connection attempt.
	DefaultConnectTimeout = config.DefaultConnectTimeout
	// DefaultCommandTimeout is the reply budget of a command.
	DefaultCommandTimeout = config.DefaultCommandTimeout
	// DefaultLibraryName is sent with CLIENT SETINFO LIB-NAME.
	DefaultLibraryName = config.DefaultLibraryName
	// MaxConnections bounds Options.Connections.
	MaxConnections = config.MaxConnections
	// DefaultClusterTopologyRefreshInterval is the period of the Cluster topology refresh.
	DefaultClusterTopologyRefreshInterval = 60 * time.Second
	// DefaultMaintenanceRelaxedTimeout is the minimum command timeout during a maintenance window.
	DefaultMaintenanceRelaxedTimeout = 30 * time.Second
	// DefaultMaintenanceWindowTimeout is the longest a maintenance window relaxes timeouts.
	DefaultMaintenanceWindowTimeout = 60 * time.Second
	// MaxMaintenanceTimeout bounds MaintenanceRelaxedTimeout and MaintenanceWindowTimeout.
	MaxMaintenanceTimeout = 24 * time.Hour
)

// Default ports used by the connection-string parsers when an endpoint names none.
const (
	// DefaultPort is Redis's port.
	DefaultPort = 6379
	// DefaultTLSPort is the port assumed by StackExchange.Redis strings that enable TLS.
	DefaultTLSPort = 6380
	// DefaultSentinelPort is Sentinel's port.
	DefaultSentinelPort = 26379
)

// NoTimeout disables the duration option it is assigned to (CommandTimeout,
// ConnectionIdleReadTimeout, GatheredWriteStallTimeout, ClusterTopologyRefreshInterval; see each
// field for what it disables).
const NoTimeout time.Duration = config.NoTimeout

// SentinelTLSMode says whether connections to Sentinels use TLS.
type SentinelTLSMode uint8

// Sentinel TLS modes.
const (
	// SentinelTLSInherit (the zero value): Sentinels use TLS exactly when the data connections do.
	SentinelTLSInherit SentinelTLSMode = iota
	// SentinelTLSEnabled: Sentinels use TLS even when the data connections do not.
	SentinelTLSEnabled
	// SentinelTLSDisabled: Sentinels use plaintext even when the data connections use TLS.
	SentinelTLSDisabled
)

// String returns "inherit", "enabled" or "disabled".
func (m SentinelTLSMode) String() string {
	switch m {
	case SentinelTLSInherit:
		return "inherit"
	case SentinelTLSEnabled:
		return "enabled"
	case SentinelTLSDisabled:
		return "disabled"
	}
	return "sentinel-tls(" + strconv.Itoa(int(m)) + ")"
}

// MaintenanceMode selects how a connection opts in to server maintenance notifications.
type MaintenanceMode uint8

// Maintenance notification modes.
const (
	// MaintenanceDisabled (the zero value): no maintenance handshake.
	MaintenanceDisabled MaintenanceMode = iota
	// MaintenanceAuto: send CLIENT MAINT_NOTIFICATIONS ON on RESP3 connections; an unknown-command
	// error turns the feature off for that connection, any other error fails its setup.
	MaintenanceAuto
	// MaintenanceEnabled: require RESP3 and the server's acknowledgement.
	MaintenanceEnabled
)

// String returns "disabled", "auto" or "enabled".
func (m MaintenanceMode) String() string {
	switch m {
	case MaintenanceDisabled:
		return "disabled"
	case MaintenanceAuto:
		return "auto"
	case MaintenanceEnabled:
		return "enabled"
	}
	return "maintenance(" + strconv.Itoa(int(m)) + ")"
}

// Options configures a Client. The zero value of every field means the documented default;
// Validate (called by Connect and Create before any I/O) rejects bad values with a
// *ConfigError naming the option.
type Options struct {
	// Endpoints lists the Redis endpoints. A standalone client takes exactly one.
	Endpoints []Endpoint
	// Username and Password authenticate every connection. They never appear in errors or logs.
	Username, Password string
	// Credentials, when set, supplies the credentials of every new connection and renews them on
	// live ones (see CredentialProvider, CredentialNotifier and Client.RenewCredentials), for
	// passwords or tokens that change. It cannot be combined with Username and Password.
	Credentials CredentialProvider
	// Database is the logical database selected on every connection (default 0).
	Database int
	// ClientName is set with CLIENT SETNAME on every connection when not empty.
	ClientName string
	// ConnectTimeout bounds each TCP/TLS connection attempt (default 10 s). An expired attempt
	// fails with a *TimeoutError of stage StageConnecting.
	ConnectTimeout time.Duration
	// CommandTimeout is the reply budget of each command and of the Redis handshake (default
	// 10 s). NoTimeout disables it; blocking commands use their own wait.
	CommandTimeout time.Duration
	// Connections is the number of multiplexed connections (default 1, at most MaxConnections).
	// Raise it only when profiling shows one socket is saturated.
	Connections int
	// DedicatedPool bounds the exclusive connections rented by Dedicated, WithDedicated,
	// blocking commands and transactions (default: no total limit, four idle, no timed
	// retirement). See DedicatedPoolOptions.
	DedicatedPool DedicatedPoolOptions
	// LibraryName is sent with CLIENT SETINFO LIB-NAME (default "respire"): nonempty ASCII from
	// '!' through '~'. Server errors on it never fail the handshake.
	LibraryName string
	// DisableLibraryInfo omits CLIENT SETINFO entirely, for proxies that reject it.
	DisableLibraryInfo bool
	// Protocol is the RESP version to negotiate (default ProtocolAuto).
	Protocol Protocol
	// AllowAdmin permits high-risk commands (FLUSHDB, FLUSHALL, CONFIG SET, ...; see
	// AdminCommands). Without it they fail with ErrAdminDisabled before anything is sent.
	AllowAdmin bool
	// ReconnectPolicy bounds and delays connection replacement; nil (the default) replaces failed
	// connections immediately on demand, with no limit, spacing a slot's failed attempts by
	// 250 ms doubling up to 5 s. See ReconnectPolicy.
	ReconnectPolicy *ReconnectPolicy
	// Dialer, when set, opens every physical connection instead of the built-in TCP and Unix
	// dialing (the spec's connection factory). Its context combines the attempt's cancellation
	// with ConnectTimeout; a connection returned after that context ended is closed.
	Dialer func(ctx context.Context, endpoint Endpoint) (net.Conn, error)
	// TLS, when set, secures every connection. respire never modifies it: it connects with a
	// copy to which TLSServerName, TLSMinVersion, TLSMaxVersion and CheckCertificateRevocation
	// are applied. Without ServerName (here or in TLSServerName) the endpoint's host is verified.
	// The parsers set it to an empty configuration (system roots) for rediss:// and ssl=true.
	TLS *tls.Config
	// TLSServerName, when set, is the name sent with SNI and verified in the server's
	// certificate, overriding TLS.ServerName; otherwise TLS.ServerName, else the endpoint's host,
	// is used. It has no effect without TLS.
	TLSServerName string
	// TLSMinVersion and TLSMaxVersion, when set (tls.VersionTLS12 or tls.VersionTLS13), override
	// TLS.MinVersion and TLS.MaxVersion. Zero keeps the TLS configuration's value (Go's defaults:
	// TLS 1.2 through 1.3). TLS 1.0 and 1.1 are rejected, here and in TLS.MinVersion and
	// TLS.MaxVersion. The effective minimum must not exceed the maximum. They have no effect
	// without TLS.
	TLSMinVersion, TLSMaxVersion uint16
	// CheckCertificateRevocation checks every certificate of the server's verified chain against
	// the certificate revocation list (CRL) it names, within the connection attempt's deadline
	// (ConnectTimeout). A revoked certificate, or a CRL that cannot be obtained or verified,
	// fails the connection with a permanent TLS authentication failure wrapping a
	// *RevocationError; a deadline that expires during the download fails it as a connect
	// timeout. See RevocationError for the exact rules. It requires certificate verification
	// (not TLS.InsecureSkipVerify) and has no effect without TLS.
	CheckCertificateRevocation bool
	// TCPKeepAlive is the idle time before TCP keepalive probes (at least one second when
	// positive). Zero uses Go's default (probes after 15 s); a negative value disables probes.
	// Ignored for Unix sockets and connections opened by Dialer.
	TCPKeepAlive time.Duration
	// EnableMultipathTCP requests Linux Multipath TCP (Go's net.Dialer.SetMultipathTCP) for
	// built-in TCP connections. Where the kernel lacks MPTCP the connection uses ordinary TCP and
	// the client logs the Info event MultipathTcpFallback once; a server that does not negotiate
	// MPTCP is not a fallback (the kernel continues over one path, silently). Ignored, without an
	// event, for Unix sockets and connections opened by Dialer.
	EnableMultipathTCP bool
	// Resolver, when set, looks up the endpoints' host names for the built-in TCP dialing
	// instead of net.DefaultResolver, on every connection attempt: the configured endpoints, the
	// nodes a Cluster announces by name and the primaries and replicas Sentinel names, the
	// Sentinels themselves. IP literals, Unix sockets and connections opened by Dialer are
	// never looked up. Dial hooks (Hook.Dial) wrap the dial that uses it. Nil (the default)
	// uses net.DefaultResolver. See Resolver.
	Resolver Resolver
	// ConnectionIdleReadTimeout aborts a command connection that has replies pending and receives
	// no byte for this long: its written commands end with an unknown outcome and the connection
	// is replaced like any failed one. Zero or NoTimeout disables it (the default); otherwise at
	// least 1 ms. New commands do not postpone it. Dedicated connections are not watched (a
	// blocking command waits without bytes by design); pub/sub connections only while they wait
	// for subscription acknowledgements.
	ConnectionIdleReadTimeout time.Duration
	// EnableFences records each connection's server-side id (CLIENT ID, one more command in the
	// handshake's last batch) so that Settle can fence a command whose reply was lost: see
	// Settle and docs/fences.md. A server or ACL that refuses CLIENT ID leaves the connection
	// without an id and never fails the handshake; Settle then answers ErrNoIdentity. Off by
	// default.
	EnableFences bool
	// GatheredWriteStallTimeout aborts a connection whose write makes no progress for this long
	// (a peer that stopped reading while a large value is sent). Zero inherits
	// ConnectionIdleReadTimeout (both unset disables both bounds); NoTimeout disables only this
	// write bound; otherwise at least 1 ms.
	GatheredWriteStallTimeout time.Duration
	// ConnectionMaxLifetime, when set (at least 1 ms), replaces each command connection once it
	// is older than this: a replacement is opened and validated while the old connection keeps
	// serving, then published, and the old connection finishes the commands it accepted (never
	// resent) before it closes. A failed replacement leaves the old connection in use and is
	// retried after 0.5-1 s, then 1-2 s, doubling up to 15-30 s. Zero (the default) disables
	// recycling.
	ConnectionMaxLifetime time.Duration
	// ConnectionMaxLifetimeJitter adds a uniformly drawn extra lifetime in [0, jitter) per
	// connection, spreading the replacements. It must not be negative and requires
	// ConnectionMaxLifetime.
	ConnectionMaxLifetimeJitter time.Duration
	// UseCluster selects Redis Cluster, with Endpoints as seeds (1 to MaxClusterSeeds TCP
	// endpoints). The client discovers the topology from them and routes each keyed command to
	// the node serving its slot; see docs/cluster.md.
	UseCluster bool
	// ClusterTopologyRefreshInterval is the period of the Cluster topology refresh (default
	// 60 s, minus up to 10 % jitter; at least 1 ms); NoTimeout disables the periodic refresh
	// only: lost primaries, MOVED redirects and failed refreshes still refresh.
	ClusterTopologyRefreshInterval time.Duration
	// SplitCrossSlotCommands, with UseCluster, splits MGET, MSET, DEL, UNLINK, EXISTS and TOUCH
	// whose keys map to several slots into one command per slot, run concurrently. Cross-slot
	// requests are then not atomic: see ClusterPartitionError. Without it (the default) such a
	// command fails with a *CrossSlotError before anything is sent.
	SplitCrossSlotCommands bool
	// IncludeCrossSlotKeyContext puts the conflicting key, hex-encoded, in CrossSlotError's
	// ConflictingKeyHex (never in its message). Keys may hold personal data: enable it for a
	// diagnostic session only.
	IncludeCrossSlotKeyContext bool
	// SentinelPrimaryName selects Redis Sentinel: Endpoints are then the Sentinels (1 to
	// MaxSentinels TCP endpoints, tried in order), and the client connects to the primary they
	// report under this name, once ROLE confirms it, and follows its failovers; see
	// docs/sentinel.md. At most MaxSentinelPrimaryNameLen bytes, without spaces or control
	// characters.
	SentinelPrimaryName string
	// SentinelUsername and SentinelPassword authenticate with Sentinels. When both are empty,
	// Sentinels inherit Username and Password, unless SentinelDisableAuth. Never logged.
	SentinelUsername, SentinelPassword string
	// SentinelDisableAuth connects to Sentinels without credentials even when Username and
	// Password are set: the Go form of an explicitly empty Sentinel password (sentinelPassword=).
	// It cannot be combined with SentinelUsername or SentinelPassword.
	SentinelDisableAuth bool
	// SentinelTLS says whether Sentinel connections use TLS (default: as the data connections).
	SentinelTLS SentinelTLSMode
	// SentinelTLSServerName is the TLS name verified for Sentinels; empty uses the Sentinel's
	// host. Protocol versions and revocation checking are inherited.
	SentinelTLSServerName string
	// KeyPrefix is the root key namespace: it is put before every key of every command (typed,
	// raw, batched, scripts' KEYS, WATCH), and removed from the keys of replies (KEYS, SCAN,
	// BLPOP, LMPOP, XREAD, ...). KEYS and SCAN match only the namespace. The command table says
	// where each command's keys are; a command it does not know (a module command) and
	// RANDOMKEY are refused with a *KeyPrefixError. Channels, scripts' bodies and replies, and
	// server-wide commands (DBSIZE, FLUSHDB, CLUSTER KEYSLOT, ...) use physical names. At most
	// MaxKeyPrefixLen bytes; empty disables. Client.WithKeyPrefix adds to it for a View.
	KeyPrefix string
	// PubSubPrefix is the root namespace of channels: it is put before the channels of
	// Subscribe, PSubscribe (escaped, so that it matches only itself), SSubscribe, Publish and
	// SPublish, and removed from the channels and patterns that messages report. PUBSUB
	// queries and keyspace notifications use physical names. At most MaxKeyPrefixLen bytes;
	// empty disables.
	PubSubPrefix string
	// SubscriptionBuffer is the capacity of each Subscription's buffer (default
	// DefaultSubscriptionBuffer). When a slow consumer lets it fill, the oldest entries are
	// dropped and counted in a MessageOverflow marker delivered in their place; the connection's
	// reader never waits. It must not be negative.
	SubscriptionBuffer int
	// ReplyLimits bounds what the client accepts in one reply: bulk string length, elements per
	// aggregate, nesting depth and total reply size (defaults: 512 MiB, 2^24, 64 and 1 GiB). A
	// reply over a limit fails its connection with a *ProtocolError naming the limit, before
	// its bytes are allocated. See ReplyLimits.
	ReplyLimits ReplyLimits
	// MaintenanceNotifications opts in to server maintenance notifications (default
	// MaintenanceDisabled). MaintenanceEnabled cannot be combined with ProtocolRESP2. A
	// connection that opted in relaxes its commands' timeouts during maintenance windows; see
	// docs/maintenance.md for what is supported so far.
	MaintenanceNotifications MaintenanceMode
	// MaintenanceRelaxedTimeout is the minimum command timeout, measured from each command's
	// start, while its connection is in a maintenance window (default 30 s; 1 ms to 1 day).
	MaintenanceRelaxedTimeout time.Duration
	// MaintenanceWindowTimeout is the longest a maintenance notice relaxes a connection when its
	// completion never arrives (default 60 s; 1 ms to 1 day).
	MaintenanceWindowTimeout time.Duration
	// ReplicaEndpoints are the primary's replicas, for reads (standalone only: Endpoints then
	// holds the one primary; a Sentinel client learns its replicas from SENTINEL REPLICAS). At
	// most MaxReplicaEndpoints. See docs/replicas.md.
	ReplicaEndpoints []Endpoint
	// ReadFrom is where read-only commands run by default (Primary, the zero value, keeps every
	// command on the primary). A policy other than Primary needs a source of replicas:
	// ReplicaEndpoints, SentinelPrimaryName, or UseCluster (each slot's replicas).
	ReadFrom ReadFrom
	// ReplicaLatencyTolerance, when set, spreads reads across the candidates whose measured
	// PING latency is at most the fastest's plus the tolerance, within the best tier (0: the
	// fastest and its ties). nil keeps the routing of the policy alone. Never negative.
	ReplicaLatencyTolerance *time.Duration
	// ReplicaRefreshInterval is how often each replica is validated with ROLE, and how long a
	// failing replica is skipped; a replica that has not answered for two intervals takes no
	// reads. 0 means DefaultReplicaRefreshInterval (1s); at most MaxReplicaRefreshInterval.
	ReplicaRefreshInterval time.Duration
	// ClientAvailabilityZone is the client's availability zone for AzAffinity and
	// AzAffinityReplicasAndPrimary (compared ordinally, case-sensitive, with each server's
	// availability_zone).
	ClientAvailabilityZone string
	// HedgedReads, when set, sends a hedge-eligible read that has no answer after a delay to a
	// second server as well; the first success wins. Experimental: outside the compatibility
	// promise. Needs ReplicaEndpoints, SentinelPrimaryName or UseCluster (each shard hedges
	// within itself). See docs/replicas.md.
	HedgedReads *HedgedReadOptions
	// OnConnectionStateChange receives connection lifecycle observations in order, on a goroutine
	// of its own; it may call Close. Keep it short.
	OnConnectionStateChange func(ConnectionStateChange)
	// Logger receives respire's logs; nil discards them. Credentials are never logged.
	Logger *slog.Logger
	// MeterProvider records the reconnect metrics; nil means the global OpenTelemetry provider.
	MeterProvider metric.MeterProvider
	// TracerProvider, when set, gives every command, batch and transaction an OpenTelemetry
	// span following the database semantic conventions (docs/observability.md). Nil means no
	// tracing, at no cost: the global provider is not consulted.
	TracerProvider trace.TracerProvider
	// Hooks wrap commands, batches, pub/sub deliveries and dials with the application's own
	// instrumentation, the first outermost (see Hook); at most MaxHooks.
	Hooks []Hook
	// ObserveArguments lets hooks (CommandInfo.Args) and spans (db.query.text) see the
	// arguments of commands, keys and values included, bounded by MaxObservedArgs and
	// MaxObservedArgBytes. Off by default: hooks and spans see names only. Credentials never
	// appear, even with it.
	ObserveArguments bool
	// JournalCapture, when set, keeps the state machines' last events for incident replay:
	// DumpJournal writes them, and triggers (exhaustion, a burst of failures, a predicate) can
	// dump them to a callback. Nil captures nothing. See docs/capture.md.
	JournalCapture *JournalCaptureOptions

	// allHooks is Hooks with the OpenTelemetry hooks ahead of them, set by Create.
	allHooks []Hook

	// ignored lists, deduplicated case-insensitively, the connection-string keys that
	// ParseConnectionString accepted without applying them; Create logs each once.
	ignored []string
}

// Validate checks o without doing any I/O and returns a *ConfigError for the first bad option.
func (o *Options) Validate() error {
	switch {
	case o.UseCluster && o.SentinelPrimaryName != "":
		return configErr("UseCluster", "cannot be combined with SentinelPrimaryName: choose Cluster or Sentinel")
	case len(o.Hooks) > MaxHooks:
		return configErr("Hooks", "more than MaxHooks ("+strconv.Itoa(MaxHooks)+") hooks")
	case len(o.KeyPrefix) > MaxKeyPrefixLen:
		return configErr("KeyPrefix", "longer than MaxKeyPrefixLen ("+strconv.Itoa(MaxKeyPrefixLen)+" bytes)")
	case len(o.PubSubPrefix) > MaxKeyPrefixLen:
		return configErr("PubSubPrefix", "longer than MaxKeyPrefixLen ("+strconv.Itoa(MaxKeyPrefixLen)+" bytes)")
	}
	if err := o.validateEndpoints(); err != nil {
		return err
	}
	if o.SentinelPrimaryName != "" {
		if err := o.validateSentinel(); err != nil {
			return err
		}
	}
	if err := o.validateReplicas(); err != nil {
		return err
	}
	if err := config.Validate(o.shared()); err != nil {
		return sharedErr(err)
	}
	if err := o.validateTimeouts(); err != nil {
		return err
	}
	if o.SubscriptionBuffer < 0 {
		return configErr("SubscriptionBuffer", "must not be negative")
	}
	if err := o.ReplyLimits.validate(); err != nil {
		return err
	}
	if o.JournalCapture != nil {
		if err := o.JournalCapture.validate(); err != nil {
			return err
		}
	}
	return o.validateSecurity()
}

// shared returns the options that the simulator's scenarios share with Options, for the resolver
// (engine/config): the same fields under the same names.
func (o *Options) shared() *config.Options {
	return &config.Options{
		Connections:                 o.Connections,
		ConnectTimeout:              o.ConnectTimeout,
		CommandTimeout:              o.CommandTimeout,
		Protocol:                    config.Protocol(o.Protocol),
		Username:                    o.Username,
		Password:                    o.Password,
		Database:                    o.Database,
		ClientName:                  o.ClientName,
		LibraryName:                 o.LibraryName,
		DisableLibraryInfo:          o.DisableLibraryInfo,
		EnableFences:                o.EnableFences,
		ReconnectPolicy:             o.ReconnectPolicy.machine(),
		ConnectionIdleReadTimeout:   o.ConnectionIdleReadTimeout,
		GatheredWriteStallTimeout:   o.GatheredWriteStallTimeout,
		ConnectionMaxLifetime:       o.ConnectionMaxLifetime,
		ConnectionMaxLifetimeJitter: o.ConnectionMaxLifetimeJitter,
		DedicatedPool: config.DedicatedPool{
			MinimumSize: o.DedicatedPool.MinimumSize,
			MaximumSize: o.DedicatedPool.MaximumSize,
			MaximumIdle: o.DedicatedPool.MaximumIdle,
			IdleTimeout: o.DedicatedPool.IdleTimeout,
		},
		UseCluster:                     o.UseCluster,
		ClusterTopologyRefreshInterval: o.ClusterTopologyRefreshInterval,
		MaintenanceNotifications:       config.MaintMode(o.MaintenanceNotifications),
		MaintenanceRelaxedTimeout:      o.MaintenanceRelaxedTimeout,
		MaintenanceWindowTimeout:       o.MaintenanceWindowTimeout,
	}
}

// sharedErr turns the resolver's *config.FieldError into a *ConfigError naming the same option
// with the same reason.
func sharedErr(err error) error {
	var fe *config.FieldError
	if errors.As(err, &fe) {
		return configErr(fe.Field, fe.Reason)
	}
	return err
}

// validateTimeouts checks the options the resolver does not know: the credential provider and keepalive.
func (o *Options) validateTimeouts() error {
	switch {
	case o.Credentials != nil && (o.Username != "" || o.Password != ""):
		return configErr("Credentials", "cannot be combined with Username or Password: the provider supplies both")
	case o.TCPKeepAlive > 0 && o.TCPKeepAlive < time.Second:
		return configErr("TCPKeepAlive", "must be at least one second when positive (negative disables probes)")
	}
	return nil
}

// validateSecurity checks the TLS and Sentinel credential options.
func (o *Options) validateSecurity() error {
	for _, v := range []struct {
		name    string
		version uint16
	}{{"TLSMinVersion", o.TLSMinVersion}, {"TLSMaxVersion", o.TLSMaxVersion}} {
		if v.version != 0 && (v.version < tls.VersionTLS12 || v.version > tls.VersionTLS13) {
			return configErr(v.name, "must be tls.VersionTLS12 or tls.VersionTLS13: TLS 1.0 and 1.1 are insecure and not allowed")
		}
	}
	if o.TLS != nil {
		lo, hi := o.TLS.MinVersion, o.TLS.MaxVersion
		if o.TLSMinVersion != 0 {
			lo = o.TLSMinVersion
		} else if lo != 0 && lo < tls.VersionTLS12 {
			return configErr("TLS.MinVersion", "must be at least tls.VersionTLS12 (or zero, Go's default): TLS 1.0 and 1.1 are insecure and not allowed")
		}
		if o.TLSMaxVersion != 0 {
			hi = o.TLSMaxVersion
		} else if hi != 0 && hi < tls.VersionTLS12 {
			return configErr("TLS.MaxVersion", "must be at least tls.VersionTLS12 (or zero, Go's default): TLS 1.0 and 1.1 are insecure and not allowed")
		}
		if lo != 0 && hi != 0 && lo > hi {
			return configErr("TLSMinVersion", "must not exceed the maximum TLS version")
		}
		if o.CheckCertificateRevocation && o.TLS.InsecureSkipVerify {
			return configErr("CheckCertificateRevocation", "requires certificate verification, but TLS.InsecureSkipVerify is set")
		}
	} else if o.TLSMinVersion != 0 && o.TLSMaxVersion != 0 && o.TLSMinVersion > o.TLSMaxVersion {
		return configErr("TLSMinVersion", "must not exceed TLSMaxVersion")
	}
	switch {
	case o.SentinelTLS > SentinelTLSDisabled:
		return configErr("SentinelTLS", "must be SentinelTLSInherit, SentinelTLSEnabled or SentinelTLSDisabled")
	case o.SentinelDisableAuth && (o.SentinelUsername != "" || o.SentinelPassword != ""):
		return configErr("SentinelDisableAuth", "cannot be combined with SentinelUsername or SentinelPassword")
	}
	return nil
}

// resolve returns a copy of a valid o with zero values replaced by defaults, and the resolver's
// outcome: the engine's configuration, the handshake and the liveness bounds. The shared options
// come back from the resolver with their effective values (a policy's multiplier and cap spelled
// out), so that printing the client's options shows what is in effect.
func (o Options) resolve() (Options, config.Resolved, error) {
	r, err := config.Resolve(*o.shared())
	if err != nil {
		return o, r, sharedErr(err)
	}
	s := &r.Options
	o.Connections, o.ConnectTimeout, o.CommandTimeout = s.Connections, s.ConnectTimeout, s.CommandTimeout
	o.LibraryName, o.ReconnectPolicy = s.LibraryName, policyOf(s.ReconnectPolicy)
	o.GatheredWriteStallTimeout = s.GatheredWriteStallTimeout
	o.DedicatedPool.MaximumIdle = s.DedicatedPool.MaximumIdle
	if o.ClusterTopologyRefreshInterval == 0 {
		o.ClusterTopologyRefreshInterval = DefaultClusterTopologyRefreshInterval
	}
	o.MaintenanceRelaxedTimeout, o.MaintenanceWindowTimeout = s.MaintenanceRelaxedTimeout, s.MaintenanceWindowTimeout
	return o, r, nil
}

// transportConfig derives the netio configuration from o and the resolver's outcome r for o.
func (o *Options) transportConfig(r *config.Resolved) netio.TransportConfig {
	hs := r.Handshake // the resolver's handshake is the protocol layer's, as in the simulator
	// The command timeout bounds the handshake; NoTimeout (-1) is netio's "no bound" as well.
	handshakeTimeout := r.Options.CommandTimeout
	dialer := netio.Dialer{
		ConnectTimeout:    o.ConnectTimeout,
		KeepAlive:         o.TCPKeepAlive,
		MultipathTCP:      o.EnableMultipathTCP,
		MultipathFallback: o.multipathFallbackLog(),
		Dial:              o.dialHooked(),
		TLS:               o.buildTLSConfig(),
		Resolver:          o.Resolver,
	}
	if dialer.TLS != nil && o.CheckCertificateRevocation {
		dialer = revocationDialer(dialer)
	}
	t := netio.TransportConfig{
		Dialer:            dialer,
		Handshake:         hs,
		HandshakeTimeout:  handshakeTimeout,
		Credentials:       o.credentialsHook(),
		IdleReadTimeout:   r.IdleReadTimeout,
		WriteStallTimeout: r.WriteStallTimeout,
		Limits:            o.ReplyLimits.resp(),
	}
	o.maintTransport(&t, r)
	return t
}
