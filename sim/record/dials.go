package record

import (
	"time"

	"github.com/respire-go/respire/fsm"
)

// Dial is one connection attempt the client started (Result.Dials): whatever its outcome, a
// dial reached for the endpoint at At.
type Dial struct {
	// Conn is the attempt's connection id.
	Conn fsm.ConnID
	// Endpoint is "host:port" as the client dialed it (a DNS name is not resolved).
	Endpoint string
	// Machine is the machine the connection was for.
	Machine fsm.Machine
	// At is the virtual time of the dial.
	At time.Duration
}
