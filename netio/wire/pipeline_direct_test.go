package wire

import (
	"errors"
	"io"
	"testing"

	"github.com/respire-go/respire/engine"
	"github.com/respire-go/respire/netio/resp"
)

// TestPipelineDirectWrite: commands a sender writes itself skip the queue but are counted as
// accepted (drain waits for them), take the flight in order behind what was written before, go
// through Writing and AwaitingReply, and pair FIFO with their replies.
func TestPipelineDirectWrite(t *testing.T) {
	var p Pipeline
	p.Init(engine.Endpoint{Host: "r1", Port: 6379}, 3)
	var done []*engine.Command
	before := pipelineCmd("GET", &done)
	_ = p.Accept(before)
	send(&p)
	a, b := pipelineCmd("SET", &done), pipelineCmd("GET", &done)
	direct, err := p.AcceptDirect([]*engine.Command{a, b})
	if err != nil || !direct || p.Queued() {
		t.Fatalf("AcceptDirect on an empty queue: direct=%v err=%v queued=%v", direct, err, p.Queued())
	}
	first, last, wasIdle := p.HandoffDirect([]*engine.Command{a, b})
	if wasIdle || last-first != 2 || a.Stage() != engine.StageWriting || p.InFlight() != 3 {
		t.Fatalf("handoff: [%d, %d) wasIdle=%v stage %v in flight %d", first, last, wasIdle, a.Stage(), p.InFlight())
	}
	p.Wrote(first, last)
	if b.Stage() != engine.StageAwaitingReply {
		t.Fatalf("after Wrote: stage %v", b.Stage())
	}
	for _, v := range []resp.Value{resp.BulkString("0"), resp.SimpleString("OK"), resp.BulkString("1")} {
		if err := reply(&p, v); err != nil {
			t.Fatal(err)
		}
	}
	if len(done) != 3 || done[0] != before || done[1] != a || done[2] != b {
		t.Fatalf("completion order wrong: %d completions", len(done))
	}
	if _, ok := p.Drain(); !ok || !p.Drained(p.Answered()) {
		t.Fatal("every accepted command was answered: the drain must be complete")
	}
}

// TestPipelineDirectRefusals: a direct write is refused, accepting nothing, while commands wait
// in the queue (it would pass them), and rejected with Accept's error once the connection stopped
// or drains.
func TestPipelineDirectRefusals(t *testing.T) {
	var p Pipeline
	p.Init(engine.Endpoint{Host: "r1", Port: 6379}, 3)
	var done []*engine.Command
	_ = p.Accept(pipelineCmd("GET", &done))
	c := pipelineCmd("GET", &done)
	if direct, err := p.AcceptDirect([]*engine.Command{c}); direct || err != nil {
		t.Fatalf("with a command queued: direct=%v err=%v", direct, err)
	}
	if accepted, _ := p.Drain(); accepted != 1 {
		t.Fatalf("a refused direct write was counted: %d accepted", accepted)
	}
	if _, err := p.AcceptDirect([]*engine.Command{c}); !errors.Is(err, ErrClosed) {
		t.Fatalf("while draining: %v", err)
	}
	var q Pipeline
	q.Stop(io.EOF, false)
	if _, err := q.AcceptDirect([]*engine.Command{c}); err != io.EOF {
		t.Fatalf("after a failure: %v", err)
	}
	if c.Stage() != engine.StageBuffered {
		t.Fatalf("a refused command was touched: stage %v", c.Stage())
	}
}

// TestPipelineAcceptLate: a command sent after a stop, before the driver took the queue, joins
// the pending commands and completes after them; before the stop, and once the queue was taken,
// it is refused.
func TestPipelineAcceptLate(t *testing.T) {
	var p Pipeline
	var done []*engine.Command
	pending, late := pipelineCmd("GET", &done), pipelineCmd("GET", &done)
	_ = p.Accept(pending)
	send(&p)
	if p.AcceptLate(late) {
		t.Fatal("an open pipeline took a late command")
	}
	p.Stop(io.EOF, false)
	if !p.AcceptLate(late) {
		t.Fatal("a stopped pipeline refused a late command before its queue was taken")
	}
	p.Aborted()
	if len(done) != 2 || done[0] != pending || done[1] != late || late.Err != io.EOF || late.MaybeSent() {
		t.Fatalf("completions: %d, late err %v, maybe sent %v", len(done), late.Err, late.MaybeSent())
	}
	if p.AcceptLate(pipelineCmd("GET", &done)) {
		t.Fatal("a late command was taken after the queue was")
	}
	var q Pipeline
	q.Stop(q.ClosedError(), true)
	if q.AcceptLate(pipelineCmd("GET", &done)) {
		t.Fatal("a closed pipeline took a late command: Send after Close answers at once")
	}
}
