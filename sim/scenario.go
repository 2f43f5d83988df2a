package sim

import (
	"time"

	"github.com/respire-go/respire/engine/config"
	"github.com/respire-go/respire/fsm"
)

// Scenario is one simulated run: a topology, a client configuration, a workload and a timeline
// of faults, plus what the checkers must find. It is loaded from YAML (LoadScenario,
// ParseScenario), where every field below has the snake_case name given in its tag.
//
// Times and durations are Go durations ("500us", "2s", "1m30s"). Fault times and durations may
// be ranges "a..b", resolved from the seed by Resolve: a resolved scenario has no ranges left
// and, written back with MarshalScenario, replays identically.
//
// Zero values of optional fields mean the defaults documented on each field; ParseScenario and
// Resolve fill them in, so a marshalled scenario states every default explicitly.
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
	// Workload describes the logical callers issuing commands.
	Workload Workload `yaml:"workload"`
	// Expect is what the checkers must find (evaluated by the checkers, not by the runner).
	Expect Expect `yaml:"expect,omitempty"`
	// Plant lists deliberate bugs to plant in the simulator, for the checkers' positive controls.
	Plant []Plant `yaml:"plant,omitempty"`
}

// Topology kinds.
const (
	// TopologyStandalone is one standalone Redis node (the only kind simulated so far).
	TopologyStandalone = "standalone"
)

// Topology describes the simulated servers.
type Topology struct {
	// Kind is the topology: "standalone" (default; exactly one node).
	Kind string `yaml:"kind"`
	// Nodes are the simulated Redis nodes. Default: one node with id "r1".
	Nodes []NodeSpec `yaml:"nodes"`
}

// NodeSpec describes one simulated Redis node.
type NodeSpec struct {
	// ID names the node; faults target it by this name and the client's endpoint is "<id>:6379".
	ID string `yaml:"id"`
	// Password is the node's requirepass: when set, every command but AUTH and HELLO answers
	// NOAUTH until the connection authenticates as the default user with this password.
	Password string `yaml:"password,omitempty"`
}

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

// Client defaults: the client's own (client.Options), from the shared resolver (engine/config).
const (
	// DefaultConnectTimeout is Client.ConnectTimeout's default (the spec's 10 s).
	DefaultConnectTimeout = config.DefaultConnectTimeout
	// DefaultCommandTimeout is Client.CommandTimeout's default (the spec's 10 s).
	DefaultCommandTimeout = config.DefaultCommandTimeout
	// DefaultLibraryName is the CLIENT SETINFO LIB-NAME the client sends.
	DefaultLibraryName = config.DefaultLibraryName
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
// ParseScenario and Resolve replace zero values with the values in effect, as the client does:
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
	// (no total limit, four idle, no timed retirement). See dedicated.go.
	DedicatedPool *DedicatedPoolSpec `yaml:"dedicated_pool,omitempty"`
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

// Target names what a fault hits: a node (all its connections, and connects to it), or one
// client slot (that slot's current connection, and connects made for it). Exactly one is set.
type Target struct {
	// Node is a node id.
	Node string `yaml:"node,omitempty"`
	// ClientSlot is a slot index of the client, in [0, client.connections).
	ClientSlot *int `yaml:"client_slot,omitempty"`
}

// WindowFault is a fault active on its target for a window: refuse and blackhole.
type WindowFault struct {
	Target `yaml:",inline"`
	// For is how long the fault lasts; omitted means until the end of the run.
	For *TimeRange `yaml:"for,omitempty"`
}

// AcceptThenDropFault: during its window, every new connection of the target is accepted,
// completes its handshake, and is dropped After later (default 0: as soon as it is ready).
type AcceptThenDropFault struct {
	Target `yaml:",inline"`
	// For is how long new connections are dropped; omitted means until the end of the run.
	For *TimeRange `yaml:"for,omitempty"`
	// After is the extra time a ready connection lives before it is dropped.
	After *TimeRange `yaml:"after,omitempty"`
}

// DropAfterBytesFault cuts a connection once Bytes more bytes have crossed it (both directions
// counted): the target slot's current connection (or its next one if it has none), or every
// connection open to the target node (or the next one accepted if there is none).
type DropAfterBytesFault struct {
	Target `yaml:",inline"`
	// Bytes is the number of bytes that may still cross, at least 1. A range "a..b" is resolved
	// from the seed.
	Bytes IntRange `yaml:"bytes"`
}

// DelayFault adds Extra one-way latency to the target's bytes and connects for its window.
type DelayFault struct {
	Target `yaml:",inline"`
	// For is the window's length; omitted means until the end of the run.
	For *TimeRange `yaml:"for,omitempty"`
	// Extra is the added one-way latency (positive).
	Extra TimeRange `yaml:"extra"`
}

// KillFault kills a node: every connection to it is reset and new connects are refused until it
// restarts. The node keeps its dataset across the restart, modelling persistence.
type KillFault struct {
	// Node is the node to kill.
	Node string `yaml:"node"`
	// RestartAfter is when the node restarts after the kill; omitted means never.
	RestartAfter *TimeRange `yaml:"restart_after,omitempty"`
}

// HandshakeErrorFault makes a node answer HELLO and AUTH with an error reply for its window.
type HandshakeErrorFault struct {
	// Node is the node.
	Node string `yaml:"node"`
	// For is the window's length; omitted means until the end of the run.
	For *TimeRange `yaml:"for,omitempty"`
	// Reply is the error reply, code first: "WRONGPASS invalid username-password pair",
	// "NOPERM ...", "LOADING Redis is loading the dataset in memory".
	Reply string `yaml:"reply"`
}

// PauseFault stops a node from processing (like SIGSTOP): connects still complete (the kernel
// accepts them) and bytes queue up, but nothing is parsed or answered until it resumes.
type PauseFault struct {
	// Node is the node.
	Node string `yaml:"node"`
	// For is the pause's length; omitted means until the end of the run.
	For *TimeRange `yaml:"for,omitempty"`
}

// Fault is one entry of the fault timeline: a start time and exactly one kind.
type Fault struct {
	// At is when the fault starts (a range "a..b" is resolved from the seed).
	At TimeRange `yaml:"at"`
	// Refuse refuses new connections of its target for its window (a refused connect: the peer
	// answers with a reset).
	Refuse *WindowFault `yaml:"refuse,omitempty"`
	// AcceptThenDrop accepts new connections, lets them finish their handshake, then drops them.
	AcceptThenDrop *AcceptThenDropFault `yaml:"accept_then_drop,omitempty"`
	// Drop cuts the target's connections now: the client sees a reset.
	Drop *Target `yaml:"drop,omitempty"`
	// DropAfterBytes cuts a connection once a number of further bytes crossed it: how "written
	// but no reply" is produced.
	DropAfterBytes *DropAfterBytesFault `yaml:"drop_after_bytes,omitempty"`
	// LoseReply makes the node apply the next application command of the target (the slot's
	// current or next connection, or any connection of the node) and lose its reply; that
	// connection is then reset.
	LoseReply *Target `yaml:"lose_reply,omitempty"`
	// Blackhole makes the target half-open for its window: bytes in both directions stop
	// arriving, with no reset; new connects hang until the connect timeout. When it heals, the
	// held bytes are delivered (as TCP retransmission would), so the stream stays intact.
	Blackhole *WindowFault `yaml:"blackhole,omitempty"`
	// Delay adds latency to the target for its window.
	Delay *DelayFault `yaml:"delay,omitempty"`
	// Kill kills a node, optionally restarting it later with its dataset.
	Kill *KillFault `yaml:"kill,omitempty"`
	// HandshakeError makes a node reject HELLO and AUTH with an error reply for its window.
	HandshakeError *HandshakeErrorFault `yaml:"handshake_error,omitempty"`
	// Pause stops a node from processing for its window.
	Pause *PauseFault `yaml:"pause,omitempty"`
	// SubscribeError makes a node refuse subscription commands for its window (pubsub_schema.go).
	SubscribeError *SubscribeErrorFault `yaml:"subscribe_error,omitempty"`
	// Push makes a node send unsolicited RESP3 pushes between its replies (push_fault.go).
	Push *PushFault `yaml:"push,omitempty"`
}

// FaultKinds lists the YAML names of the fault kinds.
var FaultKinds = []string{"refuse", "accept_then_drop", "drop", "drop_after_bytes", "lose_reply",
	"blackhole", "delay", "kill", "handshake_error", "pause", "subscribe_error", "push"}

// Kind returns the YAML name of the fault's kind, or "" if none is set. With several set it
// returns the first, in FaultKinds order (Validate rejects that).
func (f *Fault) Kind() string {
	kinds := f.kinds()
	if len(kinds) == 0 {
		return ""
	}
	return kinds[0]
}

func (f *Fault) kinds() []string {
	var out []string
	set := []bool{f.Refuse != nil, f.AcceptThenDrop != nil, f.Drop != nil, f.DropAfterBytes != nil,
		f.LoseReply != nil, f.Blackhole != nil, f.Delay != nil, f.Kill != nil, f.HandshakeError != nil,
		f.Pause != nil, f.SubscribeError != nil, f.Push != nil}
	for i, s := range set {
		if s {
			out = append(out, FaultKinds[i])
		}
	}
	return out
}

// Workload describes the closed-loop logical callers. With zero callers there is no workload.
type Workload struct {
	// Callers is the number of logical callers; each issues one command, waits for its outcome
	// (at most client.command_timeout), thinks, and repeats.
	Callers int `yaml:"callers"`
	// Rate is the total target rate, "200/s" (or "/m", or a plain number per second). Each
	// caller's think time is exponential with mean callers/rate.
	Rate Rate `yaml:"rate"`
	// Keys is the number of string keys k0..k{n-1} (default 16), used by GET, SET, DEL, MGET and
	// MSET.
	Keys int `yaml:"keys"`
	// Counters is the number of integer keys c0..c{n-1} (default 4), used by INCR and GET only.
	Counters int `yaml:"counters"`
	// Mix weighs the command kinds. Default: get 50, set 30, del 5, incr 10, mget 3, mset 2.
	Mix Mix `yaml:"mix"`
	// Start is when callers start (each after a seeded stagger). Default 0.
	Start time.Duration `yaml:"start"`
	// Stop is when callers stop issuing new commands. Default: the run's duration.
	Stop time.Duration `yaml:"stop"`
	// Dedicated describes renters of dedicated connections (blocking pops, pushes,
	// transactions); omitted means none. See dedicated.go.
	Dedicated *DedicatedWorkload `yaml:"dedicated,omitempty"`
	// PubSub describes subscribers and a publisher; omitted means none. See pubsub_schema.go.
	PubSub *PubSubWorkload `yaml:"pubsub,omitempty"`
}

// Mix weighs the workload's command kinds (non-negative integers; each operation draws its kind
// with probability weight/total). Every written value is unique in the run ("v<id>", and
// "v<id>.<i>" for the i-th pair of an MSET).
type Mix struct {
	// Get is the weight of GET of one key, drawn from the string keys and the counters.
	Get int `yaml:"get,omitempty"`
	// Set is the weight of SET of one string key.
	Set int `yaml:"set,omitempty"`
	// Del is the weight of DEL of one string key.
	Del int `yaml:"del,omitempty"`
	// Incr is the weight of INCR of one counter.
	Incr int `yaml:"incr,omitempty"`
	// MGet is the weight of MGET of two or three distinct string keys.
	MGet int `yaml:"mget,omitempty"`
	// MSet is the weight of MSET of two or three distinct string keys.
	MSet int `yaml:"mset,omitempty"`
}

func (m Mix) total() int { return m.Get + m.Set + m.Del + m.Incr + m.MGet + m.MSet }

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

// LivenessExpect asks that, from After (zero: when the last fault healed), operations succeed
// again within Within.
type LivenessExpect struct {
	// After is when the liveness phase starts; zero means Result.HealedAt.
	After time.Duration `yaml:"after,omitempty"`
	// Within is how soon after After an operation must succeed (positive).
	Within time.Duration `yaml:"within"`
}

// knownPlants lists the plants the simulator implements.
var knownPlants = []Plant{PlantReplayAccepted, PlantLateTimers, PlantEarlyDial, PlantLoseReply,
	PlantStaleRead, PlantDoubleComplete, PlantEarlyCommand, PlantDeadAfterHeal,
	PlantRetryPermanent, PlantReRent, PlantResendBlocking, PlantUseAfterReturn,
	PlantPubSubSkipGap, PlantPubSubLostUnsubscribe, PlantPubSubKeepAfterExhaustion,
	PlantLateReplyToNextCaller, PlantTimeoutKeepsPairing, PlantPushCompletesCommand, PlantAckToWrongBatch,
	PlantSendWithdrawn, PlantIgnoreCancel, PlantRecycleBeforeReply}

// Planted reports whether the scenario plants p.
func (sc *Scenario) Planted(p Plant) bool {
	for _, q := range sc.Plant {
		if q == p {
			return true
		}
	}
	return false
}
