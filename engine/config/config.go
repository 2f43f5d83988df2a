package config

import (
	"strconv"
	"time"

	"github.com/respire-go/respire/engine"
	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/netio/wire"
)

// Version is respire's library version, sent with CLIENT SETINFO LIB-VER. It is defined here
// once, because the simulator's client sends it as well and cannot import package client;
// client.Version documents it for users, and a client test keeps it in step with CHANGELOG.md.
const Version = "0.1.0-dev"

// Defaults and bounds of Options.
const (
	// DefaultConnectTimeout is Options.ConnectTimeout's default.
	DefaultConnectTimeout = 10 * time.Second
	// DefaultCommandTimeout is Options.CommandTimeout's default.
	DefaultCommandTimeout = 10 * time.Second
	// DefaultLibraryName is Options.LibraryName's default, sent with CLIENT SETINFO LIB-NAME.
	DefaultLibraryName = "respire"
	// DefaultConnections is Options.Connections' default.
	DefaultConnections = 1
	// MaxConnections bounds Options.Connections.
	MaxConnections = 1024
	// DefaultDedicatedMaximumIdle is DedicatedPool.MaximumIdle's default.
	DefaultDedicatedMaximumIdle = 4
	// NoIdleReuse, assigned to DedicatedPool.MaximumIdle, retains no idle connection.
	NoIdleReuse = -1
	// MaxDedicatedIdleTimeout bounds DedicatedPool.IdleTimeout.
	MaxDedicatedIdleTimeout = 24 * time.Hour
	// MinDuration is the smallest positive value of the duration options that have a lower
	// bound: the liveness bounds, the lifetime and the pool's idle timeout.
	MinDuration = time.Millisecond
)

// NoTimeout switches off the duration option it is assigned to, where the option allows it:
// CommandTimeout, ConnectionIdleReadTimeout and GatheredWriteStallTimeout.
const NoTimeout time.Duration = -1

// Protocol selects the RESP version: the protocol layer's type (wire.Protocol), whose String
// gives the words a scenario uses ("auto", "resp2", "resp3").
type Protocol = wire.Protocol

// Protocols.
const (
	// ProtocolAuto sends HELLO 3 and falls back to RESP2 when the server does not know HELLO.
	ProtocolAuto = wire.ProtocolAuto
	// ProtocolRESP2 speaks RESP2 without HELLO.
	ProtocolRESP2 = wire.ProtocolRESP2
	// ProtocolRESP3 requires RESP3.
	ProtocolRESP3 = wire.ProtocolRESP3
)

// Options are the options that decide the engine's configuration and each connection's setup.
// Every field has the name and meaning of the client.Options field of the same name (see there
// for the full documentation); the zero value of each means its default.
type Options struct {
	// Connections is the number of multiplexed connections (default 1, at most MaxConnections).
	Connections int
	// ConnectTimeout bounds each connection attempt's dial (default 10 s; not negative).
	ConnectTimeout time.Duration
	// CommandTimeout is each command's and each handshake's reply budget (default 10 s;
	// NoTimeout disables it; otherwise not negative).
	CommandTimeout time.Duration
	// Protocol is the RESP version to negotiate (default ProtocolAuto).
	Protocol Protocol
	// Username and Password authenticate every connection; Password empty means no AUTH.
	Username, Password string
	// Database is selected on every connection when not zero (not negative).
	Database int
	// ClientName is set with CLIENT SETNAME when not empty.
	ClientName string
	// LibraryName is sent with CLIENT SETINFO LIB-NAME (default "respire"): ASCII from '!'
	// through '~'.
	LibraryName string
	// DisableLibraryInfo omits CLIENT SETINFO.
	DisableLibraryInfo bool
	// EnableFences asks every connection for its CLIENT ID, the identity a fence names.
	EnableFences bool
	// ReconnectPolicy bounds and delays connection replacement; nil means no policy. Its fields
	// are validated by fsm.Policy.Validate.
	ReconnectPolicy *fsm.Policy
	// ConnectionIdleReadTimeout aborts a connection with replies pending that receives nothing
	// for this long. Zero or NoTimeout: off; otherwise at least MinDuration.
	ConnectionIdleReadTimeout time.Duration
	// GatheredWriteStallTimeout aborts a connection whose write makes no progress for this long.
	// Zero inherits ConnectionIdleReadTimeout; NoTimeout disables only this bound; otherwise at
	// least MinDuration.
	GatheredWriteStallTimeout time.Duration
	// ConnectionMaxLifetime replaces each connection once it is older than this. Zero: off;
	// otherwise at least MinDuration.
	ConnectionMaxLifetime time.Duration
	// ConnectionMaxLifetimeJitter is the largest extra lifetime drawn per connection; not
	// negative, and it requires ConnectionMaxLifetime.
	ConnectionMaxLifetimeJitter time.Duration
	// DedicatedPool bounds the dedicated connections.
	DedicatedPool DedicatedPool
	// MaxWaiters bounds the callers waiting for a connection, per machine (zero:
	// fsm.DefaultMaxWaiters; not negative). client.Options has no such field and leaves it zero;
	// a scenario may set it.
	MaxWaiters int
	// UseCluster makes the engine a Redis Cluster client's (Resolved.Engine.Cluster). The caller
	// supplies the seeds (Resolved.ClusterEngine), as it supplies a standalone client's endpoint.
	UseCluster bool
	// ClusterTopologyRefreshInterval is the period of the Cluster topology refresh: with
	// UseCluster, zero means DefaultClusterTopologyRefreshInterval; NoTimeout disables the
	// periodic timer only; otherwise at least MinDuration.
	ClusterTopologyRefreshInterval time.Duration
	// MaintenanceNotifications opts every connection in to maintenance notifications (default
	// MaintDisabled). MaintEnabled cannot be combined with ProtocolRESP2 (maint.go).
	MaintenanceNotifications MaintMode
	// MaintenanceRelaxedTimeout is the least command timeout while a connection is in a
	// maintenance window (default fsm.DefaultMaintRelaxedTimeout; 1ms to 24h).
	MaintenanceRelaxedTimeout time.Duration
	// MaintenanceWindowTimeout is the longest a notice relaxes a connection (default
	// fsm.DefaultMaintWindowTimeout; 1ms to 24h).
	MaintenanceWindowTimeout time.Duration
}

// DefaultClusterTopologyRefreshInterval is ClusterTopologyRefreshInterval's default.
const DefaultClusterTopologyRefreshInterval = 60 * time.Second

// DedicatedPool bounds the dedicated-connection pool, as client.DedicatedPoolOptions does.
type DedicatedPool struct {
	// MinimumSize is the floor kept by timed idle retirement: not negative, at most the effective
	// MaximumIdle and at most a non-zero MaximumSize.
	MinimumSize int
	// MaximumSize bounds connecting, rented and idle connections together; zero is no limit.
	MaximumSize int
	// MaximumIdle bounds the idle connections kept for reuse: zero means
	// DefaultDedicatedMaximumIdle, NoIdleReuse keeps none.
	MaximumIdle int
	// IdleTimeout closes idle connections above MinimumSize; zero is off, otherwise between
	// MinDuration and MaxDedicatedIdleTimeout.
	IdleTimeout time.Duration
}

// maximumIdle resolves MaximumIdle's zero value and NoIdleReuse into the machine's bound.
func (p *DedicatedPool) maximumIdle() int {
	switch p.MaximumIdle {
	case 0:
		return DefaultDedicatedMaximumIdle
	case NoIdleReuse:
		return 0
	}
	return p.MaximumIdle
}

// FieldError reports an invalid option: Field is its Go name, dotted for nested fields
// ("DedicatedPool.MinimumSize", "ReconnectPolicy.JitterRatio"), and Reason says what is wrong.
// client turns it into a *client.ConfigError, sim into a *sim.ScenarioError naming the same field
// in snake_case.
type FieldError struct {
	// Field is the option's Go name, dotted for nested fields.
	Field string
	// Reason says what is wrong.
	Reason string
}

// Error implements error.
func (e *FieldError) Error() string { return "respire: invalid option " + e.Field + ": " + e.Reason }

func fieldErr(field, reason string) error { return &FieldError{Field: field, Reason: reason} }

// Validate checks o and returns a *FieldError for its first bad field, or nil. It allocates
// nothing for a valid o, and checks every bound before anything is sized from it.
func Validate(o *Options) error {
	switch {
	case o.Database < 0:
		return fieldErr("Database", "must not be negative")
	case o.ConnectTimeout < 0:
		return fieldErr("ConnectTimeout", "must not be negative")
	case o.CommandTimeout < 0 && o.CommandTimeout != NoTimeout:
		return fieldErr("CommandTimeout", "must not be negative (use NoTimeout to disable it)")
	case o.Connections < 0:
		return fieldErr("Connections", "must be at least 1")
	case o.Connections > MaxConnections:
		return fieldErr("Connections", "must be at most "+strconv.Itoa(MaxConnections))
	case o.Protocol != ProtocolAuto && o.Protocol != ProtocolRESP2 && o.Protocol != ProtocolRESP3:
		return fieldErr("Protocol", "must be ProtocolAuto (auto), ProtocolRESP2 (resp2) or ProtocolRESP3 (resp3)")
	case o.MaxWaiters < 0:
		return fieldErr("MaxWaiters", "must not be negative")
	}
	for i := 0; i < len(o.LibraryName); i++ {
		if c := o.LibraryName[i]; c < '!' || c > '~' {
			return fieldErr("LibraryName", "must contain only ASCII characters from '!' through '~'")
		}
	}
	if err := checkBound("ConnectionIdleReadTimeout", o.ConnectionIdleReadTimeout, true); err != nil {
		return err
	}
	if err := checkBound("GatheredWriteStallTimeout", o.GatheredWriteStallTimeout, true); err != nil {
		return err
	}
	if err := checkBound("ConnectionMaxLifetime", o.ConnectionMaxLifetime, false); err != nil {
		return err
	}
	if err := checkBound("ClusterTopologyRefreshInterval", o.ClusterTopologyRefreshInterval, true); err != nil {
		return err
	}
	switch {
	case o.ConnectionMaxLifetimeJitter < 0:
		return fieldErr("ConnectionMaxLifetimeJitter", "must not be negative")
	case o.ConnectionMaxLifetimeJitter > 0 && o.ConnectionMaxLifetime == 0:
		return fieldErr("ConnectionMaxLifetimeJitter", "requires ConnectionMaxLifetime")
	}
	if err := o.DedicatedPool.validate(); err != nil {
		return err
	}
	if err := validateMaint(o); err != nil {
		return err
	}
	if err := o.ReconnectPolicy.Validate(); err != nil {
		if pe, ok := err.(*fsm.PolicyError); ok {
			return fieldErr("ReconnectPolicy."+pe.Field, pe.Reason)
		}
		return fieldErr("ReconnectPolicy", err.Error())
	}
	return nil
}

// checkBound accepts zero, NoTimeout when allowed, and durations of at least MinDuration.
func checkBound(field string, d time.Duration, noTimeout bool) error {
	switch {
	case d == 0 || (noTimeout && d == NoTimeout):
		return nil
	case d < 0 && noTimeout:
		return fieldErr(field, "must not be negative (use NoTimeout to disable it)")
	case d < 0:
		return fieldErr(field, "must not be negative")
	case d < MinDuration:
		return fieldErr(field, "must be at least 1ms")
	}
	return nil
}

// validate checks the pool's bounds; errors name DedicatedPool.<field>.
func (p *DedicatedPool) validate() error {
	switch {
	case p.MinimumSize < 0:
		return fieldErr("DedicatedPool.MinimumSize", "must not be negative")
	case p.MaximumSize < 0:
		return fieldErr("DedicatedPool.MaximumSize", "must not be negative (zero means no limit)")
	case p.MaximumIdle < NoIdleReuse:
		return fieldErr("DedicatedPool.MaximumIdle", "must not be negative (use NoIdleReuse to disable idle reuse)")
	case p.MinimumSize > p.maximumIdle():
		return fieldErr("DedicatedPool.MinimumSize", "must not exceed MaximumIdle ("+strconv.Itoa(p.maximumIdle())+")")
	case p.MaximumSize > 0 && p.MinimumSize > p.MaximumSize:
		return fieldErr("DedicatedPool.MinimumSize", "must not exceed MaximumSize ("+strconv.Itoa(p.MaximumSize)+")")
	case p.IdleTimeout < 0:
		return fieldErr("DedicatedPool.IdleTimeout", "must not be negative (zero disables timed retirement)")
	case p.IdleTimeout != 0 && (p.IdleTimeout < MinDuration || p.IdleTimeout > MaxDedicatedIdleTimeout):
		return fieldErr("DedicatedPool.IdleTimeout", "must be between 1ms and 24h")
	}
	return nil
}

// Handshake is what every new connection sends before it is ready: the protocol layer's
// configuration (wire.HandshakeConfig), which netio and the simulator run as it is. Resolve fills
// every field but ReadOnly, which a Cluster client sets on its replica connections. LibraryName
// and LibraryVersion are empty when DisableLibraryInfo is set; ClientID follows EnableFences.
type Handshake = wire.HandshakeConfig

// Resolved is the outcome of Resolve.
type Resolved struct {
	// Options are the input with every default filled in, as a user would write them: printing
	// them shows the values in effect, and resolving them again gives the same Resolved.
	Options Options
	// Engine is the engine's configuration. Endpoint, JournalSize and EpisodeBase are left zero
	// for the caller.
	Engine engine.Config
	// Handshake is each new connection's setup.
	Handshake Handshake
	// IdleReadTimeout and WriteStallTimeout are the liveness bounds after the write bound's
	// inheritance; zero means off.
	IdleReadTimeout, WriteStallTimeout time.Duration
	// Relaxation bounds the maintenance relaxation of a connection that enabled notifications.
	Relaxation fsm.MaintConfig
}

// Resolve validates o (see Validate), fills in its defaults and derives the engine's
// configuration and each connection's setup. It never modifies o or the policy o points to.
func Resolve(o Options) (Resolved, error) {
	if err := Validate(&o); err != nil {
		return Resolved{}, err
	}
	o = withDefaults(o)
	r := Resolved{
		Options: o,
		Engine: engine.Config{
			Slots:      o.Connections,
			Policy:     o.ReconnectPolicy,
			MaxWaiters: o.MaxWaiters,
			Pool: fsm.PoolConfig{
				MinimumSize: o.DedicatedPool.MinimumSize,
				MaximumSize: o.DedicatedPool.MaximumSize,
				MaximumIdle: o.DedicatedPool.maximumIdle(),
				IdleTimeout: o.DedicatedPool.IdleTimeout,
			},
			Lifetime:       o.ConnectionMaxLifetime,
			LifetimeJitter: o.ConnectionMaxLifetimeJitter,
		},
		Handshake: Handshake{
			Protocol:   o.Protocol,
			Username:   o.Username,
			Password:   o.Password,
			Database:   o.Database,
			ClientName: o.ClientName,
			ClientID:   o.EnableFences,

			Maintenance: o.MaintenanceNotifications,
		},
		Relaxation: fsm.MaintConfig{RelaxedTimeout: o.MaintenanceRelaxedTimeout, WindowTimeout: o.MaintenanceWindowTimeout},
	}
	if !o.DisableLibraryInfo {
		r.Handshake.LibraryName, r.Handshake.LibraryVersion = o.LibraryName, Version
	}
	r.IdleReadTimeout, r.WriteStallTimeout = livenessBounds(o.ConnectionIdleReadTimeout, o.GatheredWriteStallTimeout)
	if o.UseCluster {
		r.Engine.Cluster = clusterConfig(&o)
	}
	if err := checkMachines(&r.Engine); err != nil {
		return Resolved{}, err
	}
	return r, nil
}

// clusterConfig is the engine's Cluster configuration for resolved options: the refresh period
// (zero when NoTimeout disables it) and a discovery candidate's budget, ConnectTimeout plus
// CommandTimeout (ConnectTimeout twice without a command timeout). The seeds are the caller's.
func clusterConfig(o *Options) *engine.ClusterConfig {
	cc := &engine.ClusterConfig{CandidateTimeout: o.ConnectTimeout}
	if o.ClusterTopologyRefreshInterval > 0 {
		cc.RefreshInterval = o.ClusterTopologyRefreshInterval
	}
	if o.CommandTimeout > 0 {
		cc.CandidateTimeout += o.CommandTimeout
	} else {
		cc.CandidateTimeout += o.ConnectTimeout
	}
	return cc
}

// ClusterEngine returns the engine configuration of a Cluster client (Options.UseCluster) with
// its seeds, which the caller checked (client.Options.Validate, a scenario's topology): a copy
// of Engine whose Cluster configuration is its own. Without UseCluster it returns Engine as it
// is.
func (r *Resolved) ClusterEngine(seeds []engine.Endpoint) engine.Config {
	cfg := r.Engine
	if cfg.Cluster != nil {
		cc := *cfg.Cluster
		cc.Seeds = append([]engine.Endpoint(nil), seeds...)
		cfg.Cluster = &cc
	}
	return cfg
}

// withDefaults fills in the zero values of a valid o. MaxWaiters becomes fsm.DefaultMaxWaiters,
// which the machines use for zero as well. The policy is copied with its effective
// multiplier and cap spelled out (fsm.Policy.Multiplier and Cap), which changes no delay; the
// write bound spells out its inheritance of the read bound.
func withDefaults(o Options) Options {
	if o.Connections == 0 {
		o.Connections = DefaultConnections
	}
	if o.ConnectTimeout == 0 {
		o.ConnectTimeout = DefaultConnectTimeout
	}
	if o.CommandTimeout == 0 {
		o.CommandTimeout = DefaultCommandTimeout
	}
	if o.LibraryName == "" {
		o.LibraryName = DefaultLibraryName
	}
	if o.MaxWaiters == 0 {
		o.MaxWaiters = fsm.DefaultMaxWaiters
	}
	if o.MaintenanceRelaxedTimeout == 0 {
		o.MaintenanceRelaxedTimeout = fsm.DefaultMaintRelaxedTimeout
	}
	if o.MaintenanceWindowTimeout == 0 {
		o.MaintenanceWindowTimeout = fsm.DefaultMaintWindowTimeout
	}
	if o.UseCluster && o.ClusterTopologyRefreshInterval == 0 {
		o.ClusterTopologyRefreshInterval = DefaultClusterTopologyRefreshInterval
	}
	if o.DedicatedPool.MaximumIdle == 0 {
		o.DedicatedPool.MaximumIdle = DefaultDedicatedMaximumIdle
	}
	if o.GatheredWriteStallTimeout == 0 && o.ConnectionIdleReadTimeout > 0 {
		o.GatheredWriteStallTimeout = o.ConnectionIdleReadTimeout
	}
	if p := o.ReconnectPolicy; p != nil {
		cp := *p
		cp.BackoffMultiplier, cp.MaxDelay = p.Multiplier(), p.Cap()
		o.ReconnectPolicy = &cp
	}
	return o
}

// livenessBounds resolves the idle read and write stall bounds (zero: off), with the write
// bound's inheritance: zero inherits the read bound, NoTimeout disables only the write bound, and
// both unset disables both.
func livenessBounds(read, write time.Duration) (idle, stall time.Duration) {
	if read > 0 {
		idle = read
	}
	switch {
	case write > 0:
		stall = write
	case write == 0:
		stall = idle
	}
	return idle, stall
}

// checkMachines runs the machines' own validation (engine.Config.Validate, the seam for
// fsm.MuxConfig.Validate and fsm.PoolConfig.Validate) on what they will be given. An error here
// means Validate let through a value the machines refuse: a bug of this package, reported as an
// error rather than left to the machines' constructors, which panic.
func checkMachines(c *engine.Config) error {
	cfg := *c
	if cfg.Cluster != nil && len(cfg.Cluster.Seeds) == 0 {
		// The seeds are the caller's: check the rest with a placeholder.
		cc := *cfg.Cluster
		cc.Seeds = []engine.Endpoint{{Host: "seed.invalid", Port: 1}}
		cfg.Cluster = &cc
	}
	if err := cfg.Validate(); err != nil {
		return fieldErr("engine", err.Error())
	}
	return nil
}
