package sim

import (
	"errors"

	"github.com/respire-go/respire/engine"
	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/sim/record"
	"github.com/respire-go/respire/sim/scenario"
	"github.com/respire-go/respire/sim/stream"
)

// newEngine builds the engine of the current client generation, in stepper mode on the world's
// runtime and transport.
func (w *world) newEngine() *engine.Engine {
	return engine.New(w.sc.EngineConfig(), engine.Deps{Runtime: w.rt, Transport: w.tp, OnStep: w.onStep,
		PubSub: w.ps.sink(), Plants: w.shared, SentinelWarn: w.sentinelWarn()})
}

// runConn returns the run's identifier of the current engine's connection id: the engine's own
// plus the generation's offset (record.ClientGen).
func (w *world) runConn(id fsm.ConnID) fsm.ConnID {
	return fsm.ConnID(uint64(id) + record.GenOffset(w.gen))
}

// eid returns the connection's identifier as the engine that opened it knows it.
func (c *simConn) eid() fsm.ConnID {
	return fsm.ConnID(uint64(c.id) - record.GenOffset(int(c.gen)))
}

// actionActor runs the scenario's client action at index arg.
type actionActor struct{ w *world }

func (a actionActor) Run(arg uint64) bool {
	w := a.w
	act := &w.sc.Actions[arg]
	switch act.Kind() {
	case "close":
		w.closeClient()
	case "create":
		w.createClient(w.sc.ConnectMode(act))
	case "recreate":
		w.closeClient()
		w.createClient(w.sc.ConnectMode(act))
	}
	return true
}

// scheduleActions puts the scenario's client actions on the heap, in the order they run.
func (w *world) scheduleActions() {
	for _, i := range w.sc.SortedActions() {
		w.k.schedule(w.sc.Actions[i].At, actionActor{w}, uint64(i))
	}
}

// closeClient closes the client as the application's Close does: the engine steps its
// disposal at once (commands waiting for a connection fail, written ones end unknown, the
// connections close), and stops. Until a create, the workload's calls reach the closed engine,
// which fails them definitely.
func (w *world) closeClient() {
	w.tr.End(w.tr.Begin("client close").Int("gen", w.gen))
	w.flushAll()
	w.eng.Close()
	w.stepped = false
	w.settleNow()
	w.clientGone = true
}

// createClient builds a new client: a new engine with fresh machines, whose identifiers the
// world keeps apart from the earlier generations' (record.ClientGen), on a runtime of its own
// (the closed engine's timers are cancelled: it is stopped). With connect eager it connects every
// slot at once, and a failure ends the run with an error, as client.Connect would return it.
func (w *world) createClient(connect string) {
	w.gen++
	for _, t := range w.rt.timers {
		t.cancelled = true
	}
	rt := &simRuntime{w: w, timers: make(map[fsm.TimerID]*simTimer), scale: w.rt.scale}
	stream.Init(&rt.rng, w.seed, stream.Engine, uint64(w.gen))
	w.rt = rt
	w.res.Clients = append(w.res.Clients, record.ClientGen{Gen: w.gen, Step: w.res.StepBase + len(w.res.Steps), At: w.k.now})
	w.tr.End(w.tr.Begin("client create").Int("gen", w.gen).Str("connect", connect))
	w.eng = w.newEngine()
	w.env.Engine = w.eng
	w.clientGone = false
	if connect == scenario.ConnectEager {
		w.eng.Acquire(fsm.NeedAll, w.reconnected)
	}
}

// reconnected receives the answer to a recreated client's eager connect.
func (w *world) reconnected(g engine.Grant) {
	b := w.tr.Begin("connect-all")
	b = b.Int("gen", w.gen).Str("outcome", g.Outcome.String())
	if g.Err != nil {
		b = b.Quoted("err", g.Err.Error())
	}
	w.tr.End(b)
	if g.Outcome != fsm.OutcomeGranted && w.connectErr == nil {
		err := errors.New("sim: eager connect of a recreated client failed: " + g.Outcome.String())
		if g.Err != nil {
			err = errors.Join(err, g.Err)
		}
		w.connectErr = err
	}
}
