package workload

import (
	"github.com/respire-go/respire/engine"
	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/netio/wire"
	"github.com/respire-go/respire/sim/record"
)

// settle asks the client for the fence of cmd, whose outcome is unknown, when the scenario
// enables fences: the same calls as client.Settle (wire.FailedConn names the connection,
// engine.Engine.Settle waits for its fence). The caller does not wait for the answer; the
// record (Result.Settles) keeps it for the fence checker, which holds that a command never
// executes after its fence was acknowledged. cmd.Err is read now, before cmd is reused.
func (wl *Callers) settle(cmd *engine.Command) {
	w := wl.w
	if !w.Scenario.Client.EnableFences || cmd.Err == nil {
		return
	}
	_, conn, ok := wire.FailedConn(cmd.Err)
	if !ok {
		// A command timeout with the connection still up: client.Settle answers ErrNoIdentity.
		return
	}
	i := len(w.Result.Settles)
	w.Result.Settles = append(w.Result.Settles, record.Settle{CmdID: cmd.ID, Conn: conn, Asked: w.Sched.Now()})
	w.Trace.End(w.Trace.Begin("op settle").Uint("id", cmd.ID).Uint("conn", uint64(conn)))
	w.Engine.Settle(conn, func(g engine.Grant) {
		s := &w.Result.Settles[i]
		if s.Outcome != record.SettlePending {
			return
		}
		s.Answered = w.Sched.Now()
		switch {
		case g.Outcome == fsm.OutcomeGranted:
			s.Outcome = record.SettleGranted
		case g.Outcome == fsm.OutcomeClosed:
			s.Outcome = record.SettleClosed
		default:
			s.Outcome = record.SettleRefused
			if g.Err != nil {
				s.Err = g.Err.Error()
			}
		}
		b := w.Trace.Begin("op settled").Uint("id", s.CmdID).Str("outcome", s.Outcome.String())
		if s.Err != "" {
			b = b.Quoted("err", s.Err)
		}
		w.Trace.End(b)
	})
}
