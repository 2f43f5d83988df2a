package netio_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/netio"
	"github.com/respire-go/respire/netio/redistest"
	"github.com/respire-go/respire/netio/resp"
)

// TestConnHostsMaintenanceRelaxation runs against the scripted fake server: a connection whose
// handshake the server acknowledged hosts a relaxation, applies the notices pushed on it (a
// malformed one is dropped without failing the connection), and still delivers every push to the
// push handler. A connection whose server does not know the command hosts none, and one that did
// not opt in never sends it.
func TestConnHostsMaintenanceRelaxation(t *testing.T) {
	var unknown atomic.Bool
	f := redistest.StartFake(t, func(c *redistest.FakeConn, args []string) {
		if len(args) >= 2 && args[0] == "CLIENT" && args[1] == "MAINT_NOTIFICATIONS" && unknown.Load() {
			c.ErrorReply("ERR unknown subcommand 'MAINT_NOTIFICATIONS'. Try CLIENT HELP.")
			return
		}
		if c.Standard(args) {
			return
		}
		switch args[0] {
		case "NOTICE":
			c.Push(resp.BulkString("MIGRATING"), resp.Int(1), resp.Int(10), resp.BulkString("shard-1"))
			c.Push(resp.BulkString("MIGRATING"), resp.BulkString("not a number")) // malformed
		case "DONE":
			c.Push(resp.BulkString("MIGRATED"), resp.Int(2))
		}
		c.Reply(resp.SimpleString("OK"))
	})
	ep := tcp(t, f.Addr())
	pushes := make(chan struct{}, 16)
	cfg := netio.TransportConfig{Handshake: netio.HandshakeConfig{Maintenance: netio.MaintAuto},
		Maintenance: fsm.MaintConfig{RelaxedTimeout: time.Second, WindowTimeout: time.Minute},
		Push:        func(resp.Value) { pushes <- struct{}{} }}
	conn, _ := mustConnect(t, netio.NewTransport(cfg), ep)
	r := conn.Relax()
	if r == nil {
		t.Fatal("an acknowledged opt-in hosts no relaxation")
	}
	do(t, conn, "NOTICE")
	if r.Notices() != 1 || !r.Relaxed() {
		t.Fatalf("notices %d, relaxed %v after MIGRATING", r.Notices(), r.Relaxed())
	}
	now := time.Now()
	if d, _ := r.Deadline(now, now, 100*time.Millisecond); !d.Equal(now.Add(time.Second)) {
		t.Fatalf("relaxed deadline %v after the start, want 1s", d.Sub(now))
	}
	do(t, conn, "DONE")
	if r.Notices() != 2 || r.Relaxed() {
		t.Fatalf("notices %d, relaxed %v after MIGRATED", r.Notices(), r.Relaxed())
	}
	if len(pushes) != 3 {
		t.Fatalf("%d pushes reached the handler, want 3", len(pushes))
	}
	if got := do(t, conn, "PING"); got.String() != resp.SimpleString("PONG").String() {
		t.Fatalf("PING after the notices: %v", got)
	}

	unknown.Store(true)
	conn2, _ := mustConnect(t, netio.NewTransport(cfg), ep)
	if conn2.Relax() != nil {
		t.Fatal("a server without the command left the relaxation on")
	}
	cfg.Handshake.Maintenance = netio.MaintDisabled
	conn3, _ := mustConnect(t, netio.NewTransport(cfg), ep)
	if conn3.Relax() != nil {
		t.Fatal("a connection that did not opt in hosts a relaxation")
	}
}
