package client

import (
	"context"
	"iter"

	"github.com/cockroachdb/errors"
)

// ErrCursorLost: a scan stopped because the connection that held its cursor failed. A cursor
// is valid only on the server that issued it, so respire never continues it elsewhere: start
// the scan again. Match it with errors.Is; a *CursorLostError names the command and the cause.
var ErrCursorLost = sentinel("respire: scan cursor lost with its connection: restart the scan")

// CursorLostError reports a scan (ScanAll, HScanAll, SScanAll, ZScanAll) that stopped because
// the connection pinned to it failed, timed out or was abandoned mid-scan. The elements already
// yielded are valid; the rest of the scan is unknown. errors.Is(err, ErrCursorLost) matches it,
// and errors.As reaches the cause (a *ConnectionError, an *UnknownOutcomeError, a
// *TimeoutError, the context's error, ...).
type CursorLostError struct {
	// Command is the scan's command: SCAN, HSCAN, SSCAN or ZSCAN.
	Command string
	// Endpoint is the server that held the cursor.
	Endpoint Endpoint
	// Err is the failure.
	Err error
}

// Error implements error.
func (e *CursorLostError) Error() string {
	return "respire: " + e.Command + " on " + e.Endpoint.String() +
		" stopped: its cursor belongs to a connection that failed; restart the scan from the beginning: " + plainText(e.Err)
}

// Unwrap returns the failure.
func (e *CursorLostError) Unwrap() error { return e.Err }

// Is matches ErrCursorLost.
func (e *CursorLostError) Is(target error) bool { return target == ErrCursorLost }

// Scans as iterators. A cursor is valid only on the server that issued it (the spec's cursor
// reads), so each iteration is pinned: on a Client (or a View) it rents a dedicated connection
// for its whole length and gives it back when the loop ends or breaks; on a DedicatedConn it
// runs on that connection. If the connection fails mid-scan, the iterator yields one
// *CursorLostError and stops: it never continues a cursor on another connection, which might
// reach another server (after a failover) or a restarted one.
//
// What a scan guarantees is what Redis guarantees: every element present from the start to the
// end of the scan is yielded at least once. An element may be yielded more than once (when the
// server resizes the collection's table between steps, as its SCAN documentation says), and an
// element added or removed during the scan may or may not be yielded. respire does not
// deduplicate, which would cost memory in proportion to the collection: keep a set of what you
// saw if duplicates matter. A scan of a collection that does not change yields each element
// exactly once.

// ScanAll returns an iterator over the keys of the database (SCAN), in the order the server
// returns them, matching opt (Match, Count, Type). Under a key prefix it visits only the
// namespace's keys and yields them without the prefix. The iteration stops at its first error,
// yielded as the second value: a *CursorLostError when its connection failed, the rent's error
// when no dedicated connection could be had, a *ServerError, or the context's error.
//
//	for key, err := range c.ScanAll(ctx, client.ScanOptions{Match: "session:*", Count: 100}) {
//		if err != nil { return err }
//		...
//	}
func (c Commands) ScanAll(ctx context.Context, opt ScanOptions) iter.Seq2[string, error] {
	return scanAll(ctx, c.x, "SCAN", func(p Commands, cursor uint64) ([]string, uint64, error) {
		page, err := p.Scan(ctx, cursor, opt)
		return page.Keys, page.Cursor, err
	})
}

// HScanAll returns an iterator over the fields and values of the hash at key (HSCAN), matching
// opt (Match applies to field names, Count; Type is refused). See ScanAll.
func (c Commands) HScanAll(ctx context.Context, key string, opt ScanOptions) iter.Seq2[FieldValue, error] {
	return scanAll(ctx, c.x, "HSCAN", func(p Commands, cursor uint64) ([]FieldValue, uint64, error) {
		page, err := p.HScan(ctx, key, cursor, opt)
		return page.Fields, page.Cursor, err
	})
}

// SScanAll returns an iterator over the members of the set at key (SSCAN), matching opt
// (Match, Count; Type is refused). See ScanAll.
func (c Commands) SScanAll(ctx context.Context, key string, opt ScanOptions) iter.Seq2[string, error] {
	return scanAll(ctx, c.x, "SSCAN", func(p Commands, cursor uint64) ([]string, uint64, error) {
		page, err := p.SScan(ctx, key, cursor, opt)
		return page.Keys, page.Cursor, err
	})
}

// ZScanAll returns an iterator over the members of the sorted set at key with their scores
// (ZSCAN), matching opt (Match, Count; Type is refused). See ScanAll.
func (c Commands) ZScanAll(ctx context.Context, key string, opt ScanOptions) iter.Seq2[ZMember, error] {
	return scanAll(ctx, c.x, "ZSCAN", func(p Commands, cursor uint64) ([]ZMember, uint64, error) {
		page, err := p.ZScan(ctx, key, cursor, opt)
		return page.Members, page.Cursor, err
	})
}

// scanAll runs a scan on a pinned executor, one step per page, yielding the elements of each
// page before asking for the next one.
func scanAll[T any](ctx context.Context, x executor, name string, step func(p Commands, cursor uint64) ([]T, uint64, error)) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		var zero T
		pinned, release, err := x.pin(ctx)
		if err != nil {
			yield(zero, err)
			return
		}
		defer release()
		p := Commands{x: pinned}
		for cursor := uint64(0); ; {
			items, next, err := step(p, cursor)
			if err != nil {
				yield(zero, cursorErr(name, x.owner().ep, err))
				return
			}
			for _, it := range items {
				if !yield(it, nil) {
					return
				}
			}
			if next == 0 {
				return
			}
			cursor = next
		}
	}
}

// cursorErr returns a scan step's error as the iterator yields it: an error that says nothing
// about the connection (a server error, an invalid option, a key prefix refusal) as it is; any
// other one, which leaves the pinned connection unusable, as a *CursorLostError.
func cursorErr(name string, ep Endpoint, err error) error {
	var se *ServerError
	var ce *ConfigError
	var ke *KeyPrefixError
	if errors.As(err, &se) || errors.As(err, &ce) || errors.As(err, &ke) {
		return err
	}
	return &CursorLostError{Command: name, Endpoint: ep, Err: err}
}
