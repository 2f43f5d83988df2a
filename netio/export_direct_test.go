package netio

import (
	"testing"
	"time"
)

// AwaitWriterIdle waits until c's writer goroutine has parked with nothing queued, so that the
// next small Send takes the direct path (conn_direct.go). A reply can reach its caller before the
// writer that wrote its command has gone back to wait, so a test that needs the direct path waits
// for this first.
func AwaitWriterIdle(t testing.TB, c *Conn) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		c.qmu.Lock()
		idle := c.writerIdle
		c.qmu.Unlock()
		if idle && c.inFlight.Load() == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the connection's writer did not go idle within 5s")
		}
		time.Sleep(time.Millisecond)
	}
}
