package netio

import "github.com/respire-go/respire/netio/wire"

// The handshake is pure protocol logic and lives in netio/wire, where the simulator drives the
// same machine over simulated pipes. These aliases keep its netio names.
type (
	// Protocol selects the RESP version a connection speaks (wire.Protocol).
	Protocol = wire.Protocol
	// HandshakeConfig is what a new connection sets up before it carries application commands
	// (wire.HandshakeConfig).
	HandshakeConfig = wire.HandshakeConfig
	// HandshakeError is a server error reply that failed a handshake (wire.HandshakeError).
	HandshakeError = wire.HandshakeError
	// Handshake is the pure setup sequence of one connection (wire.Handshake).
	Handshake = wire.Handshake
)

// Protocols (wire's).
const (
	// ProtocolAuto sends HELLO 3 and falls back to RESP2 on the same connection only when the
	// server reports an unknown HELLO or NOPROTO.
	ProtocolAuto = wire.ProtocolAuto
	// ProtocolRESP2 skips HELLO.
	ProtocolRESP2 = wire.ProtocolRESP2
	// ProtocolRESP3 requires RESP3: a HELLO failure fails the connection.
	ProtocolRESP3 = wire.ProtocolRESP3
)

// NewHandshake returns the handshake for cfg (wire.NewHandshake).
func NewHandshake(cfg HandshakeConfig) *Handshake { return wire.NewHandshake(cfg) }

// IsTransientCode reports whether a server error code is transient (wire.IsTransientCode).
func IsTransientCode(code string) bool { return wire.IsTransientCode(code) }

// RedactReply returns the text of an error reply fit to appear in an error, without what the
// server echoed of the request (wire.RedactReply).
func RedactReply(reply, command, secret string) string {
	return wire.RedactReply(reply, command, secret)
}
