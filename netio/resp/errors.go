package resp

import (
	"errors"
	"strconv"
)

// ErrIncomplete is returned by Parse and ParseCommand when the buffer
// holds only a prefix of a valid value. Nothing was consumed and the
// destination was left unchanged; call again once more bytes are
// available.
var ErrIncomplete = errors.New("respire: incomplete RESP value")

// ErrProtocol is the sentinel wrapped by every *ProtocolError, so
// errors.Is(err, ErrProtocol) identifies malformed or oversized input
// without needing errors.As.
var ErrProtocol = errors.New("respire: RESP protocol error")

// ProtocolError reports malformed or oversized RESP input. The stream it
// came from cannot be resynchronised: a connection that produced one must
// be closed.
type ProtocolError struct {
	// Offset is the byte offset of the offending byte. For Parse and
	// ParseCommand it is relative to the start of the buffer passed in;
	// for Reader it is relative to the start of the stream.
	Offset int64
	// Reason describes what was wrong, in words.
	Reason string
	// Limit names the Limits field that was exceeded, such as
	// "MaxBulkLen", or is empty when the input was malformed rather than
	// too large.
	Limit string
}

// Error returns "respire: RESP protocol error at offset N: reason".
func (e *ProtocolError) Error() string {
	return "respire: RESP protocol error at offset " + strconv.FormatInt(e.Offset, 10) + ": " + e.Reason
}

// Unwrap returns ErrProtocol.
func (e *ProtocolError) Unwrap() error { return ErrProtocol }

func malformed(off int, reason string) error {
	return &ProtocolError{Offset: int64(off), Reason: reason}
}

func overLimit(off int, limit string, got, max int64) error {
	return &ProtocolError{
		Offset: int64(off),
		Reason: limit + " exceeded: " + strconv.FormatInt(got, 10) + " > " + strconv.FormatInt(max, 10),
		Limit:  limit,
	}
}
