package redistest

import (
	"errors"
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/respire-go/respire/netio/resp"
)

// Fake is a scripted RESP3 server on a loopback port, for what the real Redis 7.0 of the tests
// never does, such as sending maintenance notifications at a chosen point. Each connection runs
// on its own goroutine and hands every command, in order, to the script; the script answers with
// FakeConn.Reply and may send pushes with FakeConn.Push, before or after its reply, or delay.
//
// The script sees every command, the handshake's included; FakeConn.Standard answers the
// handshake the way a RESP3 server that knows CLIENT MAINT_NOTIFICATIONS does.
type Fake struct {
	ln     net.Listener
	script func(c *FakeConn, args []string)
	wg     sync.WaitGroup

	mu    sync.Mutex
	conns []*FakeConn
	done  bool
}

// FakeConn is one client connection of a Fake.
type FakeConn struct {
	nc  net.Conn
	mu  sync.Mutex
	buf []byte
}

// StartFake starts a Fake that runs script for each command and stops it when the test ends.
func StartFake(t testing.TB, script func(c *FakeConn, args []string)) *Fake {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("redistest: fake server: %v", err)
	}
	f := &Fake{ln: ln, script: script}
	f.wg.Add(1)
	go f.accept()
	t.Cleanup(f.Close)
	return f
}

// Host returns the loopback address the Fake listens on.
func (f *Fake) Host() string { return "127.0.0.1" }

// Port returns the Fake's port.
func (f *Fake) Port() int { return f.ln.Addr().(*net.TCPAddr).Port }

// Addr returns "host:port".
func (f *Fake) Addr() string { return f.ln.Addr().String() }

// Close stops accepting, closes every connection and waits for their goroutines.
func (f *Fake) Close() {
	f.mu.Lock()
	f.done = true
	conns := f.conns
	f.conns = nil
	f.mu.Unlock()
	_ = f.ln.Close()
	for _, c := range conns {
		_ = c.nc.Close()
	}
	f.wg.Wait()
}

// Conns returns the connections accepted so far that are still open.
func (f *Fake) Conns() []*FakeConn {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*FakeConn(nil), f.conns...)
}

func (f *Fake) accept() {
	defer f.wg.Done()
	for {
		nc, err := f.ln.Accept()
		if err != nil {
			return
		}
		c := &FakeConn{nc: nc}
		f.mu.Lock()
		if f.done {
			f.mu.Unlock()
			_ = nc.Close()
			return
		}
		f.conns = append(f.conns, c)
		f.mu.Unlock()
		f.wg.Add(1)
		go f.serve(c)
	}
}

// serve reads commands and hands them to the script until the connection closes.
func (f *Fake) serve(c *FakeConn) {
	defer f.wg.Done()
	defer c.nc.Close()
	var in []byte
	chunk := make([]byte, 4096)
	var args [][]byte
	for {
		n, err := resp.ParseCommand(in, &args, nil)
		if errors.Is(err, resp.ErrIncomplete) {
			m, rerr := c.nc.Read(chunk)
			if rerr != nil {
				return
			}
			in = append(in, chunk[:m]...)
			continue
		}
		if err != nil {
			return
		}
		words := make([]string, len(args))
		for i, a := range args {
			words[i] = string(a)
		}
		in = in[n:]
		f.script(c, words)
	}
}

// Reply writes v, RESP3-encoded.
func (c *FakeConn) Reply(v resp.Value) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.buf = resp.AppendValue(c.buf[:0], v, 3)
	_, _ = c.nc.Write(c.buf)
}

// Push writes a RESP3 push of elems.
func (c *FakeConn) Push(elems ...resp.Value) { c.Reply(resp.PushOf(elems...)) }

// Close closes the connection.
func (c *FakeConn) Close() { _ = c.nc.Close() }

// Standard answers the handshake and a few plain commands like a RESP3 server that supports
// maintenance notifications, and reports whether it answered args: HELLO (a RESP3 map), CLIENT
// SETINFO, CLIENT SETNAME, CLIENT MAINT_NOTIFICATIONS, SELECT (OK), PING (PONG) and ECHO.
func (c *FakeConn) Standard(args []string) bool {
	if len(args) == 0 {
		return false
	}
	name := strings.ToUpper(args[0])
	sub := ""
	if len(args) > 1 {
		sub = strings.ToUpper(args[1])
	}
	switch {
	case name == "HELLO":
		c.Reply(resp.MapOf(resp.BulkString("server"), resp.BulkString("fake"), resp.BulkString("version"),
			resp.BulkString("7.4.0"), resp.BulkString("proto"), resp.Int(3)))
	case name == "CLIENT" && (sub == "SETINFO" || sub == "SETNAME" || sub == "MAINT_NOTIFICATIONS"):
		c.Reply(resp.SimpleString("OK"))
	case name == "SELECT":
		c.Reply(resp.SimpleString("OK"))
	case name == "PING":
		c.Reply(resp.SimpleString("PONG"))
	case name == "ECHO" && len(args) == 2:
		c.Reply(resp.BulkString(args[1]))
	default:
		return false
	}
	return true
}

// ErrorReply writes an error reply.
func (c *FakeConn) ErrorReply(msg string) { c.Reply(resp.ErrorValue(msg)) }

// Int writes an integer reply.
func (c *FakeConn) Int(n int) { c.Reply(resp.Int(int64(n))) }
