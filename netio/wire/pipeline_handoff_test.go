package wire

import (
	"testing"

	"github.com/respire-go/respire/engine"
	"github.com/respire-go/respire/netio/resp"
)

// TestPipelineDrainMovingTakesBackOnlyTheUnwritten: a writer blocked in a write (a command in
// flight at Writing, one written before it awaiting its reply, one taken by the writer and held
// for its next write) with commands queued behind it. DrainMoving hands back exactly the queued
// ones, in order, untouched at Buffered; everything that may have been written, or that the
// writer holds, stays and drains; the connection then closes once those are answered.
func TestPipelineDrainMovingTakesBackOnlyTheUnwritten(t *testing.T) {
	var p Pipeline
	p.Init(engine.Endpoint{Host: "r1", Port: 6379}, 3)
	var done []*engine.Command
	written := pipelineCmd("GET", &done)
	_ = p.Accept(written)
	send(&p)
	writing := pipelineCmd("SET", &done)
	_ = p.Accept(writing)
	p.Hold(p.Take())
	p.Handoff() // the write of SET blocks: Wrote never runs
	held := pipelineCmd("INCR", &done)
	_ = p.Accept(held)
	p.Hold(p.Take()) // the writer took INCR for its next write
	q1, q2 := pipelineCmd("GET", &done), pipelineCmd("DEL", &done)
	_ = p.Accept(q1)
	_ = p.AcceptGroup([]*engine.Command{q2})

	moved, owed, ok := p.DrainMoving(nil)
	if !ok || len(moved) != 2 || moved[0] != q1 || moved[1] != q2 {
		t.Fatalf("DrainMoving handed back %d commands (ok=%v), want the two queued ones in order", len(moved), ok)
	}
	for _, cmd := range moved {
		if cmd.Stage() != engine.StageBuffered {
			t.Fatalf("a moved command is at %v, want buffered (never written)", cmd.Stage())
		}
	}
	if owed != 3 || p.Queued() || !p.Draining() || p.Holding() != 1 || p.InFlight() != 2 {
		t.Fatalf("after the move: owes %d, queued %v, draining %v, holding %d, in flight %d; want 3, false, true, 1, 2",
			owed, p.Queued(), p.Draining(), p.Holding(), p.InFlight())
	}
	if err := p.Accept(pipelineCmd("GET", &done)); err == nil {
		t.Fatal("a draining connection accepted a command")
	}
	// The write returns, the writer writes INCR, and the three replies arrive: the connection
	// has drained, without waiting for the commands that moved away.
	p.Wrote(1, 2)
	send(&p)
	for _, v := range []resp.Value{resp.BulkString("0"), resp.SimpleString("OK"), resp.Int(1)} {
		if err := reply(&p, v); err != nil {
			t.Fatal(err)
		}
		if len(done) < 3 && p.Drained(p.Answered()) {
			t.Fatalf("drained after %d replies, with %d owed", len(done), owed)
		}
	}
	if len(done) != 3 || done[0] != written || done[1] != writing || done[2] != held || !p.Drained(p.Answered()) {
		t.Fatalf("%d completions, drained %v: want GET, SET, INCR answered and the drain complete", len(done), p.Drained(p.Answered()))
	}
	if q1.Stage() != engine.StageBuffered || q2.Stage() != engine.StageBuffered {
		t.Fatal("the old connection touched a command it handed back")
	}
	if again, _, ok := p.DrainMoving(nil); ok || len(again) != 0 {
		t.Fatal("a second drain moved or changed something")
	}
}

// TestPipelineDrainMovingKeepsConnectionBound: CLIENT ID and a credential-renewal AUTH never
// move, and since the queue does not record group boundaries, nothing queued with them moves
// either (a transaction is never split). The control: with neither queued, everything moves.
func TestPipelineDrainMovingKeepsConnectionBound(t *testing.T) {
	for _, name := range []string{"AUTH", "CLIENT ID"} {
		var p Pipeline
		var done []*engine.Command
		_ = p.Accept(pipelineCmd("GET", &done))
		_ = p.AcceptGroup([]*engine.Command{pipelineCmd("MULTI", &done), pipelineCmd(name, &done), pipelineCmd("EXEC", &done)})
		moved, owed, ok := p.DrainMoving(nil)
		if !ok || len(moved) != 0 || owed != 4 || !p.Queued() {
			t.Fatalf("%s queued: %d moved, owes %d, queued %v; want nothing moved", name, len(moved), owed, p.Queued())
		}
		if !Stays(&engine.Command{Name: name}) {
			t.Fatalf("%s may move", name)
		}
	}
	var p Pipeline
	var done []*engine.Command
	_ = p.AcceptGroup([]*engine.Command{pipelineCmd("MULTI", &done), pipelineCmd("CLIENT", &done), pipelineCmd("EXEC", &done)})
	if moved, owed, _ := p.DrainMoving(nil); len(moved) != 3 || owed != 0 || !p.Drained(0) {
		t.Fatalf("control: %d moved, owes %d; want all three moved and nothing owed", len(moved), owed)
	}
}

// TestPipelineDrainMovingAfterStop: a stopped connection moves nothing; its driver completes
// what is pending as after any failure.
func TestPipelineDrainMovingAfterStop(t *testing.T) {
	var p Pipeline
	var done []*engine.Command
	_ = p.Accept(pipelineCmd("GET", &done))
	p.Stop(errNoPending, false)
	if moved, _, ok := p.DrainMoving(nil); ok || len(moved) != 0 || !p.Queued() {
		t.Fatalf("after Stop: %d moved, ok %v", len(moved), ok)
	}
}
