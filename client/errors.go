package client

import (
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/cockroachdb/errors"

	"github.com/respire-go/respire/engine"
	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/internal/command"
	"github.com/respire-go/respire/netio"
	"github.com/respire-go/respire/netio/resp"
)

// Sentinel errors; match them with errors.Is.
var (
	// ErrClosed: the client was closed.
	ErrClosed = sentinel("respire: client closed")
	// ErrUnknownOutcome: the command may have been executed; its reply was lost. It is never
	// resent. Timeouts and cancellations after the command's bytes left also match it.
	ErrUnknownOutcome = sentinel("respire: command outcome unknown")
	// ErrReconnectLimit: every connection of the endpoint exhausted its reconnect policy.
	ErrReconnectLimit = sentinel("respire: reconnect limit reached")
	// ErrAdminDisabled: a high-risk command (AdminCommands) was refused because AllowAdmin is
	// false. Nothing was sent.
	ErrAdminDisabled = sentinel("respire: admin command refused (set AllowAdmin)")
	// ErrTooManyWaiters: the bound on callers waiting for a connection was reached.
	ErrTooManyWaiters = sentinel("respire: too many callers waiting for a connection")
	// ErrProtocol: a reply did not follow the RESP protocol.
	ErrProtocol = resp.ErrProtocol
)

// sentinelError is the type of respire's sentinel errors. It records no stack, unlike
// cockroachdb/errors.New, whose stack would be that of package initialization: printed with %+v
// a sentinel shows its message alone. Sentinels are compared by identity (errors.Is).
type sentinelError struct{ msg string }

func (e *sentinelError) Error() string { return e.msg }

// sentinel returns a new sentinel error with message msg.
func sentinel(msg string) error { return &sentinelError{msg: msg} }

// ConfigError reports an invalid option or connection string before any I/O.
type ConfigError struct {
	// Option names the offending option.
	Option string
	// Reason says what is wrong.
	Reason string
}

// Error implements error.
func (e *ConfigError) Error() string {
	return "respire: invalid option " + e.Option + ": " + e.Reason
}

func configErr(option, reason string) error { return &ConfigError{Option: option, Reason: reason} }

// ServerError is an error reply from Redis. It carries no keys, values or credentials: its message
// is the server's without the arguments Redis echoes (see Message).
type ServerError struct {
	// Code is the error's first word, exactly as the server sent it: ERR, WRONGTYPE, LOADING,
	// MOVED, NOPERM, ...
	Code string
	// Message is the server's message, starting with Code, without what the server echoed of the
	// command's arguments: the "with args beginning with: ..." list of an unknown command is cut,
	// and quoted text other than the command's name reads '[redacted]' (see netio.RedactReply).
	// An error that a script or a function raises itself (redis.error_reply) is the application's
	// own text: only its quoted parts are redacted.
	Message string
	// CommandName is the rejected command's name.
	CommandName string
	// Endpoint is the server that replied.
	Endpoint Endpoint
}

// Error implements error.
func (e *ServerError) Error() string {
	return "respire: " + e.CommandName + ": " + e.Message
}

// serverError builds the *ServerError of an error reply to command name: the reply's code, and
// its message without the arguments the server echoed. A non-empty secret (the password of an
// AUTH) is also withheld wherever a server might repeat it.
func serverError(v *resp.Value, name string, ep Endpoint, secret string) *ServerError {
	return &ServerError{Code: v.ErrorCode(), Message: netio.RedactReply(v.ErrorMessage(), name, secret), CommandName: name, Endpoint: ep}
}

// IsTransient reports whether the error code is transient: LOADING, BUSY, CLUSTERDOWN, TRYAGAIN
// or MASTERDOWN.
func (e *ServerError) IsTransient() bool { return netio.IsTransientCode(e.Code) }

// Stage says where a command was when a timeout or cancellation hit it.
type Stage string

// Timeout stages.
const (
	// StageConnecting: TCP/TLS setup of a connection.
	StageConnecting Stage = "Connecting"
	// StageWaitingForCapacity: not yet handed to a connection. Nothing was sent.
	StageWaitingForCapacity Stage = "WaitingForCapacity"
	// StageBuffered: queued on a connection, not written. Not safe to retry: it can still be
	// sent after the timeout.
	StageBuffered Stage = "Buffered"
	// StageWriting: partially written.
	StageWriting Stage = "Writing"
	// StageAwaitingReply: written; a written command may have executed.
	StageAwaitingReply Stage = "AwaitingReply"
)

// Diagnostics describes the state around a timeout. It never holds keys, values or credentials.
type Diagnostics struct {
	// Stage is where the command was.
	Stage Stage
	// Endpoint is the server concerned.
	Endpoint Endpoint
	// ConnectionID is the process-local connection id, or 0 when no connection was involved.
	ConnectionID uint64
	// ServerClientID is the server's CLIENT ID of the connection, or 0 when unknown.
	ServerClientID int64
	// PendingReplies and PendingBytes describe the connection's outstanding work, when known.
	PendingReplies, PendingBytes int
	// SinceLastRead and SinceLastWrite are the times since the connection last read and wrote,
	// or -1 when unknown.
	SinceLastRead, SinceLastWrite time.Duration
	// Hint is a suggestion, not a root cause.
	Hint string
}

// TimeoutError reports an expired budget: ConnectTimeout (stage StageConnecting, CommandName
// "CONNECT") or CommandTimeout.
type TimeoutError struct {
	// CommandName is the command that timed out, or "CONNECT".
	CommandName string
	// Budget is the budget that expired.
	Budget time.Duration
	// Diagnostics describe the state when it expired.
	Diagnostics Diagnostics
	// Err is the underlying error, if any.
	Err error
}

// Error implements error.
func (e *TimeoutError) Error() string { return "respire: " + e.text(true) }

// text describes the timeout, naming the endpoint when withEndpoint.
func (e *TimeoutError) text(withEndpoint bool) string {
	msg := e.CommandName + " timed out after " + e.Budget.String() + " (" + string(e.Diagnostics.Stage)
	if withEndpoint {
		msg += ", " + e.Diagnostics.Endpoint.String()
	}
	msg += ")"
	if e.Diagnostics.Hint != "" {
		msg += ": " + e.Diagnostics.Hint
	}
	return msg
}

// Unwrap returns the underlying error.
func (e *TimeoutError) Unwrap() error { return e.Err }

// Timeout reports true, for net.Error-style checks.
func (e *TimeoutError) Timeout() bool { return true }

// Is makes a timeout after the command's bytes may have left match ErrUnknownOutcome.
func (e *TimeoutError) Is(target error) bool {
	return target == ErrUnknownOutcome && (e.Diagnostics.Stage == StageBuffered ||
		e.Diagnostics.Stage == StageWriting || e.Diagnostics.Stage == StageAwaitingReply)
}

// ConnectionError reports that no connection could carry a command, or that a connection failed
// before the command was sent: the command was not executed.
type ConnectionError struct {
	// Endpoint is the endpoint concerned.
	Endpoint Endpoint
	// Err is the underlying connection failure.
	Err error
}

// Error implements error.
func (e *ConnectionError) Error() string {
	msg := "respire: connection failed"
	if e.Endpoint != (Endpoint{}) {
		msg = "respire: connection to " + e.Endpoint.String() + " failed"
	}
	if e.Err != nil {
		msg += ": " + causeText(e.Err)
	}
	return msg
}

// detail describes the failure without the endpoint, for a wrapper that names it.
func (e *ConnectionError) detail() string {
	if e.Err != nil {
		return causeText(e.Err)
	}
	return "connection failed"
}

// Unwrap returns the underlying failure.
func (e *ConnectionError) Unwrap() error { return e.Err }

// ReconnectLimitError reports that every connection of the endpoint exhausted its reconnect
// policy. It is a connection error (errors.As with *ConnectionError matches it) that keeps the
// last connection error. The client must be recreated to connect again. From Dedicated (and the
// calls that rent a dedicated connection) it reports that this one rent used all its attempts:
// the pool stays usable and the next rent starts afresh.
type ReconnectLimitError struct {
	ConnectionError
}

// Error implements error.
func (e *ReconnectLimitError) Error() string {
	return "respire: reconnect limit reached for " + e.Endpoint.String() + e.lastError()
}

// lastError is ": last error: <cause>" without the endpoint, or empty.
func (e *ReconnectLimitError) lastError() string {
	if e.Err == nil {
		return ""
	}
	return ": last error: " + causeText(e.Err)
}

// Is matches ErrReconnectLimit.
func (e *ReconnectLimitError) Is(target error) bool { return target == ErrReconnectLimit }

// As lets errors.As find the embedded *ConnectionError.
func (e *ReconnectLimitError) As(target any) bool {
	if p, ok := target.(**ConnectionError); ok {
		*p = &e.ConnectionError
		return true
	}
	return false
}

// Unwrap returns the last connection error.
func (e *ReconnectLimitError) Unwrap() error { return e.Err }

// UnknownOutcomeError reports a command whose bytes may have reached the server but whose reply
// was lost. Redis may or may not have executed it; respire never resends it. It matches
// ErrUnknownOutcome, and also ErrClosed when the reply was lost because the client was closed.
type UnknownOutcomeError struct {
	// CommandName is the command.
	CommandName string
	// Endpoint is the server it was sent to.
	Endpoint Endpoint
	// Stage is how far it got.
	Stage Stage
	// Err is why the reply was lost (connection failure, cancellation, the client's Close).
	Err error

	// closed: Close ended the command's connection while it waited for the reply.
	closed bool
}

// Error implements error.
func (e *UnknownOutcomeError) Error() string { return "respire: " + e.text(true) }

// text describes the lost outcome, naming the endpoint when withEndpoint.
func (e *UnknownOutcomeError) text(withEndpoint bool) string {
	msg := e.CommandName + " outcome unknown (" + string(e.Stage)
	if withEndpoint {
		msg += " on " + e.Endpoint.String()
	}
	msg += ")"
	switch {
	case e.closed:
		msg += ": client closed"
	case e.Err != nil:
		msg += ": " + causeText(e.Err)
	}
	return msg
}

// Unwrap returns the cause.
func (e *UnknownOutcomeError) Unwrap() error { return e.Err }

// Is matches ErrUnknownOutcome, and ErrClosed when the client's Close lost the reply.
func (e *UnknownOutcomeError) Is(target error) bool {
	return target == ErrUnknownOutcome || (target == ErrClosed && e.closed)
}

// ProtocolError reports a malformed reply (see resp.ProtocolError).
type ProtocolError = resp.ProtocolError

func stageOf(s engine.Stage) Stage {
	switch s {
	case engine.StageBuffered:
		return StageBuffered
	case engine.StageWriting:
		return StageWriting
	case engine.StageAwaitingReply:
		return StageAwaitingReply
	}
	return StageWaitingForCapacity
}

// connectFailure maps a connection attempt failure to the public taxonomy: a ConnectTimeout
// expiry becomes a *TimeoutError (stage Connecting, command CONNECT); anything else stays a
// connection error wrapping the cause (so errors.As reaches *net.OpError, *netio.HandshakeError,
// ...). Handshake rejections are reported as *ServerError too.
func connectFailure(ep Endpoint, connectTimeout time.Duration, err error) error {
	var ce *netio.ConnectError
	if errors.As(err, &ce) && ce.TimedOut {
		stage := StageConnecting
		name := "CONNECT"
		if !ce.Stage.Connecting() {
			stage, name = StageAwaitingReply, "HANDSHAKE"
		}
		return &TimeoutError{CommandName: name, Budget: ce.Budget, Err: err,
			Diagnostics: Diagnostics{Stage: stage, Endpoint: ep, ConnectionID: uint64(ce.Conn), SinceLastRead: -1, SinceLastWrite: -1,
				Hint: "check that the endpoint is reachable from this network and that the server is not paused"}}
	}
	var he *netio.HandshakeError
	if errors.As(err, &he) {
		return &ConnectionError{Endpoint: ep, Err: &handshakeRejection{
			ServerError: ServerError{Code: he.Code, Message: he.Message, CommandName: he.Command, Endpoint: ep}, cause: err}}
	}
	return &ConnectionError{Endpoint: ep, Err: err}
}

// causeText is err's message for a wrapper that names the endpoint itself, so that every error
// text names its endpoint once: respire's errors without their endpoint and without a leading
// "respire: " (see netio.CauseText for the transport's errors and the net package's).
func causeText(err error) string {
	switch e := err.(type) {
	case *ConnectionError:
		return e.detail()
	case *ReconnectLimitError:
		return "reconnect limit reached" + e.lastError()
	case *TimeoutError:
		return e.text(false)
	case *UnknownOutcomeError:
		return e.text(false)
	case *CredentialRenewalError:
		return e.text(false)
	case *handshakeRejection:
		return causeText(e.cause)
	}
	return netio.CauseText(err)
}

// plainText is err's message without a leading "respire: ", for a wrapper that has its own.
func plainText(err error) string { return strings.TrimPrefix(err.Error(), "respire: ") }

// handshakeRejection is a *ServerError raised during the handshake that still unwraps to the
// netio error behind it.
type handshakeRejection struct {
	ServerError
	cause error
}

func (h *handshakeRejection) Error() string { return h.cause.Error() }
func (h *handshakeRejection) Unwrap() error { return h.cause }
func (h *handshakeRejection) As(target any) bool {
	if p, ok := target.(**ServerError); ok {
		*p = &h.ServerError
		return true
	}
	return false
}

// acquireFailure maps the engine's answer to a command that never got a connection.
func acquireFailure(ep Endpoint, connectTimeout time.Duration, ae *engine.AcquireError) error {
	switch ae.Outcome {
	case fsm.OutcomeClosed:
		return ErrClosed
	case fsm.OutcomeOverflow:
		return &ConnectionError{Endpoint: ep, Err: ErrTooManyWaiters}
	case fsm.OutcomeExhausted:
		last := ae.Err
		if last != nil {
			last = connectFailure(ep, connectTimeout, last)
		}
		return &ReconnectLimitError{ConnectionError{Endpoint: ep, Err: last}}
	}
	if ae.Err == nil {
		return &ConnectionError{Endpoint: ep, Err: errors.New("respire: no connection available")}
	}
	return connectFailure(ep, connectTimeout, ae.Err)
}

// AdminCommands returns the commands refused unless Options.AllowAdmin, sorted: a subcommand
// after its container and a space ("CONFIG SET"). The list comes from respire's command table,
// generated from Redis's own command metadata: every command in the ACL category @admin or
// @dangerous, except INFO, ROLE and LASTSAVE (they only read server status) and KEYS, SORT and
// SORT_RO (data commands whose danger is their cost), plus SCRIPT FLUSH, SCRIPT KILL and
// FUNCTION FLUSH, DELETE, RESTORE and KILL (they remove or stop code other clients rely on).
// docs/options.md lists it in full.
func AdminCommands() []string {
	var out []string
	for _, c := range command.Commands() {
		if c.Admin() {
			out = append(out, c.Name())
		}
		for _, s := range c.Subcommands() {
			if s.Admin() {
				out = append(out, s.Name())
			}
		}
	}
	sort.Strings(out)
	return out
}

func itoa(n int) string { return strconv.Itoa(n) }
