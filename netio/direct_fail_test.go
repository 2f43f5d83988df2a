package netio_test

import (
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/respire-go/respire/netio"
	"github.com/respire-go/respire/netio/redistest"
)

// errInjectedWrite is the failure failingConn's writes return once armed.
var errInjectedWrite = errors.New("injected write failure")

// failingConn fails every write once armed, without writing, and records which goroutine made
// each failed write.
type failingConn struct {
	net.Conn
	armed  atomic.Bool
	mu     sync.Mutex
	failed []int
}

func (c *failingConn) Write(p []byte) (int, error) {
	if c.armed.Load() {
		c.mu.Lock()
		c.failed = append(c.failed, goroutineID())
		c.mu.Unlock()
		return 0, errInjectedWrite
	}
	return c.Conn.Write(p)
}

func (c *failingConn) failures() []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]int(nil), c.failed...)
}

// TestDirectWriteFailureFailsTheConnectionOnce: a write that the caller makes itself, on an idle
// connection, fails the connection as a write of the writer goroutine does: the command
// completes once, with an *IOError (op "write") at StageWriting, an unknown outcome, never a
// definite failure; the Sink hears Lost exactly once; a later Send is rejected at StageBuffered
// with the same failure. The test checks that the failed write was the caller's (the direct path
// ran), not the writer's.
func TestDirectWriteFailureFailsTheConnectionOnce(t *testing.T) {
	srv := redistest.Start(t, redistest.Config{})
	var fc *failingConn
	tr := netio.NewTransport(netio.TransportConfig{Dialer: wrappingDialer(func(nc net.Conn) net.Conn {
		fc = &failingConn{Conn: nc}
		return fc
	})})
	conn, s := mustConnect(t, tr, tcp(t, srv.Addr()))
	do(t, conn, "PING")
	netio.AwaitWriterIdle(t, conn) // the writer of the handshake or the PING may not have parked yet
	me := goroutineID()

	fc.armed.Store(true)
	c := newCmd("SET", "direct:fail", "v")
	conn.Send(&c.Command)
	c.wait(t)
	if got := fc.failures(); len(got) != 1 || got[0] != me {
		t.Fatalf("failed writes by goroutines %v, want one, by the caller (%d): the direct path did not run", got, me)
	}
	var ioErr *netio.IOError
	if !errors.As(c.Err, &ioErr) || ioErr.Op != "write" || !errors.Is(c.Err, errInjectedWrite) {
		t.Fatalf("the command's error: %v, want the write's *IOError", c.Err)
	}
	if !c.MaybeSent() {
		t.Fatalf("a command whose write failed completed as never sent (stage %v): its outcome is unknown", c.Stage())
	}
	lost := s.awaitLost(t)
	if !errors.As(lost, &ioErr) || ioErr.Op != "write" {
		t.Fatalf("Lost: %v, want the write's *IOError", lost)
	}
	late := newCmd("GET", "direct:fail")
	conn.Send(&late.Command)
	late.wait(t)
	if !errors.Is(late.Err, errInjectedWrite) || late.MaybeSent() {
		t.Fatalf("a Send after the failure: %v (maybe sent %v), want the same failure, never sent", late.Err, late.MaybeSent())
	}
	conn.Close()
	if n := s.losts.Load(); n != 1 {
		t.Fatalf("Lost reported %d times, want once", n)
	}
	if got := fc.failures(); len(got) != 1 {
		t.Fatalf("%d writes after the failure, want none", len(got)-1)
	}
}
