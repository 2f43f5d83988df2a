package wire

import (
	"errors"

	"github.com/respire-go/respire/engine"
	"github.com/respire-go/respire/fsm"
)

// FailedConn returns the connection whose failure err reports, and the endpoint it went to:
// the connection a fence settles. It is false when err names no failed connection (a command
// timeout or a cancelled context while the connection stayed up, a connect failure, or an
// error from elsewhere). Both drivers' callers use it: client.Settle and the simulator's
// workload.
func FailedConn(err error) (engine.Endpoint, fsm.ConnID, bool) {
	var ioe *IOError
	if !errors.As(err, &ioe) || ioe.Conn == 0 {
		return engine.Endpoint{}, 0, false
	}
	return ioe.Endpoint, ioe.Conn, true
}
