package netio_test

import (
	"bytes"
	"net"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/respire-go/respire/engine"
	"github.com/respire-go/respire/netio"
	"github.com/respire-go/respire/netio/redistest"
	"github.com/respire-go/respire/netio/resp"
)

// goroutineID returns the calling goroutine's number, from the header of its stack trace.
func goroutineID() int {
	var buf [64]byte
	b := buf[:runtime.Stack(buf[:], false)]
	b = bytes.TrimPrefix(b, []byte("goroutine "))
	if i := bytes.IndexByte(b, ' '); i > 0 {
		b = b[:i]
	}
	id, err := strconv.Atoi(string(b))
	if err != nil {
		panic("goroutine id: " + err.Error())
	}
	return id
}

// writerConn records, for every write of the socket, the goroutine that made it.
type writerConn struct {
	net.Conn
	mu      sync.Mutex
	writers []int
}

func (c *writerConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	c.writers = append(c.writers, goroutineID())
	c.mu.Unlock()
	return c.Conn.Write(p)
}

// count returns how many of ids are id.
func count(ids []int, id int) int {
	n := 0
	for _, x := range ids {
		if x == id {
			n++
		}
	}
	return n
}

// take returns the writers recorded since the last take.
func (c *writerConn) take() []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	w := c.writers
	c.writers = nil
	return w
}

// TestIdleSendWritesOnTheCallersGoroutine: on an idle connection the caller writes its own
// command, with no hand-off to the writer goroutine (conn_direct.go). A command sent while
// another is in flight, and a frame larger than the direct bound, go through the writer. Before
// the direct path every write came from the writer goroutine, and the first check failed (checked
// with enqueue's direct branch removed).
func TestIdleSendWritesOnTheCallersGoroutine(t *testing.T) {
	srv := redistest.Start(t, redistest.Config{})
	var wc *writerConn
	tr := netio.NewTransport(netio.TransportConfig{Dialer: wrappingDialer(func(nc net.Conn) net.Conn {
		wc = &writerConn{Conn: nc}
		return wc
	})})
	conn, _ := mustConnect(t, tr, tcp(t, srv.Addr()))
	me := goroutineID()
	wc.take() // the handshake's writes

	// Idle: this goroutine writes. Right after a write the writer goroutine may not have parked
	// yet when the reply arrives, and the next command then goes to the writer, so the check is
	// that the caller wrote some of them; before the direct path it wrote none.
	const sequential = 20
	for i := range sequential {
		do(t, conn, "SET", "direct:k", strconv.Itoa(i))
	}
	if got := wc.take(); len(got) != sequential || count(got, me) == 0 {
		t.Fatalf("%d sequential commands: %d writes, %d of them by the caller (goroutines %v)", sequential, len(got), count(got, me), got)
	}
	// A group is written by one write, whoever writes it.
	group := []*cmd{newCmd("INCR", "direct:n"), newCmd("INCR", "direct:n"), newCmd("GET", "direct:k")}
	unit := make([]*engine.Command, len(group))
	for i, c := range group {
		unit[i] = &c.Command
	}
	if !conn.OfferGroup(unit) {
		t.Fatal("the open connection refused a group")
	}
	for _, c := range group {
		if c.wait(t); c.Err != nil {
			t.Fatalf("%s: %v", c.Name, c.Err)
		}
	}
	if got := wc.take(); len(got) != 1 {
		t.Fatalf("a group of 3 took %d writes, want 1", len(got))
	}

	// Busy: a BLPOP holds the connection's flight, so the next command queues for the writer,
	// which writes it after the BLPOP's own (direct) write. Replies keep their order.
	blpop := newCmd("BLPOP", "direct:list", "0")
	conn.Send(&blpop.Command)
	ping := newCmd("PING")
	conn.Send(&ping.Command)
	if ping.completed() {
		t.Fatal("PING completed before the BLPOP ahead of it")
	}
	other := mustConnectDefault(t, tcp(t, srv.Addr()))
	do(t, other, "LPUSH", "direct:list", "x")
	if blpop.wait(t); blpop.Err != nil || blpop.Reply.Kind != resp.KindArray {
		t.Fatalf("BLPOP: %v %v", blpop.Err, blpop.Reply.String())
	}
	if ping.wait(t); ping.Err != nil || string(ping.Reply.Str) != "PONG" {
		t.Fatalf("PING: %v %v", ping.Err, ping.Reply.String())
	}
	if got := wc.take(); len(got) != 2 || got[1] == me {
		t.Fatalf("writes: goroutines %v, want two, the second (PING, queued behind the BLPOP in flight) the writer's, not the caller's (%d)", got, me)
	}

	// Large: a frame beyond the direct bound goes to the writer even on an idle connection.
	big := strings.Repeat("x", 20<<10)
	do(t, conn, "SET", "direct:big", big)
	if got := wc.take(); len(got) != 1 || got[0] == me {
		t.Fatalf("a 20 KiB frame was written by goroutines %v, want the writer's, not the caller's (%d)", got, me)
	}
	if v := do(t, conn, "STRLEN", "direct:big"); v.Int != int64(len(big)) {
		t.Fatalf("STRLEN = %s", v.String())
	}
}

// TestDirectWritesKeepOrderUnderConcurrency: callers that find the connection idle write their
// own commands while others queue for the writer; every caller's INCRs still complete in its own
// order with consecutive values of its own counter, and nothing is lost or paired with another
// caller's reply.
func TestDirectWritesKeepOrderUnderConcurrency(t *testing.T) {
	srv := redistest.Start(t, redistest.Config{})
	conn := mustConnectDefault(t, tcp(t, srv.Addr()))
	incrFromCallers(t, conn, "direct:ctr:", 8, 300)
}
