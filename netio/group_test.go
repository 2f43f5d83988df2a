package netio_test

import (
	"sync"
	"testing"

	"github.com/respire-go/respire/engine"
	"github.com/respire-go/respire/netio/redistest"
	"github.com/respire-go/respire/netio/resp"
)

// TestOfferGroupIsContiguous: a MULTI ... EXEC group offered while other goroutines send plain
// commands on the same connection reaches the server as one unit. Had another command slipped
// between MULTI and EXEC, it would have been queued (its reply QUEUED instead of an integer)
// and the transaction's reply would have counted it.
func TestOfferGroupIsContiguous(t *testing.T) {
	srv := redistest.Start(t, redistest.Config{})
	conn := mustConnectDefault(t, tcp(t, srv.Addr()))
	const groups, singles, senders = 200, 200, 4
	var wg sync.WaitGroup
	failures := make(chan string, senders+1)
	for s := 0; s < senders; s++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < singles; i++ {
				c := newCmd("INCR", "group:single")
				conn.Send(&c.Command)
				c.wait(t)
				if c.Err != nil || c.Reply.Kind != resp.KindInteger {
					failures <- "a plain INCR got " + c.Reply.String()
					return
				}
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < groups; i++ {
			cmds := []*cmd{newCmd("MULTI"), newCmd("INCR", "group:tx"), newCmd("INCR", "group:tx"), newCmd("EXEC")}
			unit := make([]*engine.Command, len(cmds))
			for k, c := range cmds {
				unit[k] = &c.Command
			}
			if !conn.OfferGroup(unit) {
				failures <- "the open connection refused a group"
				return
			}
			for _, c := range cmds {
				c.wait(t)
			}
			exec := cmds[3].Reply
			if exec.Kind != resp.KindArray || exec.Len() != 2 {
				failures <- "EXEC replied " + exec.String()
				return
			}
			if q := cmds[1].Reply; q.Kind != resp.KindSimpleString || string(q.Str) != "QUEUED" {
				failures <- "a queued INCR got " + q.String()
				return
			}
		}
	}()
	wg.Wait()
	close(failures)
	for f := range failures {
		t.Fatal(f)
	}
	v := do(t, conn, "GET", "group:tx")
	if string(v.Str) != "400" {
		t.Fatalf("group:tx = %s, want 400", v.String())
	}
}

// TestOfferGroupRefusedAfterClose: a closed connection refuses a group and leaves every command
// untouched, at StageBuffered, for the engine to route.
func TestOfferGroupRefusedAfterClose(t *testing.T) {
	srv := redistest.Start(t, redistest.Config{})
	conn := mustConnectDefault(t, tcp(t, srv.Addr()))
	conn.Close()
	a, b := newCmd("PING"), newCmd("PING")
	if conn.OfferGroup([]*engine.Command{&a.Command, &b.Command}) {
		t.Fatal("a closed connection took a group")
	}
	if a.completed() || b.completed() || a.Stage() != engine.StageBuffered {
		t.Fatalf("a refused group was touched: stage %v", a.Stage())
	}
}
