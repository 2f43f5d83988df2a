package engine

import (
	"context"
	"time"
)

// CallerReader is an optional interface of a Conn: the caller that submitted a group and is
// about to wait for it may read the group's replies on its own goroutine, instead of being
// woken by the connection's reader once they arrived (netio.Conn implements it).
//
// MayRead reports, cheaply and without waiting for anything, whether the caller of the group led
// by lead may read its replies: false means that ReadOwn would return false at once, having read
// nothing (the group was not the last one its caller wrote directly on an idle connection, so
// the reader goroutine reads it). It must report true for a group the connection took as its
// caller's own (OwnGroupOfferer) and wrote at once.
//
// ReadOwn reads the replies of the group led by lead, whose last command is last, on the
// calling goroutine, when the connection lets it: the group was written by that caller on an
// idle connection and nothing reads the connection meanwhile. It returns false at once,
// having read nothing, otherwise. Once it read, it returns true when last has completed, or
// false when it stopped first: deadline passed (zero: none), ctx ended, the connection
// failed (the connection then completes what is pending, as usual), or last left the
// connection, nothing more in flight there (a Cluster redirect, run by the completion it read,
// sent it on). Either way the commands still complete through their Done, exactly once; the
// caller waits for them as it would have, and sees ctx's end there.
type CallerReader interface {
	MayRead(lead *Command) bool
	ReadOwn(ctx context.Context, lead, last *Command, deadline time.Time) bool
}

// OwnGroupOfferer is an optional interface of a Conn that implements CallerReader.
// OfferOwnGroup is OfferGroup called on the goroutine of the group's caller, which asks MayRead
// next and, when it reports true, calls ReadOwn (SubmitGroupReadOwn): a connection that writes
// such a group at once can keep its read side for that caller without watching whether it comes
// to read it.
type OwnGroupOfferer interface {
	OfferOwnGroup(cmds []*Command) bool
}

// SubmitReadOwn is Submit for a caller that then reads its command's reply itself, on the
// calling goroutine, when the connection that took the command lets it (see CallerReader),
// until ctx ends and within the deadline that deadline returns (nil, or a zero time: none),
// which is called only when the caller can read. own holds the command, own[0], as a group of
// one (the caller keeps the slice, so that submitting allocates nothing). It reports whether the
// command completed, and the deadline the caller read within (zero when it did not read); on
// false the caller waits for the command as usual.
//
// On a standalone engine it is SubmitGroupReadOwn. On a Cluster engine the command is routed
// as Submit routes it, redirects included: when the connection of the node serving its slot is
// ready and takes it as its caller's own (OwnGroupOfferer), the caller reads there. A reply
// that redirects the command (MOVED, ASK, TRYAGAIN...) sends it on from inside that read, to
// another node or later; the read then stops once the connection has nothing more in flight,
// and the caller waits for the command's completion wherever it runs.
func (e *Engine) SubmitReadOwn(ctx context.Context, own []*Command, deadline func() time.Time) (bool, time.Time) {
	if e.cl == nil {
		return e.SubmitGroupReadOwn(ctx, own, deadline)
	}
	return readOwn(ctx, e.submitClusterAs(own[0], own), own, deadline)
}

// SubmitGroupReadOwn is SubmitGroup for a caller that then reads its group's replies itself,
// on the calling goroutine, when the connection that took the group lets it (see CallerReader),
// until ctx ends and within the deadline that deadline returns (nil, or a zero time: none),
// which is called only when the caller can read, once the group was written: the connection
// that takes the group at once knows that its caller comes to read (OwnGroupOfferer). It
// reports whether every command of the group completed, and the deadline the caller read
// within (zero when it did not read); on false the caller waits for the group as usual. It never
// reads on a Cluster engine (whose single commands read through SubmitReadOwn), nor for a group
// that had to wait for a connection.
//
// It asks only the connection that took the group on this goroutine: a connection that took it
// as its caller's own (OwnGroupOfferer) waits for that caller's ReadOwn, which must therefore
// reach it even when the routing snapshot changed meanwhile.
func (e *Engine) SubmitGroupReadOwn(ctx context.Context, cmds []*Command, deadline func() time.Time) (bool, time.Time) {
	return readOwn(ctx, e.submitGroup(cmds, true), cmds, deadline)
}

// readOwn lets the caller of cmds, which conn took on this goroutine (nil: none did), read
// their replies when conn allows it; see SubmitGroupReadOwn.
func readOwn(ctx context.Context, conn Conn, cmds []*Command, deadline func() time.Time) (bool, time.Time) {
	r, ok := conn.(CallerReader)
	if !ok || !r.MayRead(cmds[0]) {
		return false, time.Time{}
	}
	var at time.Time
	if deadline != nil {
		at = deadline()
	}
	return r.ReadOwn(ctx, cmds[0], cmds[len(cmds)-1], at), at
}
