package sim

import (
	"context"
	"testing"
	"time"

	"github.com/respire-go/respire/engine"
	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/netio/resp"
)

func TestNodeLists(t *testing.T) {
	r := newRawClient(t, "")
	r.expect(resp.Int(2).String(), "RPUSH", "l", "a", "b")
	r.expect(resp.Int(3).String(), "LPUSH", "l", "z")
	r.expect(resp.Int(3).String(), "LLEN", "l")
	r.expect(resp.BulkString("z").String(), "LPOP", "l")
	r.expect(resp.BulkString("b").String(), "RPOP", "l")
	r.expect(resp.ArrayOf(resp.BulkString("l"), resp.BulkString("a")).String(), "BLPOP", "none", "l", "1")
	r.expect(resp.NullBulk().String(), "LPOP", "l")
	r.expect(resp.SimpleString("OK").String(), "SET", "s", "v")
	r.expectError("WRONGTYPE", "RPUSH", "s", "x")
	r.expectError("WRONGTYPE", "BLPOP", "s", "1")
	r.expectError("ERR timeout is negative", "BLPOP", "l", "-1")
	r.expectError("ERR timeout is not a float", "BLPOP", "l", "x")
}

// TestNodeBlockingPops: blocked clients are served in the order they blocked, right after the
// push; a blocked connection parses nothing else until it is served; a timeout answers null;
// a connection closed while blocked takes nothing.
func TestNodeBlockingPops(t *testing.T) {
	h := newHarness(t, "client: {protocol: resp2, disable_library_info: true}\n")
	for i := range 4 {
		h.open(context.Background(), fsm.ConnID(i+1), 0)
	}
	h.until(5 * time.Millisecond)
	a, b, pusher, gone := h.ready(0), h.ready(1), h.ready(2), h.ready(3)
	var done []*engine.Command
	popA := command(1, &done, "BLPOP", "q", "0")
	behindA := command(2, &done, "PING")
	send(a, popA)
	send(a, behindA)
	h.until(h.w.k.now + 2*time.Millisecond)
	popGone := command(3, &done, "BLPOP", "q", "0")
	send(gone, popGone)
	h.until(h.w.k.now + 2*time.Millisecond)
	popB := command(4, &done, "BRPOP", "q", "0")
	send(b, popB)
	h.until(h.w.k.now + 2*time.Millisecond)
	if len(done) != 0 {
		t.Fatalf("blocked commands completed early: %d", len(done))
	}
	gone.Close()
	h.until(h.w.k.now + 2*time.Millisecond)
	done = done[:0]
	push := command(5, &done, "RPUSH", "q", "x", "y")
	send(pusher, push)
	h.until(h.w.k.now + 5*time.Millisecond)
	if popA.Err != nil || popA.Reply.String() != resp.ArrayOf(resp.BulkString("q"), resp.BulkString("x")).String() {
		t.Fatalf("first blocked client: %v %v", popA.Reply.String(), popA.Err)
	}
	if behindA.Err != nil || behindA.Reply.String() != resp.SimpleString("PONG").String() {
		t.Fatalf("the request behind the blocked one: %v %v", behindA.Reply.String(), behindA.Err)
	}
	if popB.Err != nil || popB.Reply.String() != resp.ArrayOf(resp.BulkString("q"), resp.BulkString("y")).String() {
		t.Fatalf("second blocked client: %v %v", popB.Reply.String(), popB.Err)
	}
	if push.Reply.Int != 2 {
		t.Fatalf("RPUSH reply %v", push.Reply.String())
	}
	applied := map[uint64]int{}
	for _, ap := range h.w.res.Applies {
		applied[ap.CmdID]++
	}
	if applied[1] != 1 || applied[4] != 1 || applied[3] != 0 {
		t.Fatalf("apply log %v: the served pops once each, the closed one never", applied)
	}
	// A timeout answers null.
	done = done[:0]
	timed := command(6, &done, "BLPOP", "q", "0.05")
	send(b, timed)
	h.until(h.w.k.now + 40*time.Millisecond)
	if len(done) != 0 {
		t.Fatal("the timeout fired early")
	}
	h.until(h.w.k.now + 20*time.Millisecond)
	if len(done) != 1 || timed.Reply.Kind != resp.KindNull {
		t.Fatalf("timeout reply %v", timed.Reply.String())
	}
}

// TestNodeTransactions: MULTI queues, EXEC runs in order; a watched key written by another
// connection makes EXEC answer null and apply nothing; a queue error makes EXEC abort.
func TestNodeTransactions(t *testing.T) {
	h := newHarness(t, "client: {protocol: resp2, disable_library_info: true}\n")
	h.open(context.Background(), 1, 0)
	h.open(context.Background(), 2, 0)
	h.until(5 * time.Millisecond)
	c, other := h.ready(0), h.ready(1)
	next := uint64(0)
	do := func(conn engine.Conn, args ...string) resp.Value {
		t.Helper()
		next++
		var done []*engine.Command
		cmd := command(next, &done, args...)
		send(conn, cmd)
		h.until(h.w.k.now + 5*time.Millisecond)
		if len(done) != 1 || cmd.Err != nil {
			t.Fatalf("%v: %v", args, cmd.Err)
		}
		return cmd.Reply.Clone()
	}
	queued := resp.SimpleString("QUEUED").String()
	if v := do(c, "MULTI"); v.String() != "+OK" && v.Kind != resp.KindSimpleString {
		t.Fatalf("MULTI %v", v)
	}
	if v := do(c, "SET", "k", "1"); v.String() != queued {
		t.Fatalf("SET in MULTI: %v", v.String())
	}
	if v := do(c, "INCR", "k"); v.String() != queued {
		t.Fatalf("INCR in MULTI: %v", v.String())
	}
	if v := do(c, "EXEC"); v.Kind != resp.KindArray || v.Len() != 2 || v.Elem(1).Int != 2 {
		t.Fatalf("EXEC: %v", v.String())
	}
	// Conflict.
	do(c, "WATCH", "k")
	do(c, "MULTI")
	do(c, "SET", "k", "mine")
	do(other, "SET", "k", "theirs")
	if v := do(c, "EXEC"); v.Kind != resp.KindNull {
		t.Fatalf("EXEC after a watched write: %v", v.String())
	}
	if v := do(c, "GET", "k"); v.String() != resp.BulkString("theirs").String() {
		t.Fatalf("the aborted transaction was applied: %v", v.String())
	}
	// Unchanged watch commits; UNWATCH forgets; DISCARD drops.
	do(c, "WATCH", "k")
	do(c, "MULTI")
	do(c, "SET", "k", "mine")
	if v := do(c, "EXEC"); v.Kind != resp.KindArray {
		t.Fatalf("EXEC without conflict: %v", v.String())
	}
	do(c, "MULTI")
	do(c, "SET", "k", "dropped")
	do(c, "DISCARD")
	if v := do(c, "GET", "k"); v.String() != resp.BulkString("mine").String() {
		t.Fatalf("DISCARD applied: %v", v.String())
	}
	// Queue errors abort the whole transaction.
	do(c, "MULTI")
	do(c, "SET", "k", "no")
	if v := do(c, "GET"); !v.IsError() {
		t.Fatalf("arity error while queuing: %v", v.String())
	}
	if v := do(c, "EXEC"); !v.HasErrorCode("EXECABORT") {
		t.Fatalf("EXEC after a queue error: %v", v.String())
	}
	if v := do(c, "GET", "k"); v.String() != resp.BulkString("mine").String() {
		t.Fatalf("an aborted transaction was applied: %v", v.String())
	}
	if v := do(c, "EXEC"); !v.IsError() {
		t.Fatalf("EXEC without MULTI: %v", v.String())
	}
	// A blocking pop inside a transaction does not block.
	do(c, "MULTI")
	do(c, "BLPOP", "empty", "0")
	if v := do(c, "EXEC"); v.Kind != resp.KindArray || v.Len() != 1 || v.Elem(0).Kind != resp.KindNull {
		t.Fatalf("BLPOP inside EXEC: %v", v.String())
	}
}
