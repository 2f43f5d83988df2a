package workload

import (
	"time"

	"github.com/respire-go/respire/engine"
	"github.com/respire-go/respire/sim/record"
	"github.com/respire-go/respire/sim/scenario"
)

// relaxed is asked when caller c's timeout fires at now for its waiting operation: if the
// connection its command was handed to is in a maintenance window, the command's deadline moves
// (engine.Relax.Extend, what the client's calls ask too) and relaxed reports true with
// c.deadline set to when to ask again. The maint-ignore-relaxation plant never asks.
func (wl *Callers) relaxed(c *caller, now time.Duration) bool {
	w := wl.w
	base := w.Result.OpBase
	if c.op < base || c.op >= base+len(wl.live) || w.Scenario.Planted(scenario.PlantMaintIgnoreRelaxation) {
		return false
	}
	lo := &wl.live[c.op-base]
	if lo.returned || lo.cmd == nil {
		return false
	}
	r := lo.cmd.Relax()
	if r == nil {
		return false
	}
	op := &w.Result.Ops[c.op-base]
	wake, ok := r.Extend(record.MaintEpoch.Add(now), record.MaintEpoch.Add(op.Call), w.Scenario.Client.CommandTimeout)
	if !ok {
		return false
	}
	c.deadline = wake.Sub(record.MaintEpoch)
	w.Trace.End(w.Trace.Begin("op relaxed").Uint("id", op.ID).Str("until", c.deadline.String()))
	return true
}

// Recheck is called when a notice ended or shortened relaxation r: every caller whose command r
// keeps alive past its own deadline asks again now (engine.Relax.Extend), as the client's calls
// do when engine.Relax.Shrunk is closed. A caller still relaxed gets an earlier wake-up if its
// deadline came forward; one no longer relaxed times out now. Callers go in index order.
func (wl *Callers) Recheck(r *engine.Relax) {
	if wl == nil {
		return
	}
	w := wl.w
	now := w.Sched.Now()
	for _, c := range wl.callers {
		base := w.Result.OpBase
		if c.op < base || c.op >= base+len(wl.live) {
			continue
		}
		lo := &wl.live[c.op-base]
		if lo.returned || lo.cmd == nil || lo.cmd.Relax() != r || now < w.Result.Ops[c.op-base].Call+w.Scenario.Client.CommandTimeout {
			continue
		}
		if wl.relaxed(c, now) {
			c.arm()
			continue
		}
		wl.timeout(c.op)
	}
}
