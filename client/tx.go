package client

import (
	"context"
	"strconv"

	"github.com/cockroachdb/errors"

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

// Watch sends WATCH keys on the connection: a later Exec aborts with ErrTxConflict if any of
// them changes in between. The watch lasts until Exec, Unwatch or Close. The keys take
// Options.KeyPrefix, like every key.
func (d *DedicatedConn) Watch(ctx context.Context, keys ...string) error {
	if len(keys) == 0 {
		return configErr("keys", "WATCH needs at least one key")
	}
	cl := d.c.getCall()
	cl.begin("WATCH", 1+len(keys), okShape)
	for _, k := range d.c.ns.prefixKeys(keys) {
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
// IsError) for a command that failed at run time, as Redis still runs the others. The futures
// of tx's typed methods hold the same results, decoded.
//
// Errors: a *TxConflictError (errors.Is ErrTxConflict) when a key watched with Watch changed:
// nothing was applied; a *TxQueueError when the server refused to queue a command: nothing was
// applied; an *UnknownOutcomeError for EXEC when the connection failed or the wait ended after
// EXEC may have reached the server; the refusal of a command Tx.Do does not queue (MULTI, EXEC,
// DISCARD, WATCH, UNWATCH, the subscribe family, MONITOR, ...), of an administrative command
// without AllowAdmin, or of a blocking command: nothing is sent then. A transaction is never
// sent again: it is the application's decision to retry. Exec clears the connection's watched
// keys, whatever the outcome. A queued command that changes connection state (SELECT, ...)
// runs, and the connection is discarded at Close instead of being handed to the next renter.
func (d *DedicatedConn) Exec(ctx context.Context, queue func(tx *Tx)) ([]resp.Value, error) {
	tx := &Batch{}
	if queue != nil {
		queue(tx)
	}
	watched := d.watching
	var raw []resp.Value
	var err error
	if d.c.hooks == nil {
		err = d.runBatchRaw(ctx, tx, modeExec, &raw, d.c.ns)
	} else {
		err = d.c.hookBatch(ctx, tx, modeExec, func(ctx context.Context) error {
			return d.runBatchRaw(ctx, tx, modeExec, &raw, d.c.ns)
		})
	}
	if raw != nil {
		return raw, nil
	}
	if err != nil && watched && d.c.opts.UseCluster {
		// A watched transaction rejected by a Cluster redirect is never replayed elsewhere.
		var qe *TxQueueError
		if errors.As(err, &qe) {
			return nil, txRetry(qe.Err)
		}
		return nil, txRetry(err)
	}
	return nil, err
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
