package client

import (
	"context"
	"strconv"

	"github.com/cockroachdb/errors"

	"github.com/respire-go/respire/engine"
	"github.com/respire-go/respire/internal/command"
	"github.com/respire-go/respire/netio/resp"
)

// ErrTxConflict: EXEC aborted the transaction because a watched key changed after WATCH.
// Nothing of the transaction was applied, and respire never runs it again: re-read and retry
// in the application if that is what you want. Match it with errors.Is.
var ErrTxConflict = sentinel("respire: transaction aborted: a watched key changed")

// TxConflictError reports a transaction that EXEC aborted because a watched key changed (EXEC
// replied nil). Nothing was applied. errors.Is(err, ErrTxConflict) matches it.
type TxConflictError struct {
	// Endpoint is the server that aborted the transaction.
	Endpoint Endpoint
}

// Error implements error.
func (e *TxConflictError) Error() string {
	return "respire: transaction on " + e.Endpoint.String() + " aborted: a watched key changed"
}

// Is matches ErrTxConflict.
func (e *TxConflictError) Is(target error) bool { return target == ErrTxConflict }

// TxQueueError reports a command that the server refused to queue inside MULTI (a wrong number
// of arguments, an unknown command, an ACL denial...). Redis then discards the whole transaction
// at EXEC (EXECABORT): nothing was applied. errors.As reaches the *ServerError.
type TxQueueError struct {
	// Index is the position of the refused command in the transaction (0-based).
	Index int
	// Err is the server's refusal.
	Err *ServerError
}

// Error implements error.
func (e *TxQueueError) Error() string {
	return "respire: transaction discarded: command " + strconv.Itoa(e.Index) + " (" + e.Err.CommandName + ") refused: " + e.Err.Message
}

// Unwrap returns the server's refusal.
func (e *TxQueueError) Unwrap() error { return e.Err }

// Tx collects the commands of a MULTI/EXEC transaction (see DedicatedConn.Exec). Nothing is sent
// until Exec runs them.
type Tx struct {
	cmds []txCommand
	err  error
	c    *Client
	// dirty: a queued command changes connection state (SELECT, ...); Exec marks the
	// connection for discarding.
	dirty bool
}

type txCommand struct {
	name  string
	frame []byte
}

// Do queues a raw command; arguments are encoded and classified as by Client.Do, and admin
// commands are refused the same way. MULTI, EXEC, DISCARD, WATCH and UNWATCH cannot be queued
// (Exec sends MULTI and EXEC; watch keys with DedicatedConn.Watch or Client.Watch before Exec),
// nor can the subscribe family and the commands that break the one-reply-per-command exchange.
// A queued command that changes connection state (SELECT, ...) runs, and the connection is
// discarded at Close instead of being handed to the next renter. A refusal is kept and
// returned by Exec, which then sends nothing.
func (tx *Tx) Do(args ...any) {
	if tx.err != nil {
		return
	}
	cl, info, err := tx.c.rawCall(args)
	if err != nil {
		tx.err = err
		return
	}
	if info != nil {
		if err := refuseTx(info); err != nil {
			tx.err = err
			tx.c.putCall(cl)
			return
		}
		tx.dirty = tx.dirty || info.Session() == command.SessionState
	}
	tx.cmds = append(tx.cmds, txCommand{name: cl.cmd.Name, frame: append([]byte(nil), cl.cmd.Frame...)})
	tx.c.putCall(cl)
}

// Set queues SET key value.
func (tx *Tx) Set(key, value string) { tx.Do("SET", key, value) }

// Del queues DEL keys.
func (tx *Tx) Del(keys ...string) {
	args := make([]any, 0, 1+len(keys))
	args = append(args, "DEL")
	for _, k := range keys {
		args = append(args, k)
	}
	tx.Do(args...)
}

// Incr queues INCR key.
func (tx *Tx) Incr(key string) { tx.Do("INCR", key) }

// IncrBy queues INCRBY key delta.
func (tx *Tx) IncrBy(key string, delta int64) { tx.Do("INCRBY", key, delta) }

// RPush queues RPUSH key values.
func (tx *Tx) RPush(key string, values ...string) {
	args := make([]any, 0, 2+len(values))
	args = append(args, "RPUSH", key)
	for _, v := range values {
		args = append(args, v)
	}
	tx.Do(args...)
}

// Len returns the number of queued commands.
func (tx *Tx) Len() int { return len(tx.cmds) }

// Watch sends WATCH keys on the connection: a later Exec aborts with ErrTxConflict if any of
// them changes in between. The watch lasts until Exec, Unwatch or Close.
func (d *DedicatedConn) Watch(ctx context.Context, keys ...string) error {
	if len(keys) == 0 {
		return configErr("keys", "WATCH needs at least one key")
	}
	cl := d.c.getCall()
	cl.begin("WATCH", 1+len(keys), okShape)
	for _, k := range keys {
		cl.arg(k)
	}
	err := d.run(ctx, cl, okReply)
	if err == nil {
		d.watching = true
	}
	if d.c.opts.UseCluster {
		err = txRetry(err)
	}
	return err
}

// Unwatch sends UNWATCH, forgetting every watched key.
func (d *DedicatedConn) Unwatch(ctx context.Context) error {
	cl := d.c.getCall()
	cl.begin("UNWATCH", 1, okShape)
	err := d.run(ctx, cl, okReply)
	if err == nil {
		d.watching = false
	}
	return err
}

// Exec runs a transaction: queue adds commands to tx, then MULTI, the commands and EXEC are sent
// in one pipelined write and their replies read back, within CommandTimeout and ctx. It returns
// EXEC's replies, one per queued command; a reply may itself be an error reply (resp.Value
// IsError) for a command that failed at run time, as Redis still runs the others.
//
// Errors: a *TxConflictError (errors.Is ErrTxConflict) when a key watched with Watch changed:
// nothing was applied; a *TxQueueError when the server refused to queue a command: nothing was
// applied; an *UnknownOutcomeError for EXEC when the connection failed or the wait ended after
// EXEC may have reached the server. A transaction is never sent again: it is the application's
// decision to retry. Exec clears the connection's watched keys, whatever the outcome.
func (d *DedicatedConn) Exec(ctx context.Context, queue func(tx *Tx)) ([]resp.Value, error) {
	tx := &Tx{c: d.c}
	if queue != nil {
		queue(tx)
	}
	if tx.err != nil {
		return nil, tx.err
	}
	if err := d.acquire(); err != nil {
		return nil, err
	}
	defer d.release()
	cls := make([]*call, 0, len(tx.cmds)+2)
	multi := d.c.getCall()
	multi.begin("MULTI", 1, okShape)
	cls = append(cls, multi)
	for _, q := range tx.cmds {
		cl := d.c.getCall()
		cl.cmd.Name = q.name
		cl.cmd.Expect = queuedShape
		cl.cmd.Frame = append(cl.cmd.Frame[:0], q.frame...)
		cls = append(cls, cl)
	}
	exec := d.c.getCall()
	exec.begin("EXEC", 1, engine.ShapeOf(resp.KindArray, resp.KindNull).Elems(len(tx.cmds)))
	cls = append(cls, exec)
	watched := d.watching
	d.watching = false
	if tx.dirty {
		d.dirty = true
	}
	if err := d.roundTrip(ctx, d.budget(), cls); err != nil {
		return nil, err
	}
	defer d.recycle(cls)
	out, err := d.execReplies(tx, cls, multi, exec)
	if err != nil && watched && d.c.opts.UseCluster {
		// A watched transaction rejected by a Cluster redirect is never replayed elsewhere.
		var qe *TxQueueError
		if errors.As(err, &qe) {
			return nil, txRetry(qe.Err)
		}
		return nil, txRetry(err)
	}
	return out, err
}

// execReplies reads the replies of MULTI, the queued commands and EXEC.
func (d *DedicatedConn) execReplies(tx *Tx, cls []*call, multi, exec *call) ([]resp.Value, error) {
	if err := d.c.replyErr("MULTI", &multi.cmd.Reply); err != nil {
		// Without MULTI the commands ran one by one: the connection's state is unknown.
		d.discard()
		return nil, err
	}
	var queueErr *TxQueueError
	for i, cl := range cls[1 : len(cls)-1] {
		v := &cl.cmd.Reply
		if v.IsError() && queueErr == nil {
			queueErr = &TxQueueError{Index: i, Err: serverError(v, cl.cmd.Name, d.c.ep, "")}
		}
	}
	v := &exec.cmd.Reply
	switch {
	case v.Kind == resp.KindNull:
		return nil, &TxConflictError{Endpoint: d.c.ep}
	case v.IsError():
		if queueErr != nil {
			return nil, queueErr
		}
		return nil, d.c.replyErr("EXEC", v)
	case v.Kind != resp.KindArray || v.Len() != len(tx.cmds):
		return nil, unexpected("EXEC", v)
	}
	out := make([]resp.Value, len(tx.cmds))
	for i, e := range v.All() {
		out[i] = e.Clone()
	}
	return out, nil
}

// Watch rents a dedicated connection, WATCHes keys on it and calls fn, which reads what it needs
// on d and ends with d.Exec; the connection is given back afterwards. It returns fn's error, so a
// conflict surfaces as ErrTxConflict: Watch never retries.
//
// On a Cluster client the keys must share a slot (else a *CrossSlotError), and the connection
// goes to the node serving it. A MOVED, ASK or READONLY rejection of the WATCH or of the
// transaction is a *TransactionRetryError (errors.Is ErrTxRetry): nothing ran, nothing is
// replayed; restart WATCH.
func (c *Client) Watch(ctx context.Context, fn func(d *DedicatedConn) error, keys ...string) error {
	if c.opts.UseCluster {
		slot, err := slotOfKeys("WATCH", keys)
		if err != nil {
			return err
		}
		d, err := c.dedicatedSlot(ctx, slot)
		if err != nil {
			return err
		}
		return c.withRented(d, func(d *DedicatedConn) error {
			if err := d.Watch(ctx, keys...); err != nil {
				return err
			}
			return fn(d)
		})
	}
	return c.WithDedicated(ctx, func(d *DedicatedConn) error {
		if err := d.Watch(ctx, keys...); err != nil {
			return err
		}
		return fn(d)
	})
}
