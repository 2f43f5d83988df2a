package wire

import (
	"context"
	"errors"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/respire-go/respire/engine"
	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/netio/resp"
)

// ErrClosed is the cause of the errors that complete commands on a connection the engine closed or
// drained, and of commands sent after that. Match it with errors.Is.
var ErrClosed = errors.New("respire: connection closed")

// ConnectStage says where a connection attempt was when it failed.
type ConnectStage uint8

// Connection attempt stages, in order.
const (
	// StageDial: opening the transport connection (TCP, Unix socket or the custom dial hook).
	StageDial ConnectStage = iota + 1
	// StageTLS: the TLS handshake after the dial.
	StageTLS
	// StageHandshake: the Redis handshake (HELLO, AUTH, SELECT, ...).
	StageHandshake
)

var connectStageNames = [...]string{"", "dial", "tls", "handshake"}

// String returns "dial", "tls" or "handshake".
func (s ConnectStage) String() string {
	if s > 0 && int(s) < len(connectStageNames) {
		return connectStageNames[s]
	}
	return "stage(" + strconv.Itoa(int(s)) + ")"
}

// Connecting reports whether the stage belongs to the connect budget (Dialer.ConnectTimeout):
// the dial and the TLS handshake. The Redis handshake has its own budget.
func (s ConnectStage) Connecting() bool { return s == StageDial || s == StageTLS }

// ConnectError reports a failed connection attempt: where it failed, whether a budget expired, and
// why. It never contains credentials. Match it with errors.As; errors.Is reaches the cause (for
// example context.Canceled when the attempt was cancelled, or a *HandshakeError).
type ConnectError struct {
	// Endpoint is the destination of the attempt.
	Endpoint engine.Endpoint
	// Conn is the attempt's connection id, or 0 when the dial was not made for an OpenRequest.
	Conn fsm.ConnID
	// Stage is where the attempt failed.
	Stage ConnectStage
	// TimedOut reports that a budget expired: Dialer.ConnectTimeout in the dial and TLS stages,
	// TransportConfig.HandshakeTimeout in the handshake stage. Caller cancellation is not a
	// timeout, and wins when both happen.
	TimedOut bool
	// Budget is the budget that expired when TimedOut, or zero.
	Budget time.Duration
	// Err is the cause.
	Err error
}

// Error implements error.
func (e *ConnectError) Error() string {
	var b strings.Builder
	b.WriteString("respire: connecting to ")
	b.WriteString(e.Endpoint.String())
	if e.Conn != 0 {
		b.WriteString(" (conn ")
		b.WriteString(e.Conn.String())
		b.WriteByte(')')
	}
	b.WriteString(": ")
	e.appendDetail(&b)
	return b.String()
}

// appendDetail appends the stage, the timeout and the cause, without the endpoint. The stage is
// left out when the cause starts with it ("dial tcp: ...", "tls: ...", "handshake HELLO ...").
func (e *ConnectError) appendDetail(b *strings.Builder) {
	cause := ""
	if e.Err != nil {
		cause = CauseText(e.Err)
	}
	stage := e.Stage.String()
	if e.TimedOut || !startsWithWord(cause, stage) {
		b.WriteString(stage)
		if e.TimedOut {
			b.WriteString(" timed out")
			if e.Budget > 0 {
				b.WriteString(" after ")
				b.WriteString(e.Budget.String())
			}
		}
		if cause != "" {
			b.WriteString(": ")
		}
	}
	b.WriteString(cause)
}

// Unwrap returns the cause.
func (e *ConnectError) Unwrap() error { return e.Err }

// Timeout reports whether a budget expired (net.Error style).
func (e *ConnectError) Timeout() bool { return e.TimedOut }

// IOError reports the failure of an established connection: a read or write error, the peer
// closing it, a protocol error, or the engine closing it (Err is then ErrClosed). Commands that
// were pending when it failed complete with it. It never contains credentials.
type IOError struct {
	// Endpoint is the connection's destination.
	Endpoint engine.Endpoint
	// Conn is the connection's id.
	Conn fsm.ConnID
	// Op is what failed: "read", "write", "close" (closed or drained by the engine) or "send"
	// (a command sent after the connection stopped taking commands).
	Op string
	// Err is the cause: io.EOF when the server closed the connection, a *net.OpError, a
	// *resp.ProtocolError, or ErrClosed.
	Err error
}

// Error implements error.
func (e *IOError) Error() string {
	var b strings.Builder
	b.WriteString("respire: connection ")
	b.WriteString(e.Conn.String())
	b.WriteString(" to ")
	b.WriteString(e.Endpoint.String())
	b.WriteString(": ")
	e.appendDetail(&b)
	return b.String()
}

// appendDetail appends the operation and the cause, without the connection and the endpoint; the
// operation is left out when the cause starts with it ("read tcp: ...").
func (e *IOError) appendDetail(b *strings.Builder) {
	cause := ""
	if e.Err != nil {
		cause = CauseText(e.Err)
	}
	if !startsWithWord(cause, e.Op) {
		b.WriteString(e.Op)
		if cause != "" {
			b.WriteString(": ")
		}
	}
	b.WriteString(cause)
}

// Unwrap returns the cause.
func (e *IOError) Unwrap() error { return e.Err }

// Timeout reports whether the cause is an I/O timeout.
func (e *IOError) Timeout() bool {
	var te timeouter
	return errors.As(e.Err, &te) && te.Timeout()
}

// causeText is err's message without a leading "respire: ", which the wrapper already has.
func causeText(err error) string {
	return strings.TrimPrefix(err.Error(), "respire: ")
}

// CauseText returns err's message for an error that wraps it and names the endpoint itself, so
// that the endpoint is printed once: without the leading "respire: ", without the endpoint of
// respire's connection errors (*ConnectError, *IOError, *SubscribeError), and without the
// addresses of a *net.OpError or the host name of a *net.DNSError. Other errors print as they
// are.
func CauseText(err error) string {
	var b strings.Builder
	switch e := err.(type) {
	case *ConnectError:
		if e.Conn != 0 {
			b.WriteString("conn ")
			b.WriteString(e.Conn.String())
			b.WriteString(": ")
		}
		e.appendDetail(&b)
		return b.String()
	case *IOError:
		b.WriteString("connection ")
		b.WriteString(e.Conn.String())
		b.WriteString(": ")
		e.appendDetail(&b)
		return b.String()
	case *SubscribeError:
		return e.Command + " refused: " + e.Message
	case *net.OpError:
		b.WriteString(e.Op)
		if e.Net != "" {
			b.WriteByte(' ')
			b.WriteString(e.Net)
		}
		if e.Err != nil {
			b.WriteString(": ")
			b.WriteString(CauseText(e.Err))
		}
		return b.String()
	case *net.DNSError:
		b.WriteString("lookup")
		if e.Server != "" {
			b.WriteString(" (DNS server ")
			b.WriteString(e.Server)
			b.WriteByte(')')
		}
		b.WriteString(": ")
		b.WriteString(e.Err)
		return b.String()
	case nil:
		return ""
	}
	return causeText(err)
}

// startsWithWord reports whether s starts with word followed by a space or a colon.
func startsWithWord(s, word string) bool {
	return word != "" && len(s) > len(word) && strings.HasPrefix(s, word) && (s[len(word)] == ' ' || s[len(word)] == ':')
}

// timeouter is the part of net.Error that says whether an error is a timeout.
type timeouter interface{ Timeout() bool }

// SubscribeError is a server's refusal of a subscription command (an ACL denial such as NOPERM,
// or an error of a server that does not know the command). It never contains credentials.
type SubscribeError struct {
	// Endpoint is the server that refused.
	Endpoint engine.Endpoint
	// Conn is the subscriber connection.
	Conn fsm.ConnID
	// Command is SUBSCRIBE, PSUBSCRIBE or SSUBSCRIBE.
	Command string
	// Code is the error's first word (NOPERM, ERR, ...); Message the whole error without the
	// server's echo of the request's arguments (see RedactReply).
	Code, Message string
}

// Error implements error.
func (e *SubscribeError) Error() string {
	return "respire: " + e.Command + " refused by " + e.Endpoint.String() + ": " + e.Message
}

// LivenessError is the cause of the *IOError that aborts a connection because one of its liveness
// bounds expired: no reply byte arrived for the idle-read bound while replies were pending (Op
// "read"), or a write made no progress for the write-stall bound (Op "write"). Match it with
// errors.As; the transport's timeout error is its cause.
type LivenessError struct {
	// Op is "read" for the idle-read bound, "write" for the write-stall bound.
	Op string
	// Budget is the bound that expired.
	Budget time.Duration
	// Err is the transport's timeout error.
	Err error
}

// Error implements error.
func (e *LivenessError) Error() string {
	if e.Op == "write" {
		return "respire: write made no progress for " + e.Budget.String() + " (write stall timeout)"
	}
	return "respire: no reply byte for " + e.Budget.String() + " with replies pending (idle read timeout)"
}

// Unwrap returns the transport's timeout error.
func (e *LivenessError) Unwrap() error { return e.Err }

// Timeout reports true: a liveness bound is a timeout.
func (e *LivenessError) Timeout() bool { return true }

// Classify says whether a connection failure may be retried. Permanent: a *HandshakeError whose
// Class says so (authentication, ACL, unsupported setup) and protocol errors
// (*resp.ProtocolError). Transient: everything else, including refused and reset connections,
// timeouts, cancellation and transient server codes such as LOADING.
//
// Failures that only a socket runtime produces and that retrying cannot fix (TLS authentication
// failures) are recognized by that runtime: netio.Classify is ClassifyWith and its TLS rule.
func Classify(err error) fsm.FailureClass { return ClassifyWith(err, nil) }

// ClassifyWith is Classify with one more rule: permanent, when not nil, is asked about a failure
// that is neither a cancellation, nor a handshake rejection, nor a protocol error, and makes it
// permanent when it reports true.
func ClassifyWith(err error, permanent func(error) bool) fsm.FailureClass {
	if err == nil {
		return fsm.Transient
	}
	if errors.Is(err, context.Canceled) {
		return fsm.Transient
	}
	var he *HandshakeError
	if errors.As(err, &he) {
		return he.Class()
	}
	var pe *resp.ProtocolError
	if errors.As(err, &pe) {
		return fsm.Permanent
	}
	if permanent != nil && permanent(err) {
		return fsm.Permanent
	}
	return fsm.Transient
}
