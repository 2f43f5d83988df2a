package client

import (
	"context"
	"strconv"
	"time"

	"github.com/cockroachdb/errors"

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

// ListEnd names the end of a list BLMOVE takes from or pushes to.
type ListEnd string

// List ends.
const (
	ListLeft  ListEnd = "LEFT"
	ListRight ListEnd = "RIGHT"
)

// blockSeconds formats a block time for the list and sorted-set commands (seconds, fractions
// allowed; zero blocks indefinitely).
func blockSeconds(timeout time.Duration) (string, error) {
	if timeout < 0 {
		return "", configErr("timeout", "must not be negative (zero blocks indefinitely)")
	}
	return strconv.FormatFloat(timeout.Seconds(), 'f', -1, 64), nil
}

// runBlocking executes a prepared blocking command. With UnblockOnCancel, the connection's
// CLIENT ID is fetched with the first blocking command of the rent, pipelined ahead of it (no
// extra round trip).
func (d *DedicatedConn) runBlocking(ctx context.Context, cl *call, decode func(v *resp.Value) error) error {
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
	unblock := d.c.opts.DedicatedPool.UnblockOnCancel
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
	if err := d.settle(cls); err != nil {
		return err
	}
	v := &cl.cmd.Reply
	err := d.c.replyErr(cl.cmd.Name, v)
	switch {
	case err != nil:
	case cancelled && v.Kind == resp.KindNull:
		// Unblocked before it took anything: the cancellation is the answer.
		err = ctx.Err()
	default:
		err = decode(v)
	}
	d.recycle(cls)
	return err
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

// BLPop removes and returns the first element of the first non-empty list among keys, waiting
// up to timeout for one (zero waits indefinitely, bounded only by ctx). ok is false when the
// timeout expired.
func (d *DedicatedConn) BLPop(ctx context.Context, timeout time.Duration, keys ...string) (key, value string, ok bool, err error) {
	return d.blockingPop(ctx, "BLPOP", timeout, keys)
}

// BRPop is BLPop taking the last element.
func (d *DedicatedConn) BRPop(ctx context.Context, timeout time.Duration, keys ...string) (key, value string, ok bool, err error) {
	return d.blockingPop(ctx, "BRPOP", timeout, keys)
}

func (d *DedicatedConn) blockingPop(ctx context.Context, name string, timeout time.Duration, keys []string) (key, value string, ok bool, err error) {
	if len(keys) == 0 {
		return "", "", false, configErr("keys", name+" needs at least one key")
	}
	secs, err := blockSeconds(timeout)
	if err != nil {
		return "", "", false, err
	}
	cl := d.c.getCall()
	cl.begin(name, 2+len(keys), engine.ShapeOf(resp.KindArray, resp.KindNull).Elems(2))
	for _, k := range keys {
		cl.arg(k)
	}
	cl.arg(secs)
	err = d.runBlocking(ctx, cl, func(v *resp.Value) error {
		if v.Kind == resp.KindNull {
			return nil
		}
		if v.Kind != resp.KindArray || v.Len() != 2 {
			return unexpected(name, v)
		}
		var err1, err2 error
		k, val := v.Elem(0), v.Elem(1)
		key, _, err1 = stringReply(name, &k)
		value, _, err2 = stringReply(name, &val)
		ok = true
		if err1 != nil {
			return err1
		}
		return err2
	})
	return key, value, ok, err
}

// BLMove atomically moves an element from one end of source to one end of destination,
// waiting up to timeout for source to have one (zero waits indefinitely). ok is false when the
// timeout expired.
func (d *DedicatedConn) BLMove(ctx context.Context, source, destination string, from, to ListEnd, timeout time.Duration) (value string, ok bool, err error) {
	if !validEnd(from) || !validEnd(to) {
		return "", false, configErr("ListEnd", "must be ListLeft or ListRight")
	}
	secs, err := blockSeconds(timeout)
	if err != nil {
		return "", false, err
	}
	cl := d.c.getCall()
	cl.begin("BLMOVE", 6, bulkShape)
	cl.arg(source)
	cl.arg(destination)
	cl.arg(string(from))
	cl.arg(string(to))
	cl.arg(secs)
	err = d.runBlocking(ctx, cl, func(v *resp.Value) error {
		var err error
		value, ok, err = stringReply("BLMOVE", v)
		return err
	})
	return value, ok, err
}

func validEnd(e ListEnd) bool { return e == ListLeft || e == ListRight }

// BZPopMin removes and returns the member with the lowest score of the first non-empty sorted
// set among keys, waiting up to timeout (zero waits indefinitely). ok is false when the
// timeout expired.
func (d *DedicatedConn) BZPopMin(ctx context.Context, timeout time.Duration, keys ...string) (key, member string, score float64, ok bool, err error) {
	if len(keys) == 0 {
		return "", "", 0, false, configErr("keys", "BZPOPMIN needs at least one key")
	}
	secs, err := blockSeconds(timeout)
	if err != nil {
		return "", "", 0, false, err
	}
	cl := d.c.getCall()
	cl.begin("BZPOPMIN", 2+len(keys), engine.ShapeOf(resp.KindArray, resp.KindNull).Elems(3))
	for _, k := range keys {
		cl.arg(k)
	}
	cl.arg(secs)
	err = d.runBlocking(ctx, cl, func(v *resp.Value) error {
		if v.Kind == resp.KindNull {
			return nil
		}
		if v.Kind != resp.KindArray || v.Len() != 3 {
			return unexpected("BZPOPMIN", v)
		}
		var err error
		k, m, sc := v.Elem(0), v.Elem(1), v.Elem(2)
		if key, _, err = stringReply("BZPOPMIN", &k); err != nil {
			return err
		}
		if member, _, err = stringReply("BZPOPMIN", &m); err != nil {
			return err
		}
		if score, err = floatReply("BZPOPMIN", &sc); err != nil {
			return err
		}
		ok = true
		return nil
	})
	return key, member, score, ok, err
}

// floatReply decodes a RESP3 double or a RESP2 numeric string.
func floatReply(name string, v *resp.Value) (float64, error) {
	if v.Kind == resp.KindDouble {
		return v.Float, nil
	}
	s, ok := textOf(v)
	if !ok {
		return 0, unexpected(name, v)
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, unexpected(name, v)
	}
	return f, nil
}

// XReadArgs are the arguments of XReadBlock.
type XReadArgs struct {
	// Streams are the streams to read and, for each, the id to read after ("$": only entries
	// added from now on; "0": from the beginning).
	Streams []XStreamOffset
	// Count bounds the entries returned per stream; zero means no COUNT.
	Count int64
	// Block is how long to wait for an entry (millisecond precision); zero waits indefinitely,
	// bounded only by the context.
	Block time.Duration
}

// XStreamOffset is one stream of an XREAD and the id to read after.
type XStreamOffset struct {
	Key, ID string
}

// XStream is the entries read from one stream.
type XStream struct {
	Key     string
	Entries []XEntry
}

// XEntry is one stream entry: its id and its field/value pairs, in order (field, value, ...).
type XEntry struct {
	ID     string
	Fields []string
}

// XReadBlock runs XREAD BLOCK: it returns the entries after the given ids, waiting up to
// args.Block for one to arrive. It returns nil and no error when the block time expired.
func (d *DedicatedConn) XReadBlock(ctx context.Context, args XReadArgs) ([]XStream, error) {
	if len(args.Streams) == 0 {
		return nil, configErr("XReadArgs.Streams", "XREAD needs at least one stream")
	}
	if args.Block < 0 || args.Count < 0 {
		return nil, configErr("XReadArgs", "Block and Count must not be negative")
	}
	n := 4 + 2*len(args.Streams)
	if args.Count > 0 {
		n += 2
	}
	cl := d.c.getCall()
	cl.begin("XREAD", n, engine.ShapeOf(resp.KindMap, resp.KindArray, resp.KindNull))
	if args.Count > 0 {
		cl.arg("COUNT")
		cl.argInt(args.Count)
	}
	cl.arg("BLOCK")
	cl.argInt(args.Block.Milliseconds())
	cl.arg("STREAMS")
	for _, s := range args.Streams {
		cl.arg(s.Key)
	}
	for _, s := range args.Streams {
		cl.arg(s.ID)
	}
	var out []XStream
	err := d.runBlocking(ctx, cl, func(v *resp.Value) error {
		var err error
		out, err = decodeXRead(v)
		return err
	})
	return out, err
}

// decodeXRead decodes XREAD's reply: a RESP3 map or a RESP2 array of [key, entries] pairs;
// null when nothing arrived.
func decodeXRead(v *resp.Value) ([]XStream, error) {
	if v.Kind == resp.KindNull {
		return nil, nil
	}
	var pairs []resp.Value
	switch v.Kind {
	case resp.KindMap:
		for i := 0; i+1 < v.Len(); i += 2 {
			pairs = append(pairs, v.Elem(i), v.Elem(i+1))
		}
	case resp.KindArray:
		for _, e := range v.All() {
			if e.Kind != resp.KindArray || e.Len() != 2 {
				return nil, unexpected("XREAD", v)
			}
			pairs = append(pairs, e.Elem(0), e.Elem(1))
		}
	default:
		return nil, unexpected("XREAD", v)
	}
	out := make([]XStream, 0, len(pairs)/2)
	for i := 0; i < len(pairs); i += 2 {
		key, _, err := stringReply("XREAD", &pairs[i])
		if err != nil {
			return nil, err
		}
		entries := &pairs[i+1]
		if entries.Kind != resp.KindArray {
			return nil, unexpected("XREAD", entries)
		}
		s := XStream{Key: key, Entries: make([]XEntry, 0, entries.Len())}
		for _, e := range entries.All() {
			if e.Kind != resp.KindArray || e.Len() != 2 {
				return nil, unexpected("XREAD", &e)
			}
			idv, fv := e.Elem(0), e.Elem(1)
			id, _, err := stringReply("XREAD", &idv)
			if err != nil {
				return nil, err
			}
			if fv.Kind != resp.KindArray && fv.Kind != resp.KindMap {
				return nil, unexpected("XREAD", &fv)
			}
			entry := XEntry{ID: id, Fields: make([]string, fv.Len())}
			for k, f := range fv.All() {
				if entry.Fields[k], _, err = stringReply("XREAD", &f); err != nil {
					return nil, err
				}
			}
			s.Entries = append(s.Entries, entry)
		}
		out = append(out, s)
	}
	return out, nil
}

// BLPop rents a dedicated connection, runs DedicatedConn.BLPop on it and gives it back.
func (c *Client) BLPop(ctx context.Context, timeout time.Duration, keys ...string) (key, value string, ok bool, err error) {
	err = c.withDedicatedKeys(ctx, "BLPOP", keys, func(d *DedicatedConn) error {
		key, value, ok, err = d.BLPop(ctx, timeout, keys...)
		return err
	})
	return key, value, ok, err
}

// BRPop rents a dedicated connection, runs DedicatedConn.BRPop on it and gives it back.
func (c *Client) BRPop(ctx context.Context, timeout time.Duration, keys ...string) (key, value string, ok bool, err error) {
	err = c.withDedicatedKeys(ctx, "BRPOP", keys, func(d *DedicatedConn) error {
		key, value, ok, err = d.BRPop(ctx, timeout, keys...)
		return err
	})
	return key, value, ok, err
}

// BLMove rents a dedicated connection, runs DedicatedConn.BLMove on it and gives it back.
func (c *Client) BLMove(ctx context.Context, source, destination string, from, to ListEnd, timeout time.Duration) (value string, ok bool, err error) {
	err = c.withDedicatedKeys(ctx, "BLMOVE", []string{source, destination}, func(d *DedicatedConn) error {
		value, ok, err = d.BLMove(ctx, source, destination, from, to, timeout)
		return err
	})
	return value, ok, err
}

// BZPopMin rents a dedicated connection, runs DedicatedConn.BZPopMin on it and gives it back.
func (c *Client) BZPopMin(ctx context.Context, timeout time.Duration, keys ...string) (key, member string, score float64, ok bool, err error) {
	err = c.withDedicatedKeys(ctx, "BZPOPMIN", keys, func(d *DedicatedConn) error {
		key, member, score, ok, err = d.BZPopMin(ctx, timeout, keys...)
		return err
	})
	return key, member, score, ok, err
}

// XReadBlock rents a dedicated connection, runs DedicatedConn.XReadBlock on it and gives it
// back.
func (c *Client) XReadBlock(ctx context.Context, args XReadArgs) (streams []XStream, err error) {
	keys := make([]string, len(args.Streams))
	for i, s := range args.Streams {
		keys[i] = s.Key
	}
	err = c.withDedicatedKeys(ctx, "XREAD", keys, func(d *DedicatedConn) error {
		streams, err = d.XReadBlock(ctx, args)
		return err
	})
	return streams, err
}

// doDedicated runs a raw blocking call, already encoded and classified, on a rented dedicated
// connection (Client.Do routes blocking commands here so that they never hold up a multiplexed
// connection).
func (c *Client) doDedicated(ctx context.Context, cl *call, info *command.Info) (out resp.Value, err error) {
	sent := false
	rent := c.WithDedicated
	if c.opts.UseCluster {
		// The command runs on the node that holds its keys. A redirect would need it sent
		// again, which a pooled call consumed by the first attempt cannot be: it runs once.
		slot, serr := slotOfCall(cl)
		if serr != nil {
			var cse *engine.CrossSlotError
			errors.As(serr, &cse)
			err := c.crossSlotError(&cl.cmd, cse)
			c.putCall(cl)
			return out, err
		}
		rent = func(ctx context.Context, fn func(d *DedicatedConn) error) error {
			d, err := c.dedicatedSlot(ctx, slot)
			if err != nil {
				return err
			}
			return c.withRented(d, fn)
		}
	}
	err = rent(ctx, func(d *DedicatedConn) error {
		sent = true
		out, err = d.doCall(ctx, cl, info)
		return err
	})
	if !sent {
		c.putCall(cl) // the rent failed: the call never reached a connection
	}
	return out, err
}
