package wire

import (
	"errors"
	"io"
	"strconv"
	"testing"

	"pgregory.net/rapid"

	"github.com/respire-go/respire/engine"
	"github.com/respire-go/respire/netio/resp"
)

// multiCmd returns a pipeline of n commands (engine.Multi) at StageBuffered that records its
// completions in done.
func multiCmd(n int, done *[]*engine.Command) *engine.Command {
	cmd := &engine.Command{Name: "PIPELINE", Multi: &engine.Multi{}}
	for range n {
		cmd.Frame = resp.AppendCommand(cmd.Frame, "GET", "k")
	}
	cmd.Multi.Reset(n)
	cmd.Done = func(c *engine.Command) { *done = append(*done, c) }
	cmd.Enqueued()
	return cmd
}

// TestPipelineMultiPairsEachReplyInOrder: a pipeline between two single commands in one flight
// takes one reply per command, in order, with pushes in between pairing with nothing; it stays in
// flight until its last reply, publishes each reply but its last as it is stored (Deliver), completes once,
// and counts once for Answered and Drained.
func TestPipelineMultiPairsEachReplyInOrder(t *testing.T) {
	var p Pipeline
	var done []*engine.Command
	a, m, b := pipelineCmd("GET", &done), multiCmd(3, &done), pipelineCmd("GET", &done)
	for _, c := range []*engine.Command{a, m, b} {
		if err := p.Accept(c); err != nil {
			t.Fatal(err)
		}
	}
	if accepted, ok := p.Drain(); !ok || accepted != 3 {
		t.Fatalf("drain: accepted %d, ok %v; the pipeline counts as one command", accepted, ok)
	}
	send(&p)
	push := resp.PushOf(resp.BulkString("message"))
	steps := []struct {
		reply    resp.Value
		done     int
		arrived  int
		inFlight int
	}{
		{resp.BulkString("a"), 1, 0, 2},
		{push, 1, 0, 2},
		{resp.BulkString("m0"), 1, 1, 2},
		{push, 1, 1, 2},
		{resp.Int(1), 1, 2, 2},
		{push, 1, 2, 2},
		{resp.SimpleString("OK"), 2, 2, 1}, // the last reply completes it: Stored counts it, not Arrived
		{resp.BulkString("b"), 3, 2, 0},
	}
	for i, s := range steps {
		if err := reply(&p, s.reply); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if len(done) != s.done || m.Multi.Arrived() != s.arrived || p.InFlight() != s.inFlight {
			t.Fatalf("step %d: %d completions, %d arrived, %d in flight; want %d, %d, %d",
				i, len(done), m.Multi.Arrived(), p.InFlight(), s.done, s.arrived, s.inFlight)
		}
		if drained := p.Drained(p.Answered()); drained != (i == len(steps)-1) {
			t.Fatalf("step %d: drained %v", i, drained)
		}
	}
	if done[0] != a || done[1] != m || done[2] != b {
		t.Fatal("completions out of order")
	}
	if p.Answered() != 3 {
		t.Fatalf("answered %d, want 3: a pipeline is answered once", p.Answered())
	}
	want := []resp.Value{resp.BulkString("m0"), resp.Int(1), resp.SimpleString("OK")}
	for i, w := range want {
		if !resp.Equal(m.Multi.Replies[i], w) {
			t.Fatalf("reply %d = %v, want %v", i, m.Multi.Replies[i], w)
		}
	}
	if m.Err != nil || m.Multi.Stored() != 3 || m.FinalStage() != engine.StageAwaitingReply {
		t.Fatalf("pipeline: err %v, stored %d, final %v", m.Err, m.Multi.Stored(), m.FinalStage())
	}
	if string(a.Reply.Str) != "a" || string(b.Reply.Str) != "b" {
		t.Fatalf("single replies %q %q", a.Reply.Str, b.Reply.Str)
	}
}

// TestPipelineMultiPublishesOnlyWhenAsked: DeliverInRun stores without publishing; Published
// makes the stored replies visible to Arrived.
func TestPipelineMultiPublishesOnlyWhenAsked(t *testing.T) {
	var p Pipeline
	var done []*engine.Command
	m := multiCmd(4, &done)
	_ = p.Accept(m)
	send(&p)
	for i := range 2 {
		cmd, err := p.Next()
		if err != nil || cmd != m {
			t.Fatalf("next: %v", err)
		}
		v := resp.Int(int64(i))
		if last, err := DeliverInRun(cmd, &v); last || err != nil {
			t.Fatalf("reply %d: last %v err %v", i, last, err)
		}
	}
	if m.Multi.Arrived() != 0 {
		t.Fatalf("arrived %d before Published", m.Multi.Arrived())
	}
	Published(m)
	if m.Multi.Arrived() != 2 {
		t.Fatalf("arrived %d after Published, want 2", m.Multi.Arrived())
	}
}

// misfitDriver delivers reply to the flight's oldest command as a driver does, and on a misfit
// applies the driver's rule: stop with the connection's error (connLost, wrapping the misfit),
// complete the command (CompleteMisfit), abort the rest. It returns the misfit's error.
func misfitDriver(p *Pipeline, v resp.Value) error {
	cmd, err := p.Next()
	if err != nil {
		return err
	}
	if _, err := Deliver(cmd, &v); err != nil {
		lost := &connLost{err}
		p.Stop(lost, false)
		CompleteMisfit(cmd, err, lost)
		p.Aborted()
		return err
	}
	return nil
}

// connLost is a connection's failure after a misfit, as a driver reports it.
type connLost struct{ err error }

func (e *connLost) Error() string { return "connection lost: " + e.err.Error() }
func (e *connLost) Unwrap() error { return e.err }

// TestPipelineMultiMisfit: a reply that does not fit its command's shape in a pipeline is not
// stored; under the driver's rule the pipeline completes once with the connection's failure,
// which wraps the misfit, with the replies before it stored, whether the misfit was its last
// reply (it left the flight: CompleteMisfit completes it) or one before (it is still in flight:
// Aborted completes it). A single command after it fails once too. A single command's own
// misfit completes it with the bare misfit.
func TestPipelineMultiMisfit(t *testing.T) {
	const n = 4
	for bad := range n {
		t.Run("reply "+strconv.Itoa(bad), func(t *testing.T) {
			var p Pipeline
			var done []*engine.Command
			m, after := multiCmd(n, &done), pipelineCmd("GET", &done)
			m.Multi.Expect = make([]engine.Shape, n)
			for i := range m.Multi.Expect {
				m.Multi.Expect[i] = engine.ShapeOf(resp.KindInteger)
			}
			_ = p.Accept(m)
			_ = p.Accept(after)
			send(&p)
			for i := range bad {
				if err := misfitDriver(&p, resp.Int(int64(i))); err != nil {
					t.Fatalf("reply %d: %v", i, err)
				}
			}
			var pe *resp.ProtocolError
			if err := misfitDriver(&p, resp.SimpleString("OK")); !errors.As(err, &pe) {
				t.Fatalf("misfit: %v", err)
			}
			if len(done) != 2 || done[0] != m || done[1] != after {
				t.Fatalf("%d completions, want the pipeline then the command after it, once each", len(done))
			}
			var lost *connLost
			if !errors.As(m.Err, &lost) || !errors.As(m.Err, &pe) || !m.MaybeSent() || m.Multi.Stored() != bad {
				t.Fatalf("pipeline: err %v, maybe sent %v, stored %d; want the connection's error wrapping the misfit, unknown, %d stored", m.Err, m.MaybeSent(), m.Multi.Stored(), bad)
			}
			if after.Err == nil || !after.MaybeSent() {
				t.Fatalf("command after: err %v, maybe sent %v", after.Err, after.MaybeSent())
			}
			if m.Paired() != (bad == n-1) {
				t.Fatalf("paired %v after a misfit on reply %d of %d", m.Paired(), bad, n)
			}
		})
	}
}

// TestCompleteMisfitSingle: a single command whose reply misfits completes with the bare misfit,
// not the connection's error; a pipeline still in flight is left to the connection's failure.
func TestCompleteMisfitSingle(t *testing.T) {
	var p Pipeline
	var done []*engine.Command
	single := pipelineCmd("GET", &done)
	single.Expect = engine.ShapeOf(resp.KindInteger)
	m := multiCmd(2, &done)
	_ = p.Accept(single)
	_ = p.Accept(m)
	send(&p)
	misfit := misfitDriver(&p, resp.SimpleString("OK"))
	var pe *resp.ProtocolError
	var lost *connLost
	if !errors.As(single.Err, &pe) || errors.As(single.Err, &lost) || single.Err != misfit {
		t.Fatalf("single command: %v, want the bare misfit %v", single.Err, misfit)
	}
	if !errors.As(m.Err, &lost) || len(done) != 2 {
		t.Fatalf("pipeline behind it: %v, %d completions; want the connection's error, 2", m.Err, len(done))
	}
	if CompleteMisfit(m, misfit, &connLost{misfit}) {
		t.Fatal("CompleteMisfit completed a pipeline with no reply paired")
	}
}

// TestPipelineMultiAbortedMidway: a connection that fails after k of a pipeline's n replies
// completes it once with the failure at its written stage, the first k replies stored; a
// pipeline held or queued, never written, fails definitely.
func TestPipelineMultiAbortedMidway(t *testing.T) {
	var p Pipeline
	var done []*engine.Command
	m, held, queued := multiCmd(5, &done), multiCmd(2, &done), multiCmd(3, &done)
	_ = p.Accept(m)
	send(&p)
	_ = p.Accept(held)
	p.Hold(p.Take()) // taken by the writer, never handed off
	_ = p.Accept(queued)
	for i := range 2 {
		if err := reply(&p, resp.BulkString("v"+strconv.Itoa(i))); err != nil {
			t.Fatal(err)
		}
	}
	if len(done) != 0 || p.InFlight() != 1 {
		t.Fatalf("%d completions, %d in flight before the failure", len(done), p.InFlight())
	}
	p.Stop(io.EOF, false)
	p.Aborted()
	if len(done) != 3 || done[0] != m || done[1] != held || done[2] != queued {
		t.Fatalf("%d completions, want the three pipelines once each, in order", len(done))
	}
	if m.Err != io.EOF || m.Multi.Stored() != 2 || m.FinalStage() != engine.StageAwaitingReply || !m.MaybeSent() {
		t.Fatalf("written pipeline: err %v, stored %d, final %v", m.Err, m.Multi.Stored(), m.FinalStage())
	}
	if string(m.Multi.Replies[1].Str) != "v1" {
		t.Fatalf("reply 1 = %q", m.Multi.Replies[1].Str)
	}
	for _, c := range []*engine.Command{held, queued} {
		if c.Err != io.EOF || c.Multi.Stored() != 0 || c.FinalStage() != engine.StageBuffered || c.MaybeSent() {
			t.Fatalf("pipeline never written: err %v, stored %d, final %v; want a definite failure", c.Err, c.Multi.Stored(), c.FinalStage())
		}
	}
}

// flightItem is one command of the property's flight and what it observed.
type flightItem struct {
	cmd   *engine.Command
	n     int // replies it takes: 1 for a single command
	multi bool
	sent  bool
	got   int // replies delivered to it
	done  int // completions
}

// TestPipelineMultiProperty: over random sequences of single commands and pipelines, sent in
// random writes, with random pushes between replies and a failure at a random point, every
// command completes exactly once, in FIFO order; each reply lands in the command and slot it
// was written for (replies carry their global number), none lost or duplicated; a pipeline's
// Stored counts the replies that arrived for it; stages tell sent from never sent. The failure
// is the connection's end or a misfit (under the driver's rule, misfitDriver).
func TestPipelineMultiProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var p Pipeline
		count := rapid.IntRange(1, 12).Draw(t, "commands")
		items := make([]*flightItem, count)
		var order []*engine.Command
		byCmd := map[*engine.Command]*flightItem{}
		total := 0
		for i := range items {
			it := &flightItem{n: 1}
			if rapid.Bool().Draw(t, "multi") {
				it.multi, it.n = true, rapid.IntRange(1, 6).Draw(t, "size")
				it.cmd = &engine.Command{Name: "PIPELINE", Multi: &engine.Multi{}}
				it.cmd.Multi.Reset(it.n)
				it.cmd.Multi.Expect = make([]engine.Shape, it.n)
				for k := range it.cmd.Multi.Expect {
					it.cmd.Multi.Expect[k] = engine.ShapeOf(resp.KindInteger)
				}
			} else {
				it.cmd = &engine.Command{Name: "GET", Expect: engine.ShapeOf(resp.KindInteger)}
			}
			it.cmd.Done = func(c *engine.Command) {
				byCmd[c].done++
				order = append(order, c)
			}
			it.cmd.Enqueued()
			byCmd[it.cmd] = it
			items[i] = it
			total += it.n
		}
		// Accept them all; the writer sends a random prefix in random writes.
		for _, it := range items {
			if err := p.Accept(it.cmd); err != nil {
				t.Fatal(err)
			}
		}
		sentCount := rapid.IntRange(0, count).Draw(t, "sent")
		for s := 0; s < sentCount; {
			batch := p.Take()
			w := rapid.IntRange(1, sentCount-s).Draw(t, "write")
			p.Hold(batch[:w])
			// Requeue what this write does not carry, in order.
			rest := append([]*engine.Command(nil), batch[w:]...)
			for _, c := range rest {
				_ = p.Accept(c)
			}
			first, last, _ := p.Handoff()
			p.Wrote(first, last)
			for _, it := range items[s : s+w] {
				it.sent = true
			}
			s += w
		}
		sentReplies := 0
		for _, it := range items[:sentCount] {
			sentReplies += it.n
		}
		arrive := rapid.IntRange(0, sentReplies).Draw(t, "arrive")
		// Deliver the first arrive replies in order; reply j carries the number j.
		idx, slot := 0, 0
		for j := range arrive {
			if rapid.IntRange(0, 3).Draw(t, "push") == 0 {
				if err := reply(&p, resp.PushOf(resp.Int(-1))); err != nil {
					t.Fatalf("push: %v", err)
				}
			}
			if err := reply(&p, resp.Int(int64(j))); err != nil {
				t.Fatalf("reply %d: %v", j, err)
			}
			it := items[idx]
			it.got++
			if slot++; slot == it.n {
				idx, slot = idx+1, 0
			}
		}
		// The failure: the connection's end, or a reply that does not fit its command.
		misfit := -1
		if arrive < sentReplies && rapid.Bool().Draw(t, "misfit") {
			misfit = idx
			var pe *resp.ProtocolError
			if err := misfitDriver(&p, resp.SimpleString("OK")); !errors.As(err, &pe) {
				t.Fatalf("misfit: %v", err)
			}
		} else if arrive < total {
			p.Stop(io.EOF, false)
			p.Aborted()
		}
		if len(order) != count {
			t.Fatalf("%d completions for %d commands", len(order), count)
		}
		j := 0
		for i, it := range items {
			if order[i] != it.cmd || it.done != 1 {
				t.Fatalf("command %d: completed %d times, or out of order", i, it.done)
			}
			complete := it.got == it.n
			if complete != (it.cmd.Err == nil) {
				t.Fatalf("command %d: %d of %d replies, err %v", i, it.got, it.n, it.cmd.Err)
			}
			var pe *resp.ProtocolError
			if i == misfit && !errors.As(it.cmd.Err, &pe) {
				t.Fatalf("command %d, the misfit's: err %v", i, it.cmd.Err)
			}
			if it.cmd.Err != nil && it.cmd.MaybeSent() != it.sent {
				t.Fatalf("command %d: sent %v, final stage %v", i, it.sent, it.cmd.FinalStage())
			}
			if !it.sent && it.cmd.FinalStage() != engine.StageBuffered {
				t.Fatalf("command %d never sent ended at %v", i, it.cmd.FinalStage())
			}
			if it.multi {
				if it.cmd.Multi.Stored() != it.got {
					t.Fatalf("pipeline %d: stored %d, %d arrived", i, it.cmd.Multi.Stored(), it.got)
				}
				for k := range it.got {
					if r := it.cmd.Multi.Replies[k]; r.Kind != resp.KindInteger || r.Int != int64(j+k) {
						t.Fatalf("pipeline %d slot %d = %v, want reply %d", i, k, r, j+k)
					}
				}
			} else if it.got == 1 && it.cmd.Reply.Int != int64(j) {
				t.Fatalf("command %d got reply %d, want %d", i, it.cmd.Reply.Int, j)
			}
			j += it.n
		}
		// Next counts a command answered when its last reply pairs, a misfit included.
		answered := countComplete(items)
		if misfit >= 0 && items[misfit].got == items[misfit].n-1 {
			answered++
		}
		if p.Answered() != uint64(answered) {
			t.Fatalf("answered %d, want %d", p.Answered(), answered)
		}
	})
}

func countComplete(items []*flightItem) int {
	n := 0
	for _, it := range items {
		if it.got == it.n {
			n++
		}
	}
	return n
}

// TestPipelineMultiStageBeforeWrote: a pipeline's first replies, arriving while its frame is
// still being written, prove only their own commands written: it stays at StageWriting (a
// failure then is still an unknown outcome); its last reply proves the whole frame written.
func TestPipelineMultiStageBeforeWrote(t *testing.T) {
	var p Pipeline
	var done []*engine.Command
	m := multiCmd(3, &done)
	_ = p.Accept(m)
	p.Hold(p.Take())
	first, last, _ := p.Handoff()
	for i := range 2 {
		if err := reply(&p, resp.Int(int64(i))); err != nil {
			t.Fatal(err)
		}
		if m.Stage() != engine.StageWriting {
			t.Fatalf("after reply %d of 3: stage %v, want writing", i, m.Stage())
		}
	}
	if err := reply(&p, resp.Int(2)); err != nil || len(done) != 1 {
		t.Fatalf("last reply: err %v, %d completions", err, len(done))
	}
	if m.FinalStage() != engine.StageAwaitingReply || m.Err != nil {
		t.Fatalf("completed at %v, err %v", m.FinalStage(), m.Err)
	}
	p.Wrote(first, last) // the write returns after the completion: nothing left to mark
	if m.Stage() != engine.StageDone {
		t.Fatalf("Wrote touched a completed pipeline: stage %v", m.Stage())
	}
}
