package client

import (
	"context"
	"time"

	"github.com/respire-go/respire/engine"
	"github.com/respire-go/respire/internal/command"
	"github.com/respire-go/respire/netio/resp"
)

// Blocking commands run on a dedicated connection with no reply budget: the server-side block
// time and the caller's context are their only bounds (CommandTimeout does not apply). When the
// context ends while one waits, the command may already have been accepted, and even have taken
// an element: it is never resent. Without DedicatedPoolOptions.UnblockOnCancel the call returns
// an *UnknownOutcomeError wrapping the context's error and the connection is discarded. With
// it, respire sends CLIENT UNBLOCK <id> TIMEOUT through a multiplexed connection and drains the
// blocked reply within UnblockBudget: the connection is kept, and the call returns the
// context's error when the command took nothing, or its result (with a nil error) when it
// completed first. If the cleanup does not finish in time the connection is discarded and the
// outcome is unknown.

// The blocking commands below are written by hand to keep the result lists they had before
// the generated surface; they are still one definition each, shared by Client (which rents a
// dedicated connection for the call) and DedicatedConn.

func encBlockingPop(e *enc, s *cmdSpec, timeout time.Duration, keys []string) {
	e.begin(s, engine.ShapeOf(resp.KindArray, resp.KindNull).Elems(2), 2+len(keys))
	e.need("keys", len(keys))
	e.strs(keys)
	e.timeout(timeout)
}

// BLPop removes and returns the first element of the first non-empty list among keys, waiting
// up to timeout for one (zero waits indefinitely, bounded only by ctx). ok is false when the
// timeout expired.
func (c Commands) BLPop(ctx context.Context, timeout time.Duration, keys ...string) (key, value string, ok bool, err error) {
	cl, e := c.prepare()
	encBlockingPop(&e, cmdBlpop, timeout, keys)
	r, err := run(ctx, c.x, cl, &e, decKeyValue)
	return r.Value.Key, r.Value.Value, r.Valid, err
}

// BRPop is BLPop taking the last element.
func (c Commands) BRPop(ctx context.Context, timeout time.Duration, keys ...string) (key, value string, ok bool, err error) {
	cl, e := c.prepare()
	encBlockingPop(&e, cmdBrpop, timeout, keys)
	r, err := run(ctx, c.x, cl, &e, decKeyValue)
	return r.Value.Key, r.Value.Value, r.Valid, err
}

func encBlockingZPop(e *enc, s *cmdSpec, timeout time.Duration, keys []string) {
	e.begin(s, engine.ShapeOf(resp.KindArray, resp.KindNull).Elems(3), 2+len(keys))
	e.need("keys", len(keys))
	e.strs(keys)
	e.timeout(timeout)
}

// BZPopMin removes and returns the member with the lowest score of the first non-empty sorted
// set among keys, waiting up to timeout (zero waits indefinitely). ok is false when the
// timeout expired.
func (c Commands) BZPopMin(ctx context.Context, timeout time.Duration, keys ...string) (key, member string, score float64, ok bool, err error) {
	cl, e := c.prepare()
	encBlockingZPop(&e, cmdBzpopmin, timeout, keys)
	r, err := run(ctx, c.x, cl, &e, decKeyMember)
	return r.Value.Key, r.Value.Member, r.Value.Score, r.Valid, err
}

// BZPopMax is BZPopMin taking the member with the highest score.
func (c Commands) BZPopMax(ctx context.Context, timeout time.Duration, keys ...string) (key, member string, score float64, ok bool, err error) {
	cl, e := c.prepare()
	encBlockingZPop(&e, cmdBzpopmax, timeout, keys)
	r, err := run(ctx, c.x, cl, &e, decKeyMember)
	return r.Value.Key, r.Value.Member, r.Value.Score, r.Valid, err
}

// XReadBlock runs XREAD BLOCK: it returns the entries after the given ids, waiting up to
// args.Block for one to arrive (zero waits indefinitely, bounded only by the context). It
// returns nil and no error when the block time expired.
func (c Commands) XReadBlock(ctx context.Context, args XReadArgs) ([]XStream, error) {
	cl, e := c.prepare()
	e.begin(cmdXread, streamsShape, -1)
	args.write(&e, true)
	return run(ctx, c.x, cl, &e, decXStreams)
}

// XReadGroupBlock runs XREADGROUP BLOCK: it reads entries for a consumer of a group, waiting up
// to args.Block for one to arrive (zero waits indefinitely, bounded only by the context). It
// returns nil and no error when the block time expired.
func (c Commands) XReadGroupBlock(ctx context.Context, args XReadGroupArgs) ([]XStream, error) {
	cl, e := c.prepare()
	e.begin(cmdXreadgroup, streamsShape, -1)
	args.write(&e, true)
	return run(ctx, c.x, cl, &e, decXStreams)
}

// runBlocking executes a prepared blocking command and decodes its reply (raw commands).
func (d *DedicatedConn) runBlocking(ctx context.Context, cl *call, decode func(v *resp.Value) error) error {
	var err error
	if d.c.hooks == nil {
		err = d.exchangeBlocking(ctx, cl)
	} else {
		err = d.c.hookCommand(ctx, cl, viaBlocking, nil, d)
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

// exchangeBlocking sends a prepared blocking command and waits for its reply, with no reply
// budget. nil means cl.cmd.Reply holds the reply and the caller recycles cl. With
// UnblockOnCancel, the connection's CLIENT ID is fetched with the first blocking command of the
// rent, pipelined ahead of it (no extra round trip), and a cancelled command that took nothing
// returns the context's error.
func (d *DedicatedConn) exchangeBlocking(ctx context.Context, cl *call) error {
	if err := d.acquire(); err != nil {
		d.c.putCall(cl)
		return err
	}
	defer d.release()
	if err := ctx.Err(); err != nil {
		// Nothing was sent: a definite failure, and the connection is untouched.
		d.c.putCall(cl)
		return err
	}
	// A replica's connection is discarded on cancellation: CLIENT UNBLOCK would go to the primary.
	unblock := d.c.opts.DedicatedPool.UnblockOnCancel && d.eng == nil
	cls := make([]*call, 0, 2)
	if unblock && !d.idAsked {
		d.idAsked = true
		id := d.c.getCall()
		id.begin("CLIENT", 2, intShape)
		id.arg("ID")
		cls = append(cls, id)
	}
	cls = append(cls, cl)
	d.send(cls)
	cancelled := false
	if d.c.sim != nil {
		// A simulated client waits through the host (UnblockOnCancel is refused there).
		n, _ := d.c.awaitCallsSim(ctx, cls, 0, relaxOf{}) // simseam_dedicated.go
		for _, x := range cls[:n] {
			d.noteServerID(x)
		}
		if n < len(cls) {
			return d.abandon(cls, n, ctx.Err())
		}
	} else {
		for i, x := range cls {
			select {
			case <-x.done:
				d.noteServerID(x)
				continue
			case <-ctx.Done():
			}
			if !unblock {
				return d.abandon(cls, i, ctx.Err())
			}
			ok, pending := d.unblock(cls, i)
			if !ok {
				return d.abandon(cls, pending, ctx.Err())
			}
			cancelled = true
			break
		}
	}
	if err := d.settle(cls); err != nil {
		return err
	}
	d.recycle(cls[:len(cls)-1])
	if v := &cl.cmd.Reply; cancelled && v.Kind == resp.KindNull {
		// Unblocked before it took anything: the cancellation is the answer.
		d.c.putCall(cl)
		return ctx.Err()
	}
	if d.roleSwitch != nil && !cancelled {
		if handled, err := d.roleSwitch(ctx, cl); handled { // replica_fallback.go
			return err
		}
	}
	return nil
}

// noteServerID records the reply of a CLIENT ID call.
func (d *DedicatedConn) noteServerID(cl *call) {
	if cl.cmd.Name == "CLIENT" && cl.cmd.Err == nil && cl.cmd.Reply.Kind == resp.KindInteger {
		d.serverID = cl.cmd.Reply.Int
	}
}

// unblock runs the UnblockOnCancel cleanup for the calls cls[from:], whose last one is the
// blocked command: learn the connection's CLIENT ID if its call is still pending, send CLIENT
// UNBLOCK <id> TIMEOUT on a multiplexed connection, and wait for the blocked reply, all within
// UnblockBudget. It reports whether every call completed; if not, pending is the first call
// still pending, for the caller to abandon.
func (d *DedicatedConn) unblock(cls []*call, from int) (ok bool, pending int) {
	until := time.Now().Add(UnblockBudget)
	deadline := time.NewTimer(UnblockBudget)
	defer deadline.Stop()
	last := len(cls) - 1
	for i := from; i < last; i++ {
		select {
		case <-cls[i].done:
			d.noteServerID(cls[i])
		case <-deadline.C:
			return false, i
		}
	}
	if d.serverID <= 0 {
		return false, last
	}
	uctx, cancel := context.WithDeadline(context.Background(), until)
	// respire's own cleanup, not the application's: it bypasses the admin guard that
	// CLIENT UNBLOCK (@admin) is under on Client.Do.
	cl := d.c.getCall()
	cl.begin("CLIENT", 4, intShape)
	cl.arg("UNBLOCK")
	cl.argInt(d.serverID)
	cl.arg("TIMEOUT")
	err := d.c.run(uctx, cl, func(v *resp.Value) error {
		_, err := intReply("CLIENT UNBLOCK", v)
		return err
	})
	cancel()
	if err == nil {
		select {
		case <-cls[last].done:
			return true, 0
		case <-deadline.C:
		}
	}
	return false, last
}

// doDedicated runs a raw blocking call, already encoded and classified, on a rented dedicated
// connection (Client.Do routes blocking commands here so that they never hold up a multiplexed
// connection). The call's frame is already in the namespace ns; rk says where its reply holds
// keys.
func (c *Client) doDedicated(ctx context.Context, cl *call, info *command.Info, ns *namespace, rk replyKeys) (out resp.Value, err error) {
	sent := false
	rent, err := c.rentFor(cl)
	if err != nil {
		c.putCall(cl)
		return out, err
	}
	err = rent(ctx, func(d *DedicatedConn) error {
		sent = true
		out, err = d.doCall(ctx, cl, info)
		return err
	})
	if !sent {
		c.putCall(cl) // the rent failed: the call never reached a connection
	}
	return stripOwned(ns, out, rk), err
}
