package engine

import "time"

// CallerReader is an optional interface of a Conn: the caller that submitted a group and is
// about to wait for it may read the group's replies on its own goroutine, instead of being
// woken by the connection's reader once they arrived (netio.Conn implements it).
//
// ReadOwn reads the replies of the group led by lead, whose last command is last, on the
// calling goroutine, when the connection lets it: the group was written by that caller on an
// idle connection and nothing reads the connection meanwhile. It returns false at once,
// having read nothing, otherwise. Once it read, it returns true when last has completed, or
// false when it stopped first: deadline passed (zero: none), or the connection failed (the
// connection then completes what is pending, as usual). Either way the commands still
// complete through their Done, exactly once; the caller waits for them as it would have.
type CallerReader interface {
	ReadOwn(lead, last *Command, deadline time.Time) bool
}

// OwnGroupOfferer is an optional interface of a Conn that implements CallerReader.
// OfferOwnGroup is OfferGroup called on the goroutine of the group's caller, which calls
// ReadOwn for it next (SubmitGroupReadOwn): a connection that writes such a group at once can
// keep its read side for that caller without watching whether it comes to read it.
type OwnGroupOfferer interface {
	OfferOwnGroup(cmds []*Command) bool
}

// SubmitGroupReadOwn is SubmitGroup followed by ReadOwn(cmds, deadline), for a caller that
// reads its group's replies itself whenever a connection lets it: the connection that takes the
// group at once knows that its caller comes to read (OwnGroupOfferer). It reports what ReadOwn
// reports.
//
// It asks only the connection that took the group on this goroutine: a connection that took it
// as its caller's own (OwnGroupOfferer) waits for that caller's ReadOwn, which must therefore
// reach it even when the routing snapshot changed meanwhile.
func (e *Engine) SubmitGroupReadOwn(cmds []*Command, deadline time.Time) bool {
	if r, ok := e.submitGroup(cmds, true).(CallerReader); ok {
		return r.ReadOwn(cmds[0], cmds[len(cmds)-1], deadline)
	}
	return false
}

// ReadOwn lets the caller that has just submitted the group cmds (SubmitGroup) read its
// replies itself on a connection that implements CallerReader, within deadline (zero: none);
// see CallerReader. It reports whether every command of the group completed. Call it from the
// goroutine that submitted the group, before waiting for the group as usual; it never reads
// on a Cluster engine, and it returns false at once when no connection lets the caller read.
func (e *Engine) ReadOwn(cmds []*Command, deadline time.Time) bool {
	if e.cl != nil || len(cmds) == 0 {
		return false
	}
	lead, last := cmds[0], cmds[len(cmds)-1]
	s := e.snap.Load()
	for i := range s.slots {
		if r, ok := s.slots[i].conn.(CallerReader); ok && r.ReadOwn(lead, last, deadline) {
			return true
		}
	}
	return false
}
