package netio_test

import (
	"strings"
	"sync"
	"testing"

	"github.com/respire-go/respire/engine"
	"github.com/respire-go/respire/netio"
	"github.com/respire-go/respire/netio/redistest"
	"github.com/respire-go/respire/netio/resp"
)

// TestDrainMoveHandsBackTheQueuedCommands: the server stops reading after BLOCK, so the writer
// blocks in the write of a large SET and the next commands queue behind it. DrainMove hands back
// exactly those queued commands, untouched and never written (the server never sees them);
// BLOCK and the SET, which may have reached the server, stay and drain: once the server reads
// again and answers them, the connection closes on its own, without a Lost.
func TestDrainMoveHandsBackTheQueuedCommands(t *testing.T) {
	release := make(chan struct{})
	var mu sync.Mutex
	var seen []string
	f := redistest.StartFake(t, func(c *redistest.FakeConn, args []string) {
		if c.Standard(args) {
			return
		}
		mu.Lock()
		seen = append(seen, args[0]+" "+args[1])
		mu.Unlock()
		if args[0] == "BLOCK" {
			<-release // stop reading: the client's writes back up
		}
		c.Reply(resp.SimpleString("OK"))
	})
	conn, s := mustConnect(t, netio.NewTransport(netio.TransportConfig{}), tcp(t, f.Addr()))
	block := newCmd("BLOCK", "x")
	conn.Send(&block.Command)
	big := newCmd("SET", "big", strings.Repeat("x", 8<<20))
	conn.Send(&big.Command)
	if !waitFor(func() bool { return big.Stage() == engine.StageWriting }) {
		t.Fatalf("the large SET never started its write: %v", big.Stage())
	}
	q1, q2 := newCmd("GET", "q1"), newCmd("GET", "q2")
	conn.Send(&q1.Command)
	conn.Send(&q2.Command)

	moved := conn.DrainMove()
	if len(moved) != 2 || moved[0] != &q1.Command || moved[1] != &q2.Command {
		close(release)
		t.Fatalf("DrainMove handed back %d commands, want the two queued behind the blocked write", len(moved))
	}
	if again := conn.DrainMove(); len(again) != 0 {
		t.Fatal("a second DrainMove handed back commands")
	}
	close(release)
	block.wait(t)
	big.wait(t)
	if block.Err != nil || big.Err != nil {
		t.Fatalf("the accepted commands did not drain: %v, %v", block.Err, big.Err)
	}
	if !waitFor(conn.Stopped) {
		t.Fatal("the drained connection did not close")
	}
	if q1.completed() || q2.completed() || q1.Stage() != engine.StageBuffered || q2.Stage() != engine.StageBuffered {
		t.Fatalf("the old connection touched a command it handed back: %v, %v", q1.Stage(), q2.Stage())
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 2 || seen[0] != "BLOCK x" || seen[1] != "SET big" {
		t.Fatalf("the server saw %q, want only BLOCK and SET", seen)
	}
	if s.losts.Load() != 0 {
		t.Fatal("a drained connection reported Lost")
	}
}
