package sim

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/respire-go/respire/engine"
	"github.com/respire-go/respire/netio/resp"
)

// rawClient speaks commands to a simulated node over a connection whose handshake is empty
// (RESP2, no authentication, no metadata), so every command reaches the node as written.
type rawClient struct {
	h    *harness
	c    engine.Conn
	next uint64
}

func newRawClient(t *testing.T, yaml string) *rawClient {
	t.Helper()
	h := newHarness(t, "client: {protocol: resp2, disable_library_info: true}\n"+yaml)
	h.open(context.Background(), 1, 0)
	h.until(5 * time.Millisecond)
	return &rawClient{h: h, c: h.ready(0)}
}

// do sends one command and returns its reply (a server error is a reply).
func (r *rawClient) do(args ...string) resp.Value {
	r.h.t.Helper()
	r.next++
	var done []*engine.Command
	cmd := command(r.next, &done, args...)
	send(r.c, cmd)
	r.h.until(r.h.w.k.now + 5*time.Millisecond)
	if len(done) != 1 || cmd.Err != nil {
		r.h.t.Fatalf("%v: %v", args, cmd.Err)
	}
	return cmd.Reply.Clone()
}

func (r *rawClient) expect(want string, args ...string) {
	r.h.t.Helper()
	if got := r.do(args...); got.String() != want {
		r.h.t.Fatalf("%v: got %s, want %s", args, got.String(), want)
	}
}

func (r *rawClient) expectError(prefix string, args ...string) {
	r.h.t.Helper()
	got := r.do(args...)
	if !got.IsError() || !strings.HasPrefix(got.ErrorMessage(), prefix) {
		r.h.t.Fatalf("%v: got %s, want an error starting %q", args, got.String(), prefix)
	}
}

func TestNodeCommands(t *testing.T) {
	r := newRawClient(t, "")
	pong, ok := resp.SimpleString("PONG").String(), resp.SimpleString("OK").String()
	null := resp.NullBulk().String()
	r.expect(pong, "PING")
	r.expect(resp.BulkString("hi").String(), "ping", "hi")
	r.expectError("ERR unknown command 'FOO', with args beginning with: 'a' ", "FOO", "a")
	r.expectError("ERR wrong number of arguments for 'get' command", "GET")
	r.expectError("ERR unknown subcommand 'SETINFO'. Try CLIENT HELP.", "CLIENT", "SETINFO", "LIB-NAME", "x")
	r.expect(ok, "CLIENT", "SETNAME", "app")
	r.expect(resp.BulkString("app").String(), "CLIENT", "GETNAME")
	r.expectError("ERR AUTH <password> called without any password", "AUTH", "pw")
	r.expect(ok, "AUTH", "default", "anything")

	r.expect(null, "GET", "k")
	r.expect(ok, "SET", "k", "v1", "NX")
	r.expect(null, "SET", "k", "v2", "NX")
	r.expect(resp.BulkString("v1").String(), "SET", "k", "v3", "XX", "GET")
	r.expect(resp.BulkString("v3").String(), "GET", "k")
	r.expect(null, "SET", "absent", "v", "XX")
	r.expectError("ERR syntax error", "SET", "k", "v", "NX", "XX")
	r.expectError("ERR syntax error", "SET", "k", "v", "BOGUS")
	r.expectError("ERR invalid expire time", "SET", "k", "v", "EX", "0")

	r.expect(ok, "MSET", "a", "1", "b", "2")
	r.expect(resp.ArrayOf(resp.BulkString("1"), resp.BulkString("2"), resp.NullBulk()).String(), "MGET", "a", "b", "c")
	r.expect(resp.Int(2).String(), "EXISTS", "a", "b", "c")
	r.expect(resp.Int(1).String(), "DEL", "a", "c")
	r.expect(resp.Int(1).String(), "EXISTS", "a", "b")
	r.expectError("ERR wrong number of arguments for 'mset' command", "MSET", "a")

	r.expect(resp.Int(1).String(), "INCR", "n")
	r.expect(resp.Int(2).String(), "INCR", "n")
	r.expectError("ERR value is not an integer or out of range", "INCR", "k")

	// Databases are separate.
	r.expect(ok, "SELECT", "1")
	r.expect(null, "GET", "k")
	r.expectError("ERR DB index is out of range", "SELECT", "16")
	r.expect(ok, "SELECT", "0")
	r.expect(resp.BulkString("v3").String(), "GET", "k")

	// Expiry runs on virtual time.
	r.expect(ok, "SET", "tmp", "x", "PX", "100")
	r.expect(resp.BulkString("x").String(), "GET", "tmp")
	r.h.until(r.h.w.k.now + 100*time.Millisecond)
	r.expect(null, "GET", "tmp")
}

func TestNodeHello(t *testing.T) {
	r := newRawClient(t, "")
	r.expectError("NOPROTO unsupported protocol version", "HELLO", "4")
	r.expectError("ERR Protocol version is not an integer", "HELLO", "three")
	r.expectError("ERR Syntax error in HELLO option 'bogus'", "HELLO", "3", "bogus")
	hello := r.do("HELLO", "3", "SETNAME", "svc")
	if hello.Kind != resp.KindMap || !strings.Contains(hello.String(), "proto") || !strings.Contains(hello.String(), "7.0.15") {
		t.Fatalf("HELLO 3 reply %s", hello.String())
	}
	// RESP3 from now on: a missing key is the RESP3 null.
	if v := r.do("GET", "missing"); v.Kind != resp.KindNull || v.NullForm != resp.NullFormRESP3 {
		t.Fatalf("RESP3 null: %s (form %d)", v.String(), v.NullForm)
	}
	if v := r.do("HELLO", "2"); v.Kind != resp.KindArray {
		t.Fatalf("HELLO 2 must answer a flat array, got %s", v.String())
	}
	if v := r.do("GET", "missing"); v.Kind != resp.KindNull || v.NullForm != resp.NullFormBulk {
		t.Fatalf("RESP2 null: %s (form %d)", v.String(), v.NullForm)
	}
}

func TestNodeRequirePass(t *testing.T) {
	r := newRawClient(t, "topology: {nodes: [{id: r1, password: pw}]}\n")
	r.expectError("NOAUTH Authentication required.", "GET", "k")
	r.expectError("NOAUTH Authentication required.", "PING")
	r.expectError("NOAUTH HELLO must be called with the client already authenticated", "HELLO", "3")
	r.expectError("WRONGPASS", "AUTH", "nope")
	r.expectError("WRONGPASS", "AUTH", "someone", "pw")
	r.expect(resp.SimpleString("OK").String(), "AUTH", "pw")
	r.expect(resp.NullBulk().String(), "GET", "k")
	if len(r.h.w.res.Applies) != 1 {
		t.Fatalf("only the authenticated GET was applied: %+v", r.h.w.res.Applies)
	}
}

// TestNodeProtocolError: a malformed request is answered with an error and the connection closed.
func TestNodeProtocolError(t *testing.T) {
	r := newRawClient(t, "")
	var done []*engine.Command
	cmd := &engine.Command{ID: 1, Name: "BAD", Frame: []byte("*1\r\n$x\r\n"), Done: func(c *engine.Command) { done = append(done, c) }}
	send(r.c, cmd)
	r.h.until(r.h.w.k.now + 5*time.Millisecond)
	if len(done) != 1 || cmd.Err != nil || !strings.HasPrefix(cmd.Reply.ErrorMessage(), "ERR Protocol error") {
		t.Fatalf("reply %v err %v", cmd.Reply, cmd.Err)
	}
	if got := r.h.sink.kinds(); got != "dialed,ready,lost" {
		t.Fatalf("sink calls %s", got)
	}
	if lost := r.h.sink.events[2]; !errors.Is(lost.err, io.EOF) {
		t.Fatalf("the node closed the connection in order: %v", lost.err)
	}
}

// TestNodeQuit: QUIT answers OK and the node closes the connection.
func TestNodeQuit(t *testing.T) {
	r := newRawClient(t, "")
	r.expect(resp.SimpleString("OK").String(), "QUIT")
	r.h.until(r.h.w.k.now + 5*time.Millisecond)
	if got := r.h.sink.kinds(); got != "dialed,ready,lost" {
		t.Fatalf("sink calls %s", got)
	}
}
