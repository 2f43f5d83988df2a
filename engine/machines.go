package engine

import (
	"errors"
	"strings"

	"github.com/respire-go/respire/fsm"
)

// machines are one client's state machines and the routing of events between them. The engine
// and Replay use the same router, so a journal replays exactly.
type machines struct {
	mux  *fsm.Mux
	pool *fsm.Pool
	eps  [2]*fsm.Episode // regular, sharded
	// cluster is a Cluster engine's topology machine, which runs its nodes' slots and pools;
	// mux and pool are nil then.
	cluster *fsm.Cluster
	// res and mon are a Sentinel engine's resolution and event monitor; nil otherwise.
	res *fsm.Resolution
	mon *fsm.Monitor
	// fence is the fence machine (fence obligations), on every engine.
	fence *fsm.Fence
}

func newMachines(cfg Config) *machines {
	mux, pool, eps := cfg.machineConfigs()
	m := &machines{eps: [2]*fsm.Episode{fsm.NewEpisode(eps[0]), fsm.NewEpisode(eps[1])},
		fence: fsm.NewFence(fsm.FenceConfig{IDBase: fsm.IDBase(fsm.MachineFence)})}
	if cfg.Cluster != nil {
		m.cluster = fsm.NewCluster(cfg.clusterMachineConfig())
		return m
	}
	m.mux, m.pool = fsm.NewMux(mux), fsm.NewPool(pool)
	if cfg.Sentinel != nil {
		res, mon := cfg.sentinelMachineConfigs()
		m.res, m.mon = fsm.NewResolution(res), fsm.NewMonitor(mon)
	}
	return m
}

// machineConfigs returns the configurations of the four machines cfg describes: the command
// slots, the dedicated pool, and the regular and sharded pub/sub episodes.
func (c Config) machineConfigs() (fsm.MuxConfig, fsm.PoolConfig, [2]fsm.EpisodeConfig) {
	mux := fsm.MuxConfig{Slots: c.Slots, Policy: c.Policy, MaxWaiters: c.MaxWaiters,
		Lifetime: c.Lifetime, LifetimeJitter: c.LifetimeJitter}
	pool := c.Pool
	pool.Policy = c.Policy
	pool.IDBase = fsm.IDBase(fsm.MachinePool)
	pool.EpisodeBase = c.EpisodeBase
	pool.Lifetime, pool.LifetimeJitter = c.Lifetime, c.LifetimeJitter
	if pool.MaxWaiters == 0 {
		pool.MaxWaiters = c.MaxWaiters
	}
	eps := [2]fsm.EpisodeConfig{
		{Machine: fsm.MachinePubSub, Policy: c.Policy, MaxWaiters: c.MaxWaiters, IDBase: fsm.IDBase(fsm.MachinePubSub)},
		{Machine: fsm.MachineShardedPubSub, Policy: c.Policy, MaxWaiters: c.MaxWaiters, IDBase: fsm.IDBase(fsm.MachineShardedPubSub)},
	}
	return mux, pool, eps
}

// Validate reports whether the machines accept c, with the checks their constructors make (New
// panics on a configuration they refuse). It is the seam for the machines' own validation:
// fsm.MuxConfig, fsm.PoolConfig and fsm.EpisodeConfig are getting Validate methods (issue 11);
// once they exist, Validate calls them on machineConfigs' results and keeps no check of its own.
// engine/config calls it on every configuration it resolves.
func (c Config) Validate() error {
	mux, pool, eps := c.machineConfigs()
	if err := mux.Validate(); err != nil {
		return machineConfigError("", err)
	}
	if err := pool.Validate(); err != nil {
		return machineConfigError("Pool.", err)
	}
	if c.Cluster != nil {
		for _, s := range c.Cluster.Seeds {
			if s.IsUnix() {
				return &ConfigError{Field: "Cluster.Seeds", Reason: "must be TCP endpoints: a Cluster has no Unix sockets"}
			}
		}
		cc := c.clusterMachineConfig()
		if err := cc.Validate(); err != nil {
			return machineConfigError("Cluster.", err)
		}
	}
	if c.Sentinel != nil {
		if err := c.validateSentinel(); err != nil {
			return err
		}
	}
	for i := range eps {
		if err := eps[i].Validate(); err != nil {
			return machineConfigError("PubSub.", err)
		}
	}
	return c.Capture.Validate()
}

// machineConfigError names a machine's invalid field as a Config field: the command slots'
// fields are the Config's own, the pool's are under Pool, the episodes' under PubSub.
func machineConfigError(prefix string, err error) error {
	var ce *fsm.ConfigError
	if !errors.As(err, &ce) {
		return &ConfigError{Field: strings.TrimSuffix(prefix, "."), Reason: err.Error(), Err: err}
	}
	return &ConfigError{Field: prefix + ce.Field, Reason: ce.Reason, Err: err}
}

// targetOf returns the machine an event is for: connection and timer events by their
// identifier, caller events by Event.Machine.
func targetOf(ev *fsm.Event) fsm.Machine {
	switch ev.Kind {
	case fsm.DialSucceeded, fsm.HandshakeDone, fsm.DialFailed, fsm.ConnLost, fsm.Returned, fsm.Acked, fsm.Rejected,
		fsm.Answered, fsm.Notified, fsm.Killed, fsm.MovingNoticed:
		return fsm.MachineOf(uint64(ev.Conn))
	case fsm.TimerFired:
		return fsm.MachineOf(uint64(ev.Timer))
	}
	return ev.Machine
}

func (m *machines) get(t fsm.Machine) fsm.Stepper {
	switch t {
	case fsm.MachinePubSub:
		return m.eps[0]
	case fsm.MachineShardedPubSub:
		return m.eps[1]
	case fsm.MachineSentinel:
		if m.res != nil {
			return m.res
		}
	case fsm.MachineSentinelMonitor:
		if m.mon != nil {
			return m.mon
		}
	case fsm.MachineFence:
		return m.fence
	}
	if m.cluster != nil {
		// The command slots and pools of a Cluster client are its nodes', run by the Cluster
		// machine, which also answers a stray demand for the standalone machines.
		return m.cluster
	}
	if t == fsm.MachinePool {
		return m.pool
	}
	return m.mux
}

// step routes ev: retirement and disposal reach every machine, in a fixed order; every other
// event reaches its target.
func (m *machines) step(ev *fsm.Event, out *fsm.Outbox) {
	if ev.Kind == fsm.Retired || ev.Kind == fsm.Disposed {
		// Obligations outlive retirement; disposal flags them. The fence machine steps last.
		defer m.stepOne(fsm.MachineFence, ev, out)
		if m.cluster != nil {
			m.stepOne(fsm.MachineCluster, ev, out)
			m.stepOne(fsm.MachinePubSub, ev, out)
			m.stepOne(fsm.MachineShardedPubSub, ev, out)
			return
		}
		for t := fsm.MachineMux; t <= fsm.MachineShardedPubSub; t++ {
			m.stepOne(t, ev, out)
		}
		if m.res != nil && ev.Kind == fsm.Disposed {
			m.stepOne(fsm.MachineSentinel, ev, out)
			m.stepOne(fsm.MachineSentinelMonitor, ev, out)
		}
		return
	}
	m.stepOne(targetOf(ev), ev, out)
}

// stepOne steps machine t and marks its effects with it. The Cluster machine marks its own
// (its nodes' machines are theirs).
func (m *machines) stepOne(t fsm.Machine, ev *fsm.Event, out *fsm.Outbox) {
	start := len(out.Effects)
	s := m.get(t)
	s.Step(ev, out)
	if s == fsm.Stepper(m.cluster) {
		for i := start; i < len(out.Effects); i++ {
			if out.Effects[i].Machine == fsm.MachineMux {
				out.Effects[i].Machine = fsm.MachineCluster
			}
		}
		return
	}
	for i := start; i < len(out.Effects); i++ {
		out.Effects[i].Machine = t
	}
}
