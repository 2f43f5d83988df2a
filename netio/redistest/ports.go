package redistest

import (
	"fmt"
	"net"
	"sync"
)

// pickPort is freePort, replaceable by tests to provoke collisions.
var pickPort = freePort

var (
	portMu    sync.Mutex
	usedPorts = map[int]bool{}
)

// freePort returns a loopback TCP port that was free a moment ago: the
// kernel picks it for a listener on 127.0.0.1:0 that is closed right away.
// A port is never handed out twice by one process, so concurrently started
// servers of the same test binary cannot collide; collisions with other
// processes are handled by retrying the start (see errAddrInUse).
func freePort() (int, error) {
	var lastErr error
	for range 100 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			lastErr = err
			continue
		}
		port := l.Addr().(*net.TCPAddr).Port
		if err := l.Close(); err != nil {
			lastErr = err
			continue
		}
		portMu.Lock()
		fresh := !usedPorts[port]
		usedPorts[port] = true
		portMu.Unlock()
		if fresh {
			return port, nil
		}
	}
	return 0, fmt.Errorf("no free loopback port found: %v", lastErr)
}
