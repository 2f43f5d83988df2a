// Package scenario is the simulator's input: the schema of a scenario file (topology, network,
// runtime, client section, fault timeline, workload, expectations and plants), its strict YAML
// loader, its validation, and its resolution for a seed.
//
// Load and Parse decode a scenario strictly (an unknown field is an error), fill in the
// documented defaults and validate it; every error is an *Error naming the field
// ("client.reconnect_policy.max_delay", "faults[2].at") and its line. Resolve fixes the ranges
// ("5s..9s") for a seed; a resolved scenario written back with Marshal replays identically. The
// client section goes through the client's own resolver (engine/config): ClientConfig and
// EngineConfig give the configuration a run uses.
//
// One file per part: scenario.go (the top level, topology, network, runtime and client section),
// fault.go, actions.go, workload.go, expect.go and plant.go (the other sections), values.go (durations,
// counts and rates, with ranges), load.go (decoding and its errors), validate.go, resolve.go
// (defaults, resolution for a seed, deep copies) and client.go (the client section through the
// client's resolver).
package scenario

import (
	"time"

	"github.com/respire-go/respire/fsm"
)

// Scenario is one simulated run: a topology, a client configuration, a workload and a timeline
// of faults, plus what the checkers must find. It is loaded from YAML (Load, Parse), where
// every field below has the snake_case name given in its tag.
//
// Times and durations are Go durations ("500us", "2s", "1m30s"). Fault times and durations may
// be ranges "a..b", resolved from the seed by Resolve: a resolved scenario has no ranges left
// and, written back with Marshal, replays identically.
//
// Zero values of optional fields mean the defaults documented on each field; Parse and Resolve
// fill them in, so a marshalled scenario states every default explicitly.
type Scenario struct {
	// Name identifies the scenario in reports. Required.
	Name string `yaml:"name"`
	// Description is free text for readers.
	Description string `yaml:"description,omitempty"`
	// Seed is the default seed of the run; a runner may override it (a seed range on the command
	// line). Every random draw of a run derives from the seed.
	Seed uint64 `yaml:"seed"`
	// Duration is the virtual length of the run. Required. At Duration the client is closed and
	// the run ends.
	Duration time.Duration `yaml:"duration"`
	// Topology describes the simulated servers.
	Topology Topology `yaml:"topology"`
	// Network sets the simulated network's latency.
	Network Network `yaml:"network"`
	// Runtime sets how the simulated client's runtime schedules its event loop.
	Runtime Runtime `yaml:"runtime,omitempty"`
	// Client configures the respire client under test.
	Client Client `yaml:"client"`
	// Faults is the fault timeline, in any order.
	Faults []Fault `yaml:"faults,omitempty"`
	// Actions is the timeline of what the application does to its client: close it, create a
	// new one, recreate it (actions.go). In any order.
	Actions []ClientAction `yaml:"actions,omitempty"`
	// Maintenance is the timeline of maintenance notices the nodes send (maint.go).
	Maintenance []MaintStep `yaml:"maintenance,omitempty"`
	// ReplicaEvents is the timeline of replication events of a topology with replication
	// (replica.go).
	ReplicaEvents []ReplicaEvent `yaml:"replica_events,omitempty"`
	// Workload describes the logical callers issuing commands.
	Workload Workload `yaml:"workload"`
	// Expect is what the checkers must find (evaluated by the checkers, not by the runner).
	Expect Expect `yaml:"expect,omitempty"`
	// Plant lists deliberate bugs to plant in the simulator, for the checkers' positive controls.
	Plant []Plant `yaml:"plant,omitempty"`
	// Vary draws numeric fields from ranges for each seed ("network.latency: 200us..2ms"): see
	// VaryEntry. Resolve fixes them and clears it.
	Vary Vary `yaml:"vary,omitempty"`
}

// Topology kinds.
const (
	// TopologyStandalone is one standalone Redis node (the only kind simulated so far).
	TopologyStandalone = "standalone"
)

// Topology describes the simulated servers.
type Topology struct {
	// Kind is the topology: "standalone" (default; exactly one node), "cluster" (shards of
	// Nodes, see ClusterSpec) or "sentinel" (data nodes and Sentinels, see SentinelSpec).
	Kind string `yaml:"kind"`
	// Nodes are the simulated Redis nodes. Default: one node with id "r1".
	Nodes []NodeSpec `yaml:"nodes"`
	// Cluster describes the shards of a "cluster" topology (cluster.go).
	Cluster *ClusterSpec `yaml:"cluster,omitempty"`
	// Sentinel describes the data nodes and Sentinels of a "sentinel" topology (sentinel.go).
	Sentinel *SentinelSpec `yaml:"sentinel,omitempty"`
	// Replication makes a standalone topology's first node a primary with replicas, which the
	// client reads from (replica.go).
	Replication *ReplicationSpec `yaml:"replication,omitempty"`
}

// NodeSpec describes one simulated Redis node.
type NodeSpec struct {
	// ID names the node; faults target it by this name and the client's endpoint is "<id>:6379".
	ID string `yaml:"id"`
	// Password is the node's requirepass: when set, every command but AUTH and HELLO answers
	// NOAUTH until the connection authenticates as the default user with this password.
	Password string `yaml:"password,omitempty"`
}

// NodePort is the port of every simulated node's endpoint ("<node id>:6379").
const NodePort = 6379

// MaxLoopLag bounds Runtime.LoopLag.
const MaxLoopLag = time.Second

// Runtime sets how the simulated client's runtime schedules its event loop.
type Runtime struct {
	// LoopLag, when positive, makes the engine's event loop lag behind the rest of the world: the
	// events an action posts (a demand, a withdrawal, a ready connection) are stepped LoopLag
	// later, in a scheduler event of their own, as a production loop on its own goroutine may
	// step them after callers have moved on. Races between callers and the loop (a withdrawal
	// landing while a grant is on its way) then happen. Zero (the default) steps them right after
	// each action. At most MaxLoopLag.
	LoopLag time.Duration `yaml:"loop_lag,omitempty"`
}

// DefaultLatency is the one-way network latency when Network.Latency is zero.
const DefaultLatency = 500 * time.Microsecond

// Network sets the simulated network's timing.
type Network struct {
	// Latency is the base one-way latency of every byte chunk and connection handshake packet.
	// Zero means DefaultLatency (500us).
	Latency time.Duration `yaml:"latency"`
	// Jitter adds a seeded uniform delay in [0, Jitter) to each chunk; zero means none. Delivery
	// stays in order per direction.
	Jitter time.Duration `yaml:"jitter"`
	// SendBuffer models a connection's socket buffers towards the node: once more than this many
	// written bytes have not reached the node (a black hole, a slow link), the client's write
	// stalls until they drain below it. Zero (omitted) means unlimited: writes never stall.
	SendBuffer int `yaml:"send_buffer,omitempty"`
}

// Connect modes.
const (
	// ConnectEager connects every slot before the workload (Connect: Acquire of all slots at t=0;
	// the run fails if that fails).
	ConnectEager = "eager"
	// ConnectLazy connects on first use (Create).
	ConnectLazy = "lazy"
)

// Protocol settings of Client.Protocol.
const (
	// ProtocolAuto sends HELLO 3 and falls back to RESP2 when the server does not know it.
	ProtocolAuto = "auto"
	// ProtocolRESP2 speaks RESP2 without HELLO.
	ProtocolRESP2 = "resp2"
	// ProtocolRESP3 requires RESP3.
	ProtocolRESP3 = "resp3"
)

// Client configures the respire client under test. It is client.Options, field for field, for
// the options the simulator models: each field below has the name of the client.Options field it
// stands for, and its YAML name is that name in snake_case (ConnectionMaxLifetime is
// connection_max_lifetime). Defaults, bounds and errors come from the same resolver
// (engine/config), so a bad value is rejected here with the client's reason, naming the field
// (client.connection_max_lifetime). Two fields are the simulator's own: Connect, which chooses
// between client.Connect and client.Create, and MaxWaiters, the engine's bound on waiting callers
// that client.Options leaves at its default.
//
// Parse and Resolve replace zero values with the values in effect, as the client does:
// a resolved scenario shows the policy's multiplier and cap, the pool's idle bound and the
// inherited write-stall bound, and reads back to the same configuration.
type Client struct {
	// Connections is the number of multiplexed command connections (slots). Default 1, at most
	// 1024.
	Connections int `yaml:"connections"`
	// Connect is "eager" (default: connect every slot at t=0, failing the run if that fails) or
	// "lazy" (connect on first use). The simulator's own field: client.Connect or client.Create.
	Connect string `yaml:"connect"`
	// ConnectTimeout bounds each connection attempt's transport connect. Default 10s.
	ConnectTimeout time.Duration `yaml:"connect_timeout"`
	// CommandTimeout bounds each handshake, and each workload command's wait. Default 10s.
	// client.NoTimeout (-1ns) is valid for the client but not simulated: the simulated callers
	// need a finite budget.
	CommandTimeout time.Duration `yaml:"command_timeout"`
	// Protocol is "auto" (default: HELLO 3 with fallback), "resp2" or "resp3".
	Protocol string `yaml:"protocol"`
	// Username authenticates each connection with Password (empty: the default user).
	Username string `yaml:"username,omitempty"`
	// Password authenticates each connection (HELLO AUTH or AUTH); empty means no
	// authentication.
	Password string `yaml:"password,omitempty"`
	// ClientName is set with HELLO SETNAME or CLIENT SETNAME when not empty.
	ClientName string `yaml:"client_name,omitempty"`
	// Database is selected with SELECT when not zero. The simulated node has databases 0..15
	// and rejects others, as Redis does by default.
	Database int `yaml:"database,omitempty"`
	// LibraryName is sent with CLIENT SETINFO LIB-NAME (the simulated Redis 7.0 rejects it, which
	// never fails the handshake). Default "respire".
	LibraryName string `yaml:"library_name"`
	// DisableLibraryInfo drops the CLIENT SETINFO commands from the handshake.
	DisableLibraryInfo bool `yaml:"disable_library_info,omitempty"`
	// EnableFences asks every connection for its CLIENT ID, so that a connection that dies with
	// replies outstanding is fenced (CLIENT KILL ID on its node; see docs/fences.md).
	EnableFences bool `yaml:"enable_fences,omitempty"`
	// ReconnectPolicy is the reconnect policy; omit it for none.
	ReconnectPolicy *PolicySpec `yaml:"reconnect_policy,omitempty"`
	// MaxWaiters bounds callers waiting for a connection, per machine (default 65536, the
	// engine's). The simulator's own field: client.Options leaves it at its default.
	MaxWaiters int `yaml:"max_waiters,omitempty"`
	// ConnectionMaxLifetime is the maximum connection lifetime: each command connection is
	// replaced, the replacement validated first and the old one drained, once older than this
	// plus a draw of ConnectionMaxLifetimeJitter. Zero (omitted) disables it; otherwise at least
	// 1ms.
	ConnectionMaxLifetime time.Duration `yaml:"connection_max_lifetime,omitempty"`
	// ConnectionMaxLifetimeJitter is the largest extra lifetime drawn per connection; requires
	// ConnectionMaxLifetime.
	ConnectionMaxLifetimeJitter time.Duration `yaml:"connection_max_lifetime_jitter,omitempty"`
	// ConnectionIdleReadTimeout aborts a ready connection that has replies pending and receives
	// no byte for this long, in virtual time. Zero (omitted) or -1ns (NoTimeout) disables it;
	// otherwise at least 1ms.
	ConnectionIdleReadTimeout time.Duration `yaml:"connection_idle_read_timeout,omitempty"`
	// GatheredWriteStallTimeout aborts a connection whose written bytes make no progress towards
	// the node for this long while more than network.send_buffer of them are in flight. Zero
	// (omitted) inherits ConnectionIdleReadTimeout; -1ns (NoTimeout) disables only this bound;
	// otherwise at least 1ms.
	GatheredWriteStallTimeout time.Duration `yaml:"gathered_write_stall_timeout,omitempty"`
	// DedicatedPool bounds the dedicated-connection pool; omitted means the client's defaults
	// (no total limit, four idle, no timed retirement).
	DedicatedPool *DedicatedPoolSpec `yaml:"dedicated_pool,omitempty"`
	// UseCluster makes the client a Redis Cluster client, whose seeds are the cluster
	// topology's (see ClusterSpec). It requires topology.kind cluster, which sets it by default.
	UseCluster bool `yaml:"use_cluster,omitempty"`
	// ClusterTopologyRefreshInterval is the period of the Cluster topology refresh (default 60s
	// with use_cluster; -1ns, client.NoTimeout, disables the periodic timer only).
	ClusterTopologyRefreshInterval time.Duration `yaml:"cluster_topology_refresh_interval,omitempty"`
	// MaintenanceNotifications is "disabled" (default), "auto" or "enabled": how connections
	// opt in to maintenance notifications (see maint.go and the maintenance section).
	MaintenanceNotifications string `yaml:"maintenance_notifications,omitempty"`
	// MaintenanceRelaxedTimeout is the least command timeout in a maintenance window (default
	// 30s; 1ms to 24h).
	MaintenanceRelaxedTimeout time.Duration `yaml:"maintenance_relaxed_timeout,omitempty"`
	// MaintenanceWindowTimeout is the longest a notice relaxes a connection (default 60s; 1ms to
	// 24h).
	MaintenanceWindowTimeout time.Duration `yaml:"maintenance_window_timeout,omitempty"`
	// ReadFrom is the default read policy by name ("Primary", the default, "Replica",
	// "PrimaryPreferred", "ReplicaPreferred", "Nearest", "AzAffinity",
	// "AzAffinityReplicasAndPrimary"); a policy other than Primary needs
	// topology.replication, whose replicas are the client's ReplicaEndpoints (replica.go).
	ReadFrom string `yaml:"read_from,omitempty"`
	// ReplicaLatencyTolerance is the width of the latency bands; omitted: no bands.
	ReplicaLatencyTolerance *time.Duration `yaml:"replica_latency_tolerance,omitempty"`
	// ReplicaRefreshInterval is the replicas' validation period (0: 1s).
	ReplicaRefreshInterval time.Duration `yaml:"replica_refresh_interval,omitempty"`
	// ClientAvailabilityZone is the client's zone, for the zone-aware policies.
	ClientAvailabilityZone string `yaml:"client_availability_zone,omitempty"`
	// HedgedReads turns hedged reads on (client.HedgedReads).
	HedgedReads *HedgedReadsSpec `yaml:"hedged_reads,omitempty"`
}

// PolicySpec is the YAML form of fsm.Policy (client.ReconnectPolicy), field for field. Its zero
// values mean what fsm.Policy's do; a resolved scenario spells out the multiplier and cap in
// effect.
type PolicySpec struct {
	// InitialDelay is the wait before the first replacement attempt.
	InitialDelay time.Duration `yaml:"initial_delay"`
	// BackoffMultiplier is the backoff multiplier (0: 2).
	BackoffMultiplier float64 `yaml:"backoff_multiplier"`
	// MaxDelay caps every delay (0: one day).
	MaxDelay time.Duration `yaml:"max_delay"`
	// JitterRatio is the symmetric jitter ratio, in [0, 1].
	JitterRatio float64 `yaml:"jitter_ratio"`
	// MaxAttempts bounds consecutive failed attempts (0: unlimited).
	MaxAttempts int `yaml:"max_attempts"`
}

// Policy returns the fsm.Policy of p, or nil when p is nil.
func (p *PolicySpec) Policy() *fsm.Policy {
	if p == nil {
		return nil
	}
	return &fsm.Policy{
		InitialDelay:      p.InitialDelay,
		BackoffMultiplier: p.BackoffMultiplier,
		MaxDelay:          p.MaxDelay,
		JitterRatio:       p.JitterRatio,
		MaxAttempts:       p.MaxAttempts,
	}
}

// policySpec is the YAML form of p, or nil when p is nil.
func policySpec(p *fsm.Policy) *PolicySpec {
	if p == nil {
		return nil
	}
	return &PolicySpec{InitialDelay: p.InitialDelay, BackoffMultiplier: p.BackoffMultiplier, MaxDelay: p.MaxDelay,
		JitterRatio: p.JitterRatio, MaxAttempts: p.MaxAttempts}
}

// DedicatedPoolSpec is the YAML form of client.DedicatedPoolOptions (client.dedicated_pool),
// field for field: the same names in snake_case, the same zero values, validated by the same
// resolver (engine/config). UnblockOnCancel is not simulated.
type DedicatedPoolSpec struct {
	// MinimumSize is the floor kept by timed idle retirement.
	MinimumSize int `yaml:"minimum_size,omitempty"`
	// MaximumSize bounds connecting, rented and idle connections and backoff reservations
	// together; zero is unlimited.
	MaximumSize int `yaml:"maximum_size,omitempty"`
	// MaximumIdle bounds retained idle connections: zero (omitted) means 4, -1
	// (client.NoIdleReuse) disables idle reuse.
	MaximumIdle int `yaml:"maximum_idle,omitempty"`
	// IdleTimeout retires idle connections above MinimumSize; zero disables it, otherwise 1ms to
	// 24h.
	IdleTimeout time.Duration `yaml:"idle_timeout,omitempty"`
}
