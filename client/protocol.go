package client

import "github.com/respire-go/respire/netio"

// Protocol selects the RESP version a connection negotiates (Options.Protocol).
type Protocol int

// Protocols. The values are the RESP versions, so that Protocol(3) is ProtocolRESP3.
const (
	// ProtocolAuto (the zero value) sends HELLO 3 and falls back to RESP2 on the same connection
	// only when the server does not know HELLO or refuses the version (NOPROTO).
	ProtocolAuto Protocol = 0
	// ProtocolRESP2 speaks RESP2 and sends no HELLO.
	ProtocolRESP2 Protocol = 2
	// ProtocolRESP3 requires RESP3: a refused HELLO fails the connection.
	ProtocolRESP3 Protocol = 3
)

// String returns "auto", "resp2" or "resp3", or "protocol(N)" for any other value (the
// protocol layer's names: one table for both).
func (p Protocol) String() string { return netio.Protocol(p).String() }
