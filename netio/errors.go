package netio

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"

	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/netio/wire"
)

// The connection errors are the protocol layer's (netio/wire), shared with the simulator so that
// both runtimes fail with the same types and texts. These aliases keep their netio names.
type (
	// ConnectStage says where a connection attempt was when it failed (wire.ConnectStage).
	ConnectStage = wire.ConnectStage
	// ConnectError reports a failed connection attempt (wire.ConnectError).
	ConnectError = wire.ConnectError
	// IOError reports the failure of an established connection (wire.IOError).
	IOError = wire.IOError
	// LivenessError is the cause of an IOError when a liveness bound expired (wire.LivenessError).
	LivenessError = wire.LivenessError
	// SubscribeError is a server's refusal of a subscription command (wire.SubscribeError).
	SubscribeError = wire.SubscribeError
)

// Connection attempt stages, in order (wire's).
const (
	// StageDial: opening the transport connection (TCP, Unix socket or the custom dial hook).
	StageDial = wire.StageDial
	// StageTLS: the TLS handshake after the dial.
	StageTLS = wire.StageTLS
	// StageHandshake: the Redis handshake (HELLO, AUTH, SELECT, ...).
	StageHandshake = wire.StageHandshake
)

// ErrClosed is the cause of the errors that complete commands on a connection the engine closed or
// drained, and of commands sent after that. Match it with errors.Is. It is wire.ErrClosed.
var ErrClosed = wire.ErrClosed

// CauseText returns err's message for an error that wraps it and names the endpoint itself (see
// wire.CauseText).
func CauseText(err error) string { return wire.CauseText(err) }

// Classify says whether a connection failure may be retried: wire.Classify, plus the failures only
// sockets produce that retrying cannot fix. Permanent: a *HandshakeError whose Class says so
// (authentication, ACL, unsupported setup), TLS authentication failures (certificate
// verification, alerts from the peer, a peer that does not speak TLS) and protocol errors
// (*resp.ProtocolError). Transient: everything else, including refused and reset connections,
// timeouts, cancellation and transient server codes such as LOADING.
func Classify(err error) fsm.FailureClass { return wire.ClassifyWith(err, isTLSAuthFailure) }

// isTLSAuthFailure recognizes TLS failures that retrying cannot fix.
func isTLSAuthFailure(err error) bool {
	var (
		verify    *tls.CertificateVerificationError
		alert     tls.AlertError
		record    tls.RecordHeaderError
		unknownCA x509.UnknownAuthorityError
		hostname  x509.HostnameError
		invalid   x509.CertificateInvalidError
	)
	if errors.As(err, &verify) || errors.As(err, &alert) || errors.As(err, &record) ||
		errors.As(err, &unknownCA) || errors.As(err, &hostname) || errors.As(err, &invalid) {
		return true
	}
	// crypto/tls reports an alert received from the peer (such as "bad certificate" when the
	// server rejects the client's certificate) as a *net.OpError with this Op.
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "remote error"
}
