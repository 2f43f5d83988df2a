package netio_test

import (
	"net"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/respire-go/respire/netio"
	"github.com/respire-go/respire/netio/redistest"
)

// stalledConn plays a client process that was not scheduled while its reply arrived: once
// armed, the next read that receives bytes keeps them, waits for stall, and reports the read
// deadline's expiry instead, as the runtime does when the process runs again with the
// deadline's timer and the readable socket both due. The kept bytes are the next read's, as
// the socket buffer would give them.
type stalledConn struct {
	net.Conn
	stall   atomic.Int64 // the armed stall, in nanoseconds (zero: none)
	stalled atomic.Bool  // a stall was played
	mu      sync.Mutex
	held    []byte
}

func (c *stalledConn) Read(p []byte) (int, error) {
	c.mu.Lock()
	if len(c.held) > 0 {
		n := copy(p, c.held)
		c.held = c.held[n:]
		c.mu.Unlock()
		return n, nil
	}
	c.mu.Unlock()
	n, err := c.Conn.Read(p)
	if n > 0 {
		if d := c.stall.Swap(0); d > 0 {
			c.mu.Lock()
			c.held = append(c.held, p[:n]...)
			c.mu.Unlock()
			time.Sleep(time.Duration(d))
			c.stalled.Store(true)
			return 0, os.ErrDeadlineExceeded
		}
	}
	return n, err
}

// TestIdleReadTimeoutSparesARepliedStalledProcess: a process that did not run for longer than
// the idle-read bound while its reply arrived finds the read deadline expired and the reply in
// the socket buffer. That is no silent peer: the reply is read, and the connection stays.
// Before, the connection failed ("no reply byte for 100ms with replies pending") with the
// reply unread: TestIdleReadTimeoutKeepsAnsweringConnectionAlive failed so with its test
// process stopped for 350 ms (a loaded machine), and this test fails so on that code.
func TestIdleReadTimeoutSparesARepliedStalledProcess(t *testing.T) {
	const bound = 100 * time.Millisecond
	srv := redistest.Start(t, redistest.Config{})
	var sc *stalledConn
	tr := netio.NewTransport(netio.TransportConfig{
		IdleReadTimeout: bound,
		Dialer: wrappingDialer(func(nc net.Conn) net.Conn {
			sc = &stalledConn{Conn: nc}
			return sc
		}),
	})
	conn, s := mustConnect(t, tr, tcp(t, srv.Addr()))
	do(t, conn, "PING")
	sc.stall.Store(int64(3 * bound))
	if got := do(t, conn, "ECHO", "after the stall"); got.String() != `"after the stall"` {
		t.Fatalf("ECHO after the stall: %v", got)
	}
	// The fault happened: the reply waited in the buffer past the bound, behind an expired
	// deadline.
	if !sc.stalled.Load() {
		t.Fatal("no stall was played: the test proved nothing")
	}
	if s.losts.Load() != 0 || conn.Err() != nil {
		t.Fatalf("the connection failed: %v", conn.Err())
	}
	do(t, conn, "PING")
}
