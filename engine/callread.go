package engine

import (
	"context"
	"time"
)

// CallerReader is an optional interface of a Conn: the caller that submitted a group and is
// about to wait for it may read the group's replies on its own goroutine, instead of being
// woken by the connection's reader once they arrived (netio.Conn implements it).
//
// ReadOwn reads the replies of the group led by lead, whose last command is last, on the
// calling goroutine, when the connection lets it: the group was written by that caller on an
// idle connection and nothing reads the connection meanwhile. It returns false at once,
// having read nothing, otherwise. Once it read, it returns true when last has completed, or
// false when it stopped first: deadline passed (zero: none), ctx ended, or the connection
// failed (the connection then completes what is pending, as usual). Either way the
// commands still complete through their Done, exactly once; the caller waits for them as it
// would have, and sees ctx's end there.
type CallerReader interface {
	ReadOwn(ctx context.Context, lead, last *Command, deadline time.Time) bool
}

// OwnGroupOfferer is an optional interface of a Conn that implements CallerReader.
// OfferOwnGroup is OfferGroup called on the goroutine of the group's caller, which calls
// ReadOwn for it next (SubmitGroupReadOwn): a connection that writes such a group at once can
// keep its read side for that caller without watching whether it comes to read it.
type OwnGroupOfferer interface {
	OfferOwnGroup(cmds []*Command) bool
}

// SubmitGroupReadOwn is SubmitGroup for a caller that then reads its group's replies itself,
// on the calling goroutine, when the connection that took the group lets it (see CallerReader),
// within deadline (zero: none) and until ctx ends: the connection that takes the group at once
// knows that its caller comes to read (OwnGroupOfferer). It reports whether every command of the
// group completed; on false the caller waits for the group as usual. It never reads on a
// Cluster engine, nor for a group that had to wait for a connection.
//
// It asks only the connection that took the group on this goroutine: a connection that took it
// as its caller's own (OwnGroupOfferer) waits for that caller's ReadOwn, which must therefore
// reach it even when the routing snapshot changed meanwhile.
func (e *Engine) SubmitGroupReadOwn(ctx context.Context, cmds []*Command, deadline time.Time) bool {
	if r, ok := e.submitGroup(cmds, true).(CallerReader); ok {
		return r.ReadOwn(ctx, cmds[0], cmds[len(cmds)-1], deadline)
	}
	return false
}
