package client

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/errors"

	"github.com/respire-go/respire/engine"
	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/internal/command"
	"github.com/respire-go/respire/netio/resp"
)

// Errors of dedicated connections; match them with errors.Is.
var (
	// ErrDedicatedClosed: the DedicatedConn was closed (returned to the pool) or discarded after
	// a failure. Rent another one.
	ErrDedicatedClosed = sentinel("respire: dedicated connection already closed or discarded")
	// ErrDedicatedBusy: a DedicatedConn carries one call at a time; another goroutine is using it.
	ErrDedicatedBusy = sentinel("respire: dedicated connection in use by another call")
)

// episodeBases hands every client its own range of dedicated episode ids, so that
// ConnectionStateChange.Episode is unique in the process.
var episodeBases atomic.Uint64

// episodeRange is the number of episode ids reserved for one client.
const episodeRange = 1 << 32

func nextEpisodeBase() uint64 { return (episodeBases.Add(1) - 1) * episodeRange }

// DedicatedConn is an exclusive connection rented from the client's dedicated pool: a
// connection of its own for blocking commands, WATCH/MULTI/EXEC transactions and anything else
// that needs server-side session state. Rent one with Client.Dedicated (or let
// Client.WithDedicated manage it) and Close it to give it back.
//
// A DedicatedConn carries one call at a time: a concurrent call fails with ErrDedicatedBusy.
// It is discarded, instead of being returned for reuse, when a call fails on the connection,
// when a caller abandons a command the connection already accepted (a cancelled context, an
// expired CommandTimeout), and when raw commands, directly or inside a transaction, changed
// connection state that the next renter must not inherit (SELECT, AUTH, HELLO, RESET,
// READONLY, READWRITE, ASKING, CLIENT SETNAME, TRACKING, CACHING, NO-EVICT, ...; see Do).
// Calls on a discarded or closed DedicatedConn fail with ErrDedicatedClosed.
//
// The typed commands of the embedded Commands run on the connection; so do the methods that
// change its state (Select, ClientSetName, ReadOnly, ...), which exist only here.
//
// Commands on a DedicatedConn are never retried or replayed, like every command of respire.
type DedicatedConn struct {
	Commands
	c    *Client
	id   fsm.ConnID
	conn engine.Conn
	// eng and ep are the replica engine and endpoint of a blocking read's connection
	// (replica_blocking.go); nil for the client's own.
	eng *engine.Engine
	ep  Endpoint

	busy      atomic.Bool
	closed    atomic.Bool
	discarded bool
	// watching: WATCH is in effect (cleared by EXEC, DISCARD and UNWATCH).
	watching bool
	// dirty: raw commands changed session state; the connection is discarded on Close.
	dirty bool
	// serverID is the connection's CLIENT ID once fetched (UnblockOnCancel); idAsked says that
	// it was asked for.
	serverID int64
	idAsked  bool
	// roleSwitch, set on a routed blocking read's connection under a preferred policy, runs
	// that read once on a connection of the other role after LOADING, MASTERDOWN or
	// CLUSTERDOWN (replica_fallback.go).
	roleSwitch func(ctx context.Context, cl *call) (handled bool, err error)
}

// Dedicated rents an exclusive connection. A healthy idle connection is reused at once;
// otherwise the rent makes one immediate connection attempt and, with a ReconnectPolicy,
// retries failed attempts in an episode of its own (MaxAttempts counts the retries: a limit of
// two allows three attempts). ctx bounds the whole rent, delays and handshakes included; each
// attempt keeps ConnectTimeout. Cancelling one rent never cancels another.
//
// Errors: ctx's error when it ends first; a *ReconnectLimitError (errors.Is ErrReconnectLimit)
// wrapping the last connection failure when the rent exhausted its attempts (the pool stays
// usable: the next rent starts afresh); a *ConnectionError at once, without retry, for a
// permanent rejection such as WRONGPASS, NOAUTH, NOPERM or ERR during the handshake (errors.As
// reaches the *ServerError), a TLS authentication failure or a protocol error; a *TimeoutError
// of stage StageConnecting when ConnectTimeout expired and no policy retries it; ErrClosed when
// the client is closed, which also stops pending rents.
//
// Close the returned connection when done.
//
// On a Cluster client the connection goes to any primary; use DedicatedFor for the node of a
// key.
func (c *Client) Dedicated(ctx context.Context) (*DedicatedConn, error) {
	return c.dedicatedSlot(ctx, engine.Keyless)
}

// awaitGrant waits for the answer to eng's rent id. When ctx ends first the rent is withdrawn: the
// machine answers every rent exactly once, so the answer comes (cancelled, or whatever won the
// race), and a connection granted meanwhile is returned.
func awaitGrant(ctx context.Context, eng *engine.Engine, id fsm.WaiterID, answer <-chan engine.Grant) (engine.Grant, error) {
	select {
	case g := <-answer:
		return g, nil
	case <-ctx.Done():
		eng.Cancel(fsm.MachinePool, id)
		if g := <-answer; g.Outcome == fsm.OutcomeGranted {
			eng.Return(g.ConnID, true)
		}
		return engine.Grant{}, ctx.Err()
	}
}

// granted checks the answer to a rent of eng: an error naming ep unless it granted a live
// connection (a granted connection already gone is returned).
func (c *Client) granted(eng *engine.Engine, g engine.Grant, ep Endpoint) error {
	if g.Outcome != fsm.OutcomeGranted {
		return acquireFailure(ep, c.opts.ConnectTimeout, &engine.AcquireError{Outcome: g.Outcome, Err: g.Err})
	}
	if g.Conn == nil {
		eng.Return(g.ConnID, false)
		return &ConnectionError{Endpoint: ep, Err: errors.New("respire: granted dedicated connection is gone")}
	}
	return nil
}

// dedicatedSlot rents a dedicated connection to the Cluster node serving slot (any primary for
// engine.Keyless, and the endpoint of a standalone client).
func (c *Client) dedicatedSlot(ctx context.Context, slot int) (*DedicatedConn, error) {
	if c.closed.Load() {
		return nil, ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	answer := make(chan engine.Grant, 1)
	id := c.eng.RentSlot(slot, func(g engine.Grant) { answer <- g })
	var g engine.Grant
	if c.sim != nil {
		var err error
		if g, err = c.rentSim(ctx, id, answer); err != nil { // simseam_dedicated.go
			return nil, err
		}
	} else {
		var err error
		if g, err = awaitGrant(ctx, c.eng, id, answer); err != nil {
			return nil, err
		}
	}
	if err := c.granted(c.eng, g, c.ep); err != nil {
		return nil, err
	}
	d := &DedicatedConn{c: c, id: g.ConnID, conn: g.Conn}
	d.Commands = Commands{x: d}
	return d, nil
}

// WithDedicated rents a dedicated connection, calls fn with it and gives it back (discarding it
// if fn or a command left it unusable, or if fn panics). It returns the rent's error or fn's.
func (c *Client) WithDedicated(ctx context.Context, fn func(d *DedicatedConn) error) (err error) {
	d, err := c.Dedicated(ctx)
	if err != nil {
		return err
	}
	return c.withRented(d, fn)
}

// Close gives the connection back to the pool: kept for reuse if it is healthy (subject to
// DedicatedPoolOptions.MaximumIdle), closed otherwise. A WATCH still in effect is cleared with
// UNWATCH, pipelined ahead of the next renter's commands. Close is idempotent and always
// returns nil.
func (d *DedicatedConn) Close() error {
	if !d.closed.CompareAndSwap(false, true) {
		return nil
	}
	healthy := !d.dirty && !d.busy.Load()
	if healthy && d.watching {
		cl := d.c.getCall()
		cl.begin("UNWATCH", 1, okShape)
		cl.cmd.Reset()
		if d.c.sim != nil {
			cl.cmd.ID = d.c.sim.CommandID()
		}
		// Nobody waits for the reply: the completion recycles the call.
		cl.cmd.Leave()
		cl.cmd.Enqueued()
		d.conn.Send(&cl.cmd)
		d.watching = false
	}
	d.engine().Return(d.id, healthy)
	return nil
}

// discard gives the connection back as unusable: the pool closes it.
func (d *DedicatedConn) discard() {
	if d.closed.CompareAndSwap(false, true) {
		d.discarded = true
		d.engine().Return(d.id, false)
	}
}

// ConnID returns the process-local id of the connection (the id lifecycle observations and
// diagnostics use).
func (d *DedicatedConn) ConnID() uint64 { return uint64(d.id) }

// acquire claims the connection for one call.
func (d *DedicatedConn) acquire() error {
	if d.closed.Load() {
		return ErrDedicatedClosed
	}
	if d.c.closed.Load() {
		return ErrClosed
	}
	if !d.busy.CompareAndSwap(false, true) {
		return ErrDedicatedBusy
	}
	if d.closed.Load() {
		d.busy.Store(false)
		return ErrDedicatedClosed
	}
	return nil
}

func (d *DedicatedConn) release() { d.busy.Store(false) }

// budget is the reply budget of an ordinary command on the connection.
func (d *DedicatedConn) budget() time.Duration {
	if t := d.c.opts.CommandTimeout; t > 0 {
		return t
	}
	return 0
}

// send hands the calls to the connection back to back: its writer sends them in one batch.
func (d *DedicatedConn) send(cls []*call) {
	for _, cl := range cls {
		cl.cmd.Reset()
		if d.c.sim != nil {
			// The simulated nodes log the commands that carry an id (simseam.go).
			cl.cmd.ID = d.c.sim.CommandID()
		}
		cl.cmd.Enqueued()
		d.conn.Send(&cl.cmd)
	}
}

// roundTrip sends the calls pipelined and waits for all their replies, bounded by budget (zero:
// no reply budget, for blocking commands) and ctx. On success every call holds its reply and the
// caller recycles them (recycle). On failure the calls are already recycled (or left to their
// completion), the connection is discarded, and the error concerns the last call, the one that
// matters (the blocking command, EXEC).
func (d *DedicatedConn) roundTrip(ctx context.Context, budget time.Duration, cls []*call) error {
	if err := ctx.Err(); err != nil {
		// Nothing was sent: a definite failure, and the connection is untouched.
		d.recycle(cls)
		return err
	}
	d.send(cls)
	if d.c.sim != nil {
		return d.roundTripSim(ctx, budget, cls) // simseam_dedicated.go
	}
	// The budget may be extended while the connection is in a maintenance window, as a
	// single command's on a shared connection (groupDeadline, maint.go).
	var gd groupDeadline
	gd.arm(budget)
	defer gd.stop()
	timeout := gd.fired()
	relax := relaxOf{conn: d.conn}
	for i := 0; i < len(cls); {
		select {
		case <-cls[i].done:
			i++
		case <-ctx.Done():
			return d.abandon(cls, i, ctx.Err())
		case at := <-timeout:
			if gd.expired(relax.relax(), at) {
				return d.abandon(cls, i, nil)
			}
		case <-gd.shrunk:
			if gd.expired(relax.relax(), time.Time{}) {
				return d.abandon(cls, i, nil)
			}
		}
	}
	return d.settle(cls)
}

// settle checks completed calls for connection failures.
func (d *DedicatedConn) settle(cls []*call) error {
	last := &cls[len(cls)-1].cmd
	if last.Err == nil {
		return nil
	}
	ep := d.endpoint()
	if s := last.Sender(); s != (engine.Endpoint{}) {
		ep = endpointOf(s)
	}
	err := d.c.commandFailureOn(last, ep)
	d.recycle(cls)
	d.discard()
	return err
}

// abandon gives up waiting for cls[from:]: the connection still owns them and may execute them,
// so it is discarded. The calls are recycled now (completed ones) or by their completion.
func (d *DedicatedConn) abandon(cls []*call, from int, ctxErr error) error {
	last := cls[len(cls)-1]
	name := last.cmd.Name
	stage := stageOf(last.cmd.Stage())
	for i, cl := range cls {
		if i >= from && cl.cmd.Leave() {
			continue // its completion recycles it
		}
		if i >= from {
			<-cl.done // it completed meanwhile
		}
		d.c.putCall(cl)
	}
	d.discard()
	if ctxErr != nil {
		return &UnknownOutcomeError{CommandName: name, Endpoint: d.endpoint(), Stage: stage, Err: ctxErr}
	}
	return d.c.timeoutErr(name, stage)
}

func (d *DedicatedConn) recycle(cls []*call) {
	for _, cl := range cls {
		d.c.putCall(cl)
	}
}

// run executes one prepared ordinary command and decodes its reply; error replies become
// *ServerError.
func (d *DedicatedConn) run(ctx context.Context, cl *call, decode func(v *resp.Value) error) error {
	if err := d.acquire(); err != nil {
		d.c.putCall(cl)
		return err
	}
	defer d.release()
	var err error
	if d.c.hooks == nil {
		cls := [1]*call{cl}
		err = d.roundTrip(ctx, d.budget(), cls[:])
	} else {
		err = d.c.hookCommand(ctx, cl, viaDedicated, nil, d)
	}
	if err != nil {
		return err
	}
	v := &cl.cmd.Reply
	err = d.c.replyErr(cl.cmd.Name, v)
	if err == nil {
		err = decode(v)
	}
	d.c.putCall(cl)
	return err
}

// Do sends a raw command on the connection and returns its reply, which owns its memory.
// Arguments are encoded and classified as by Client.Do, and admin commands are refused the same
// way. Blocking commands (BLPOP, BRPOP, BLMOVE, BRPOPLPUSH, BLMPOP, BZPOPMIN, BZPOPMAX, BZMPOP,
// XREAD and XREADGROUP with BLOCK, WAIT, WAITAOF) have no reply budget: their own block time
// and ctx bound them.
//
// The connection is the caller's alone, so commands that change its state are allowed, with
// these rules:
//   - MULTI, EXEC and DISCARD are refused (*SessionCommandError): use Exec, which sends them
//     with the queued commands;
//   - the subscribe family and the commands that break the one-reply-per-command exchange
//     (MONITOR, CLIENT REPLY, QUIT, SYNC, PSYNC, SCRIPT DEBUG) are refused;
//   - WATCH and UNWATCH run; a WATCH still in effect at Close is cleared with UNWATCH;
//   - every other state change (SELECT, AUTH, HELLO, RESET, READONLY, READWRITE, ASKING,
//     CLIENT SETNAME, TRACKING, CACHING, NO-EVICT, ...) runs, and the connection is then
//     discarded at Close instead of being handed to the next renter in that state.
//
// With Options.KeyPrefix, the command's keys are prefixed and the keys of its reply are not,
// as for Client.Do.
func (d *DedicatedConn) Do(ctx context.Context, args ...any) (resp.Value, error) {
	cl, info, err := d.c.rawCall(args)
	if err != nil {
		return resp.Value{}, err
	}
	ns, rk := d.c.ns, replyNoKeys
	if ns != nil {
		if rk, err = ns.applyTo(cl, info); err != nil {
			d.c.putCall(cl)
			return resp.Value{}, err
		}
	}
	out, err := d.doCall(ctx, cl, info)
	return stripOwned(ns, out, rk), err
}

// doCall runs a raw call classified by rawCall (info is nil for an unknown command).
func (d *DedicatedConn) doCall(ctx context.Context, cl *call, info *command.Info) (resp.Value, error) {
	session := command.SessionNone
	if info != nil {
		if err := refuseDedicated(info, pathDedicated); err != nil {
			d.c.putCall(cl)
			return resp.Value{}, err
		}
		session = info.Session()
	}
	if session == command.SessionState {
		// Marked before sending: even a failed or abandoned attempt may have changed it.
		d.dirty = true
	}
	var out resp.Value
	decode := func(v *resp.Value) error {
		out = ownReply(v)
		return nil
	}
	if cl.blocking {
		err := d.runBlocking(ctx, cl, decode)
		return out, err
	}
	name := cl.cmd.Name
	err := d.run(ctx, cl, decode)
	if err == nil && session == command.SessionWatch {
		d.watching = name == "WATCH"
	}
	return out, err
}

// touch records what a typed session command does to the connection before it is sent (even
// a failed attempt may have changed it): a state change makes the connection unfit for the
// next renter, and WATCH arms a watch that Close clears.
func (d *DedicatedConn) touch(s *cmdSpec) {
	switch s.info.Session() {
	case command.SessionState:
		d.dirty = true
	}
}
