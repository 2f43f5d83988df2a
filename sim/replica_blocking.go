package sim

import (
	"slices"

	"github.com/respire-go/respire/engine"
	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/sim/record"
	"github.com/respire-go/respire/sim/workload"
)

// Blocking reads on replicas (issue 17), as client.Client's rentReplica runs them: a renter's
// XREAD under the client's read policy rents a dedicated connection from the server the read
// router selects (engine.ReadRoute: at most one selection per candidate), from that server's
// own engine and pool. A replica's connection must answer ROLE as a replica
// (engine.CheckReplicaRole, the client's rule) before the read is sent on it; one that does
// not is discarded, the selection is marked unusable (the replica cools down) and the read
// selects again: nothing was sent. A failed rent on a replica selects again the same way; the
// primary's answer, whatever it is, is the read's. The renter then sends XREAD on the
// connection and gives it back to the engine it came from.

// blockingRent is one blocking read's rent through the replica client.
type blockingRent struct {
	rw    *replicaWorld
	done  func(workload.ReadGrant)
	route engine.ReadRoute
	// selecting: a selection waits for a probe (polled); renting: a rent waits for its pool.
	selecting, renting bool
	eng                *engine.Engine
	target             int
	waiter             fsm.WaiterID
	grant              engine.Grant
	waiters            []fsm.WaiterID
	// checking: the ROLE check is in flight; cancelled: the renter gave up; ended: answered.
	checking, cancelled, ended bool
}

// RentRead implements workload.ReadRenter.
func (rw *replicaWorld) RentRead(done func(workload.ReadGrant)) func() {
	br := &blockingRent{rw: rw, done: done}
	if rw.policy == fsm.ReadPrimary {
		br.rentOn(0, rw.engines[0])
		return br.cancel
	}
	br.route = rw.router.Route(rw.policy, false)
	br.next()
	return br.cancel
}

// next asks the router for the next candidate.
func (br *blockingRent) next() {
	target, _, err, done := br.route.Begin()
	if !done {
		br.selecting = true
		br.rw.rents = append(br.rw.rents, br)
		return
	}
	br.selected(target, err)
}

// selected rents from the selected candidate, or ends the rent when none can take the read.
func (br *blockingRent) selected(target int, err error) {
	if err != nil {
		br.finish(nil, engine.Grant{Outcome: fsm.OutcomeFailed}, err.Error())
		return
	}
	br.rentOn(target, br.route.Engine())
}

// rentOn rents from candidate target's engine eng.
func (br *blockingRent) rentOn(target int, eng *engine.Engine) {
	br.target, br.eng, br.renting = target, eng, true
	br.waiter = eng.Rent(br.granted)
	br.waiters = append(br.waiters, fsm.WaiterID(uint64(br.waiter)+br.offset()))
}

// offset is the run's offset of the identifiers of the current candidate's engine.
func (br *blockingRent) offset() uint64 {
	if k := slices.Index(br.rw.engines, br.eng); k > 0 {
		return record.GenOffset(candidateGen(k))
	}
	return 0
}

// granted receives the pool's answer.
func (br *blockingRent) granted(g engine.Grant) {
	br.renting = false
	switch {
	case g.Outcome != fsm.OutcomeGranted && (br.cancelled || br.target == 0):
		msg := ""
		if g.Err != nil {
			msg = g.Err.Error()
		}
		br.finish(nil, g, msg)
	case g.Outcome != fsm.OutcomeGranted:
		br.route.Unusable(g.Err)
		br.next()
	case br.cancelled:
		br.eng.Return(g.ConnID, true)
		br.finish(nil, engine.Grant{Outcome: fsm.OutcomeCancelled}, "deadline")
	case br.target == 0:
		br.finish(br.eng, g, "")
	default:
		br.grant, br.checking = g, true
		cmd := &engine.Command{Name: "ROLE", Frame: roleFrame}
		cmd.Done = br.roleAnswered
		cmd.Enqueued()
		g.Conn.Send(cmd)
	}
}

// roleAnswered takes the ROLE check's answer: a replica's connection goes to the renter, any
// other is discarded and the read selects again.
func (br *blockingRent) roleAnswered(cmd *engine.Command) {
	if !br.checking {
		return
	}
	br.checking = false
	err := cmd.Err
	if err == nil {
		err = engine.CheckReplicaRole(cmd.Reply)
	}
	w := br.rw.w
	b := w.tr.Begin("dop role").Uint("conn", uint64(br.grant.ConnID)+br.offset())
	if err != nil {
		b = b.Quoted("err", err.Error())
	}
	w.tr.End(b)
	switch {
	case err == nil && !br.cancelled:
		br.finish(br.eng, br.grant, "")
		return
	case err == nil:
		br.eng.Return(br.grant.ConnID, true)
	default:
		br.eng.Return(br.grant.ConnID, false)
	}
	if br.cancelled {
		br.finish(nil, engine.Grant{Outcome: fsm.OutcomeCancelled}, "deadline")
		return
	}
	br.route.Unusable(err)
	br.next()
}

// cancel withdraws the rent (the renter's deadline): at once while selecting, else when the
// pending rent or ROLE check answers.
func (br *blockingRent) cancel() {
	if br.ended || br.cancelled {
		return
	}
	br.cancelled = true
	switch {
	case br.selecting:
		br.selecting = false
		br.rw.rents = slices.DeleteFunc(br.rw.rents, func(x *blockingRent) bool { return x == br })
		br.route.Cancel(nil)
		br.finish(nil, engine.Grant{Outcome: fsm.OutcomeCancelled}, "deadline")
	case br.renting:
		br.eng.Cancel(fsm.MachinePool, br.waiter)
	}
}

// finish answers the renter once.
func (br *blockingRent) finish(eng *engine.Engine, g engine.Grant, msg string) {
	if br.ended {
		return
	}
	br.ended = true
	rg := workload.ReadGrant{Engine: eng, Grant: g, Waiters: br.waiters, Err: msg}
	if eng != nil {
		rg.RunConn = fsm.ConnID(uint64(g.ConnID) + br.offset())
	}
	br.done(rg)
}

// pollRents moves on the blocking reads whose selection waited for a probe, and reports whether
// any moved.
func (rw *replicaWorld) pollRents() bool {
	moved := false
	for i := 0; i < len(rw.rents); {
		br := rw.rents[i]
		if br.selecting && br.route.Answered() {
			rw.rents = append(rw.rents[:i], rw.rents[i+1:]...)
			br.selecting = false
			target, _, err := br.route.Finish()
			br.selected(target, err)
			moved = true
			continue
		}
		i++
	}
	return moved
}
