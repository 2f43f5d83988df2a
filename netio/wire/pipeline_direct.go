package wire

import "github.com/respire-go/respire/engine"

// AcceptDirect accepts cmds, all of them or none, for a driver whose sender writes them itself
// at once instead of queueing them for its writer: the commands never enter the queue. The
// driver must own the writer's side (its writer idle, holding nothing) and must call
// HandoffDirect before it writes their frames.
//
// It returns the error that rejects them, as AcceptGroup does, when the connection does not
// take commands. It accepts nothing and reports false when commands wait in the queue: writing
// past them would break FIFO order, so the driver queues with AcceptGroup instead. Queue side (the
// driver also makes sure that its writer holds nothing).
func (p *Pipeline) AcceptDirect(cmds []*engine.Command) (direct bool, err error) {
	if err := p.Rejection(); err != nil {
		return false, err
	}
	if len(p.queue) > 0 {
		return false, nil
	}
	p.accepted += uint64(len(cmds))
	return true, nil
}

// HandoffDirect moves commands that AcceptDirect accepted to the flight just before their bytes
// are written, marking them engine.StageWriting, as Handoff does for the held commands. It returns
// the range of flight sequence numbers they took, for Wrote, and whether nothing was in flight
// before. Writer (the sender that owns the writer's side), under the flight side.
func (p *Pipeline) HandoffDirect(cmds []*engine.Command) (first, last uint64, wasIdle bool) {
	first = p.pushed
	wasIdle = p.flight.n == 0
	for _, cmd := range cmds {
		cmd.Writing()
		p.flight.push(cmd)
	}
	p.pushed += uint64(len(cmds))
	return first, p.pushed, wasIdle
}

// AcceptLate queues cmd on a connection that has failed (stopped, not quietly) but whose driver
// has not yet taken the queue to complete what was pending (TakeQueued): cmd then completes with the others, after
// them, with the connection's error at engine.StageBuffered. It lets a driver that must complete
// a rejected command (netio's Send) keep completions in FIFO order: a caller that sends just
// after a failure is not answered before the commands it sent earlier. It reports false, queueing
// nothing, when the connection has not failed (open, draining, or closed or drained by the
// engine: those answer at once) or the queue was already taken. Queue side.
func (p *Pipeline) AcceptLate(cmd *engine.Command) bool {
	if p.state != pipelineStopped || p.quiet || p.taken {
		return false
	}
	p.queue = append(p.queue, cmd)
	return true
}
