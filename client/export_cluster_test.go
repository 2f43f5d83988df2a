package client

import "time"

// SetRetiredGraceForTest shortens the grace after which a departed Cluster node's endpoint is
// never dialed again (10 s by default), and returns a function restoring it.
func SetRetiredGraceForTest(d time.Duration) (restore func()) {
	old := testRetiredGrace
	testRetiredGrace = d
	return func() { testRetiredGrace = old }
}
