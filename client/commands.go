package client

import (
	"context"
	"time"

	"github.com/respire-go/respire/engine"
	"github.com/respire-go/respire/netio/resp"
)

// begin starts a frame of n arguments, the first being the command name, for a command whose
// replies have the shape expect (respire's own commands: MULTI, EXEC, CLIENT ID, ...).
func (cl *call) begin(name string, n int, expect engine.Shape) {
	cl.cmd.Name = name
	cl.cmd.Expect = expect
	cl.cmd.Frame = resp.AppendArrayHeader(cl.cmd.Frame[:0], n)
	cl.cmd.Frame = resp.AppendBulkString(cl.cmd.Frame, name)
}

func (cl *call) arg(s string)   { cl.cmd.Frame = resp.AppendBulkString(cl.cmd.Frame, s) }
func (cl *call) argInt(n int64) { cl.cmd.Frame = resp.AppendBulkInt(cl.cmd.Frame, n) }

// run executes a prepared call and hands its reply to decode. Server error replies become
// *ServerError; the call is recycled afterwards.
func (c *Client) run(ctx context.Context, cl *call, decode func(v *resp.Value) error) error {
	var err error
	if c.hooks == nil {
		err = c.execute(ctx, cl)
	} else {
		err = c.hookCommand(ctx, cl, viaExecute, nil, nil)
	}
	if err != nil {
		return err
	}
	v := &cl.cmd.Reply
	err = c.replyErrAt(cl.cmd.Name, v, c.endpointFor(&cl.cmd))
	if err == nil {
		err = decode(v)
	}
	c.putCall(cl)
	return err
}

// Do sends a raw command on a shared connection and returns its reply, which owns its memory.
// Arguments may be string, []byte, int, int64, uint64, float64 or bool; the command name and
// subcommand are recognised from their bytes, whatever type carries them, in any letter case.
// An error reply is returned as a *ServerError.
//
// Do refuses, before anything is sent:
//   - high-risk commands (AdminCommands) with ErrAdminDisabled unless Options.AllowAdmin;
//   - commands that change the state of the connection that runs them, with a
//     *SessionCommandError (errors.Is ErrSessionCommand) naming the alternative. The
//     connection is shared: other callers' commands travel on it, so a change of database,
//     user or protocol, a transaction, a subscription or a suppressed reply would reach them
//     too (wrong values, lost writes, mis-paired replies). They are MULTI, EXEC, DISCARD,
//     WATCH, UNWATCH, SELECT, AUTH, HELLO, RESET, READONLY, READWRITE, ASKING, QUIT,
//     MONITOR, SYNC, PSYNC, REPLCONF, SCRIPT DEBUG, the CLIENT subcommands REPLY, SETNAME,
//     SETINFO, TRACKING, CACHING, NO-EVICT and NO-TOUCH, and the subscribe family. Use
//     Options.Database, Options.ClientName, the credential options, a Batch with
//     Commands.Atomic, Client.Watch and DedicatedConn.Exec, Client.Subscribe, or a dedicated
//     connection (Client.Dedicated) and its typed session methods (Select, ClientSetName, ...).
//
// Blocking commands (BLPOP, XREAD BLOCK, WAIT, ...) run on a rented dedicated connection, with
// no reply budget (see DedicatedConn.Do). Commands respire does not know (module commands, or
// commands newer than Redis 7.2) are sent as they are.
//
// With Options.KeyPrefix, the command's keys are prefixed and the keys of its reply are not
// (see View.Do): the command table says where the keys are.
func (c *Client) Do(ctx context.Context, args ...any) (resp.Value, error) {
	return c.do(ctx, c.ns, args)
}

// do is Client.Do in a namespace (Options' prefixes, or a View's).
func (c *Client) do(ctx context.Context, ns *namespace, args []any) (resp.Value, error) {
	return c.doAs(ctx, ns, 0, args)
}

// doAs is do under a view's read policy (policy plus one; 0 for the client's).
func (c *Client) doAs(ctx context.Context, ns *namespace, policy uint8, args []any) (resp.Value, error) {
	cl, info, err := c.rawCall(args)
	if err != nil {
		return resp.Value{}, err
	}
	cl.policy = policy
	if info != nil && info.SessionChanging() {
		c.putCall(cl)
		return resp.Value{}, refuseShared(info, pathShared)
	}
	rk := replyNoKeys
	if ns != nil {
		if rk, err = ns.applyTo(cl, info); err != nil {
			c.putCall(cl)
			return resp.Value{}, err
		}
	}
	if cl.blocking {
		// A blocking command would hold up a shared connection: it runs on a dedicated one.
		return c.doDedicated(ctx, cl, info, ns, rk)
	}
	var out resp.Value
	err = c.run(ctx, cl, func(v *resp.Value) error {
		out = ownReply(v)
		return nil
	})
	return stripOwned(ns, out, rk), err
}

// stripOwned removes the key prefix from the keys of a raw reply the caller owns.
func stripOwned(ns *namespace, v resp.Value, rk replyKeys) resp.Value {
	if rk == replyNoKeys || v.IsError() {
		return v
	}
	return ns.strip(&v, rk)
}

// SET is written by hand: its reply's shape depends on its options (OK, OK or null with NX
// and XX, the previous value with GET).

// SetOptions are the options of SET.
type SetOptions struct {
	// TTL sets an expiry (EX or PX, millisecond precision); zero means none.
	TTL time.Duration
	// ExpireAt sets an absolute expiry (EXAT or PXAT, millisecond precision); the zero Time
	// means none. It cannot be combined with TTL or KeepTTL.
	ExpireAt time.Time
	// KeepTTL retains the key's existing expiry (KEEPTTL).
	KeepTTL bool
	// NX sets only if the key does not exist; XX only if it does.
	NX, XX bool
	// Get returns the previous value (GET).
	Get bool
}

// SetResult is the result of SET with options.
type SetResult struct {
	// Set is false when NX or XX prevented the write.
	Set bool
	// Previous is the previous value, with SetOptions.Get.
	Previous Optional[string]
}

func encSet(e *enc, key, value string) {
	e.begin(cmdSet, okShape, 3)
	e.str(key)
	e.str(value)
}

// Set sets key to value.
func (c Commands) Set(ctx context.Context, key, value string) error {
	cl, e := c.prepare()
	encSet(&e, key, value)
	_, err := run(ctx, c.x, cl, &e, decOK)
	return err
}

// Set queues SET key value in the batch; see Commands.Set.
func (b *Batch) Set(key, value string) *Future[None] {
	e := b.encoder()
	encSet(&e, key, value)
	return queue(b, &e, decOK)
}

// encSetWithOptions encodes SET with options and returns the decoder of its reply.
func encSetWithOptions(e *enc, key, value string, opt SetOptions) func(*resp.Value) (SetResult, error) {
	shape, dec := okShape, decSetPlain
	switch {
	case opt.Get && opt.NX:
		shape, dec = bulkShape, decSetGetNX
	case opt.Get && opt.XX:
		shape, dec = bulkShape, decSetGetXX
	case opt.Get:
		shape, dec = bulkShape, decSetGet
	case opt.NX || opt.XX:
		shape, dec = okOrNullShape, decSetCond
	}
	e.begin(cmdSet, shape, -1)
	e.str(key)
	e.str(value)
	if opt.NX && opt.XX {
		e.fail("SetOptions", "NX and XX are mutually exclusive")
	}
	expiries := 0
	for _, b := range []bool{opt.TTL != 0, !opt.ExpireAt.IsZero(), opt.KeepTTL} {
		if b {
			expiries++
		}
	}
	if opt.TTL < 0 || expiries > 1 {
		e.fail("SetOptions", "TTL must be positive, and TTL, ExpireAt and KeepTTL exclude each other")
	}
	if !e.expiry(opt.TTL, opt.ExpireAt) && opt.KeepTTL {
		e.str("KEEPTTL")
	}
	if opt.NX {
		e.str("NX")
	}
	if opt.XX {
		e.str("XX")
	}
	if opt.Get {
		e.str("GET")
	}
	return dec
}

func decSetPlain(v *resp.Value) (SetResult, error) { return SetResult{Set: true}, okReply(v) }

// decSetCond: with NX or XX, null means that the condition prevented the write.
func decSetCond(v *resp.Value) (SetResult, error) {
	if v.Kind == resp.KindNull {
		return SetResult{}, nil
	}
	return SetResult{Set: true}, okReply(v)
}

// With GET, a null reply means either no previous value or no write; NX and XX decide.
func decSetGet(v *resp.Value) (SetResult, error)   { return setGet(v, false, false) }
func decSetGetNX(v *resp.Value) (SetResult, error) { return setGet(v, true, false) }
func decSetGetXX(v *resp.Value) (SetResult, error) { return setGet(v, false, true) }

func setGet(v *resp.Value, nx, xx bool) (SetResult, error) {
	prev, had, err := stringReply("SET", v)
	return SetResult{Set: !(nx && had) && !(xx && !had), Previous: Optional[string]{Value: prev, Valid: had}}, err
}

// SetWithOptions runs SET with options. set is false when NX or XX prevented the write. With
// opt.Get, previous and hadPrevious report the old value.
func (c Commands) SetWithOptions(ctx context.Context, key, value string, opt SetOptions) (set bool, previous string, hadPrevious bool, err error) {
	cl, e := c.prepare()
	dec := encSetWithOptions(&e, key, value, opt)
	r, err := run(ctx, c.x, cl, &e, dec)
	return r.Set, r.Previous.Value, r.Previous.Valid, err
}

// SetWithOptions queues SET with options in the batch; see Commands.SetWithOptions.
func (b *Batch) SetWithOptions(key, value string, opt SetOptions) *Future[SetResult] {
	e := b.encoder()
	dec := encSetWithOptions(&e, key, value, opt)
	return queue(b, &e, dec)
}
