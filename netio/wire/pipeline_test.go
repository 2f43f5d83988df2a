package wire

import (
	"errors"
	"io"
	"testing"
	"time"

	"github.com/respire-go/respire/engine"
	"github.com/respire-go/respire/netio/resp"
)

// pipelineCmd returns a command at StageBuffered that records its completions.
func pipelineCmd(name string, done *[]*engine.Command) *engine.Command {
	cmd := &engine.Command{Name: name, Frame: resp.AppendCommand(nil, name)}
	cmd.Done = func(c *engine.Command) { *done = append(*done, c) }
	cmd.Enqueued()
	return cmd
}

// send runs the writer's side for everything queued: take, hold, hand off, wrote.
func send(p *Pipeline) (wasIdle bool) {
	p.Hold(p.Take())
	first, last, wasIdle := p.Handoff()
	p.Wrote(first, last)
	return wasIdle
}

// reply delivers one reply through the reader's side and returns the error that fails the
// connection, if any.
func reply(p *Pipeline, v resp.Value) error {
	if p.Unsolicited(&v) {
		return nil
	}
	cmd, err := p.Next()
	if err != nil {
		return err
	}
	if _, err := Deliver(cmd, &v); err != nil {
		// A driver stops taking commands here, then completes the misfit command (unless it
		// is a pipeline still in flight, which completes with the flight).
		if cmd.Paired() {
			cmd.Complete(err)
		}
		return err
	}
	return nil
}

func TestPipelineStagesAndFIFOPairing(t *testing.T) {
	var p Pipeline
	p.Init(engine.Endpoint{Host: "r1", Port: 6379}, 3)
	var done []*engine.Command
	a, b := pipelineCmd("GET", &done), pipelineCmd("SET", &done)
	if p.Accept(a) != nil || p.Accept(b) != nil {
		t.Fatal("an open pipeline rejected a command")
	}
	batch := p.Take()
	if len(batch) != 2 || batch[0] != a || a.Stage() != engine.StageBuffered {
		t.Fatalf("take: %d commands, first stage %v", len(batch), a.Stage())
	}
	p.Hold(batch)
	first, last, wasIdle := p.Handoff()
	if !wasIdle || a.Stage() != engine.StageWriting || b.Stage() != engine.StageWriting || p.InFlight() != 2 {
		t.Fatalf("handoff: idle=%v stages %v %v in flight %d", wasIdle, a.Stage(), b.Stage(), p.InFlight())
	}
	// a's reply arrives before its write returned: the reply proves the write.
	if err := reply(&p, resp.BulkString("v")); err != nil || len(done) != 1 || done[0] != a || a.FinalStage() != engine.StageAwaitingReply {
		t.Fatalf("first reply: err=%v done=%d final=%v", err, len(done), a.FinalStage())
	}
	p.Wrote(first, last)
	if b.Stage() != engine.StageAwaitingReply {
		t.Fatalf("b after wrote: %v", b.Stage())
	}
	// A push completes nothing.
	if err := reply(&p, resp.Value{Kind: resp.KindPush}); err != nil || len(done) != 1 {
		t.Fatalf("push: err=%v completions=%d", err, len(done))
	}
	if err := reply(&p, resp.SimpleString("OK")); err != nil || len(done) != 2 || done[1] != b || string(b.Reply.Str) != "OK" {
		t.Fatalf("second reply: err=%v done=%d reply=%q", err, len(done), b.Reply.Str)
	}
	if string(a.Reply.Str) != "v" {
		t.Fatalf("a's reply = %q", a.Reply.Str)
	}
	// A reply with nothing in flight fails the connection.
	var pe *resp.ProtocolError
	if err := reply(&p, resp.SimpleString("OK")); !errors.As(err, &pe) {
		t.Fatalf("reply with nothing pending: %v", err)
	}
	if p.Answered() != 2 {
		t.Fatalf("answered %d", p.Answered())
	}
}

func TestPipelineShapeMismatchFailsBeforeTheNext(t *testing.T) {
	var p Pipeline
	var done []*engine.Command
	a, b := pipelineCmd("INCR", &done), pipelineCmd("GET", &done)
	a.Expect = engine.ShapeOf(resp.KindInteger)
	_ = p.Accept(a)
	_ = p.Accept(b)
	send(&p)
	var pe *resp.ProtocolError
	if err := reply(&p, resp.SimpleString("OK")); !errors.As(err, &pe) || !errors.As(a.Err, &pe) {
		t.Fatalf("mismatch: err=%v cmd err=%v", err, a.Err)
	}
	if !a.MaybeSent() || len(done) != 1 {
		t.Fatalf("the mismatched command must end unknown, alone: maybe=%v done=%d", a.MaybeSent(), len(done))
	}
}

func TestPipelineStopCompletesEverythingOnceWithItsStage(t *testing.T) {
	var p Pipeline
	p.Init(engine.Endpoint{Host: "r1", Port: 6379}, 3)
	var done []*engine.Command
	written, held, queued := pipelineCmd("GET", &done), pipelineCmd("GET", &done), pipelineCmd("GET", &done)
	_ = p.Accept(written)
	send(&p)
	_ = p.Accept(held)
	p.Hold(p.Take())
	_ = p.Accept(queued)
	if !p.Stop(io.EOF, false) || p.Stop(errors.New("second"), true) {
		t.Fatal("the first Stop must win, once")
	}
	if err, quiet := p.Err(); err != io.EOF || quiet {
		t.Fatalf("err=%v quiet=%v", err, quiet)
	}
	p.Aborted()
	if len(done) != 3 || done[0] != written || done[1] != held || done[2] != queued {
		t.Fatalf("completion order wrong: %d completions", len(done))
	}
	if !written.MaybeSent() || held.MaybeSent() || queued.MaybeSent() {
		t.Fatalf("stages: written %v held %v queued %v", written.FinalStage(), held.FinalStage(), queued.FinalStage())
	}
	// A stopped pipeline rejects with the failure; after a quiet stop, with ErrClosed.
	if err := p.Accept(pipelineCmd("GET", &done)); err != io.EOF {
		t.Fatalf("accept after failure: %v", err)
	}
	var q Pipeline
	q.Init(engine.Endpoint{Host: "r1", Port: 6379}, 4)
	q.Stop(q.ClosedError(), true)
	if err := q.Accept(pipelineCmd("GET", &done)); !errors.Is(err, ErrClosed) {
		t.Fatalf("accept after close: %v", err)
	}
}

func TestPipelineDrain(t *testing.T) {
	var p Pipeline
	var done []*engine.Command
	_ = p.Accept(pipelineCmd("GET", &done))
	send(&p)
	accepted, ok := p.Drain()
	if !ok || accepted != 1 || !p.Draining() || p.Drained(p.Answered()) {
		t.Fatalf("drain: accepted=%d ok=%v", accepted, ok)
	}
	if _, again := p.Drain(); again {
		t.Fatal("a second Drain must change nothing")
	}
	if err := p.Accept(pipelineCmd("GET", &done)); err == nil {
		t.Fatal("a draining pipeline accepted a command")
	}
	if err := reply(&p, resp.SimpleString("OK")); err != nil || !p.Drained(p.Answered()) {
		t.Fatalf("after the last reply: err=%v drained=%v", err, p.Drained(p.Answered()))
	}
	// Whatever stops a draining connection, it stops quietly.
	p.Stop(io.EOF, false)
	if _, quiet := p.Err(); !quiet {
		t.Fatal("a draining connection must stop quietly")
	}
}

func TestPipelineIdleBound(t *testing.T) {
	var p Pipeline
	var done []*engine.Command
	bound := time.Second
	if v := p.Idle(10*time.Second, bound); v.Pending || v.Expired {
		t.Fatalf("nothing pending: %+v", v)
	}
	_ = p.Accept(pipelineCmd("GET", &done))
	if !send(&p) {
		t.Fatal("the first handoff must report the replies became pending")
	}
	p.Progress(2 * time.Second)
	if v := p.Idle(2500*time.Millisecond, bound); !v.Pending || v.Expired || v.Due != 3*time.Second {
		t.Fatalf("within the bound: %+v", v)
	}
	p.Progress(2800 * time.Millisecond) // bytes arrived
	if v := p.Idle(3*time.Second, bound); v.Expired || v.Due != 3800*time.Millisecond {
		t.Fatalf("after progress: %+v", v)
	}
	if v := p.Idle(3800*time.Millisecond, bound); !v.Expired {
		t.Fatalf("at the bound: %+v", v)
	}
}

func TestRing(t *testing.T) {
	var r ring
	cmds := make([]engine.Command, 300)
	next := 0
	// Interleave pushes and pops so that the ring wraps and grows while not empty.
	for round := 0; round < 10; round++ {
		for i := 0; i < 25; i++ {
			r.push(&cmds[(round*25+i)%len(cmds)])
		}
		for i := 0; i < 20; i++ {
			if got := r.pop(); got != &cmds[next%len(cmds)] {
				t.Fatalf("pop %d returned the wrong command", next)
			}
			next++
		}
		for i := 0; i < r.n; i++ {
			if r.at(i) != &cmds[(next+i)%len(cmds)] {
				t.Fatalf("at(%d) wrong after round %d", i, round)
			}
		}
	}
	if r.n != 50 {
		t.Fatalf("n = %d", r.n)
	}
}
