package netio

import (
	"testing"
	"time"
)

// SetParkIdle makes the connections started until the test ends keep a free read side for d,
// and a direct group's free side for its caller for d too.
func SetParkIdle(t testing.TB, d time.Duration) {
	idle, claim := parkIdle, claimWindow
	parkIdle, claimWindow = d, d
	t.Cleanup(func() { parkIdle, claimWindow = idle, claim })
}

// CallerReads returns how many groups callers read themselves on c (conn_callread.go).
func CallerReads(c *Conn) uint64 { return c.cr.reads.Load() }

// ParkTimerResets returns how many times c moved its park timer (conn_callread.go).
func ParkTimerResets(c *Conn) uint64 { return c.cr.resets.Load() }

// ReadSideFree reports whether c's reader goroutine is parked with its read side free.
func ReadSideFree(c *Conn) bool {
	c.fmu.Lock()
	defer c.fmu.Unlock()
	return c.cr.side == sideFree
}

// ReadBusy returns how many requests to read c still ignores after callers overlapped.
func ReadBusy(c *Conn) int {
	c.fmu.Lock()
	defer c.fmu.Unlock()
	return c.cr.busy
}

// ClearReadBusy ends c's countdown of ignored requests to read, so that a test whose callers
// overlap on purpose still has the side lent.
func ClearReadBusy(c *Conn) {
	c.fmu.Lock()
	c.cr.busy = 0
	c.fmu.Unlock()
}
