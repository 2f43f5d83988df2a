package engine

import "github.com/respire-go/respire/fsm"

// machines are one client's state machines and the routing of events between them. The engine
// and Replay use the same router, so a journal replays exactly.
type machines struct {
	mux  *fsm.Mux
	pool *fsm.Pool
	eps  [2]*fsm.Episode // regular, sharded
}

func newMachines(cfg Config) *machines {
	pool := cfg.Pool
	pool.Policy = cfg.Policy
	pool.IDBase = fsm.IDBase(fsm.MachinePool)
	pool.EpisodeBase = cfg.EpisodeBase
	pool.Lifetime, pool.LifetimeJitter = cfg.Lifetime, cfg.LifetimeJitter
	if pool.MaxWaiters == 0 {
		pool.MaxWaiters = cfg.MaxWaiters
	}
	return &machines{
		mux:  fsm.NewMux(cfg.muxConfig()),
		pool: fsm.NewPool(pool),
		eps: [2]*fsm.Episode{
			fsm.NewEpisode(fsm.EpisodeConfig{Machine: fsm.MachinePubSub, Policy: cfg.Policy, MaxWaiters: cfg.MaxWaiters,
				IDBase: fsm.IDBase(fsm.MachinePubSub)}),
			fsm.NewEpisode(fsm.EpisodeConfig{Machine: fsm.MachineShardedPubSub, Policy: cfg.Policy, MaxWaiters: cfg.MaxWaiters,
				IDBase: fsm.IDBase(fsm.MachineShardedPubSub)}),
		},
	}
}

// targetOf returns the machine an event is for: connection and timer events by their
// identifier, caller events by Event.Machine.
func targetOf(ev *fsm.Event) fsm.Machine {
	switch ev.Kind {
	case fsm.DialSucceeded, fsm.HandshakeDone, fsm.DialFailed, fsm.ConnLost, fsm.Returned, fsm.Acked, fsm.Rejected:
		return fsm.MachineOf(uint64(ev.Conn))
	case fsm.TimerFired:
		return fsm.MachineOf(uint64(ev.Timer))
	}
	return ev.Machine
}

func (m *machines) get(t fsm.Machine) fsm.Stepper {
	switch t {
	case fsm.MachinePool:
		return m.pool
	case fsm.MachinePubSub:
		return m.eps[0]
	case fsm.MachineShardedPubSub:
		return m.eps[1]
	}
	return m.mux
}

// step routes ev: retirement and disposal reach every machine, in a fixed order; every other
// event reaches its target.
func (m *machines) step(ev *fsm.Event, out *fsm.Outbox) {
	if ev.Kind == fsm.Retired || ev.Kind == fsm.Disposed {
		for t := fsm.MachineMux; t < fsm.Machines; t++ {
			m.stepOne(t, ev, out)
		}
		return
	}
	m.stepOne(targetOf(ev), ev, out)
}

// stepOne steps machine t and marks its effects with it.
func (m *machines) stepOne(t fsm.Machine, ev *fsm.Event, out *fsm.Outbox) {
	start := len(out.Effects)
	m.get(t).Step(ev, out)
	for i := start; i < len(out.Effects); i++ {
		out.Effects[i].Machine = t
	}
}
