package wire

import "github.com/respire-go/respire/engine"

// MOVING handoff (spec "Maintenance notifications"): when the replacement of a connection that
// received MOVING is ready, the old connection drains, and the commands it accepted but never
// began to write move to the replacement with their deadlines, instead of draining with the rest.
//
// Only the queue side can prove that a command was never written: a queued command is one the
// writer has not taken yet, so not a byte of it left. Everything else stays on the old
// connection: the commands the writer took (it may be writing them right now), the commands in
// flight, and those the caller wrote itself (AcceptDirect). The never-replay rule wins any doubt.

// Stays reports whether cmd must never move to another connection during a MOVING handoff,
// whatever its stage: CLIENT ID (it names the connection it runs on, which fences rely on) and
// AUTH (a credential renewal re-authenticates the connection it was sent on, and its completion
// is judged for that connection).
func Stays(cmd *engine.Command) bool {
	return cmd.Name == "AUTH" || cmd.Name == "CLIENT ID"
}

// DrainMoving is Drain for a MOVING handoff: the connection stops taking commands, and the
// commands still queued (accepted, never taken by the writer, so never written, at
// engine.StageBuffered) are removed and appended to dst in the order they were accepted, for the
// driver to hand to the replacement. The connection then owes only what remains, and closes once
// that is answered (Drained).
//
// The queue moves whole or not at all: when a command that Stays is queued, nothing moves and
// everything drains on the connection, because the queue does not record where the groups of
// AcceptGroup begin and end, and a group (a transaction's MULTI ... EXEC) must never be split
// across connections.
//
// It returns dst, the number of commands the connection still owes (as Drain returns accepted,
// for the driver's completion count) and whether the connection was open (a second Drain, or a
// Drain after a failure, moves and changes nothing). Queue side.
func (p *Pipeline) DrainMoving(dst []*engine.Command) (moved []*engine.Command, accepted uint64, ok bool) {
	if p.state != pipelineOpen {
		return dst, p.accepted, false
	}
	p.state = pipelineDraining
	for _, cmd := range p.queue {
		if Stays(cmd) {
			return dst, p.accepted, true
		}
	}
	dst = append(dst, p.queue...)
	p.accepted -= uint64(len(p.queue))
	clear(p.queue)
	p.queue = p.queue[:0]
	return dst, p.accepted, true
}
