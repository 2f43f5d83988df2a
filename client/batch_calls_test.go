package client

import (
	"context"
	"errors"
	"strconv"
	"testing"

	"github.com/respire-go/respire/engine"
	"github.com/respire-go/respire/netio/resp"
)

// completeAll plays a connection that answers every command of cmds with reply, in order.
func completeAll(cmds []*engine.Command, reply resp.Value) {
	for _, cmd := range cmds {
		cmd.Enqueued()
		cmd.Writing()
		cmd.Written()
		cmd.Reply = reply
		cmd.Complete(nil)
	}
}

// TestBatchFramesAreViews: the calls of a run send their entries' bytes in the batch's buffer
// (no copy), and every entry gets its own reply, run after run of a reused batch.
func TestBatchFramesAreViews(t *testing.T) {
	c := &Client{}
	var b Batch
	for run := range 3 {
		f1, f2 := b.Get("a"), b.Get("b")
		cls, cmds, g := b.start(c, modePipeline)
		for i, cl := range cls {
			if !cl.borrowed || string(cl.cmd.Frame) != string(b.buf[b.ents[i].start:b.ents[i].end]) {
				t.Fatalf("run %d: call %d has frame %q (borrowed %v), want a view of the batch's buffer", run, i, cl.cmd.Frame, cl.borrowed)
			}
			if &cl.cmd.Frame[0] != &b.buf[b.ents[i].start] {
				t.Fatalf("run %d: call %d's frame is a copy", run, i)
			}
		}
		for i := range cmds {
			completeAll(cmds[i:i+1], resp.BulkString("v"+strconv.Itoa(i)))
		}
		<-g.done
		if err := b.settle(c, cls, true, nil, false, modePipeline, nil); err != nil {
			t.Fatal(err)
		}
		b.done()
		if v, _ := f1.Result(); v.Value != "v0" {
			t.Fatalf("run %d: first future %q", run, v.Value)
		}
		if v, _ := f2.Result(); v.Value != "v1" {
			t.Fatalf("run %d: second future %q", run, v.Value)
		}
	}
}

// TestBatchCallLeftToItsConnectionKeepsItsFrame: when a run stops waiting (its context ended)
// before a command was written, the command is left to its connection, which may still write
// it from the batch's buffer. The batch must then neither reuse that call nor write over that
// buffer: the next run's commands are queued elsewhere, and the left command's frame still
// reads as it was queued when its connection finally writes it. Its late completion recycles
// it into the client's pool without the borrowed frame. Reusing the buffer (or the call) after
// a run that left a call fails this test.
func TestBatchCallLeftToItsConnectionKeepsItsFrame(t *testing.T) {
	c := &Client{}
	var b Batch
	f1, f2 := b.Set("k1", "first"), b.Set("k2", "second")
	cls, cmds, _ := b.start(c, modePipeline)
	completeAll(cmds[:1], resp.SimpleString("OK"))
	cmds[1].Enqueued() // handed to the connection, not written yet
	left := cls[1]
	want := string(left.cmd.Frame)
	ctxErr := context.Canceled
	err := b.settle(c, cls, false, ctxErr, false, modePipeline, nil)
	var uo *UnknownOutcomeError
	if !errors.As(err, &uo) || uo.CommandName != "SET" {
		t.Fatalf("settle: %v, want the left command's *UnknownOutcomeError", err)
	}
	if f1.Err() != nil || !errors.As(f2.Err(), &uo) {
		t.Fatalf("futures: %v, %v; want nil and an unknown outcome", f1.Err(), f2.Err())
	}
	b.done()
	if blk, _ := c.callBlocks.Get().(*callBlock); blk != nil {
		if len(blk.cls) > 1 && blk.cls[1] == left {
			t.Fatal("the block kept the call left to its connection")
		}
		c.callBlocks.Put(blk)
	}
	// The next run queues over what the batch reuses.
	b.Set("k3", "overwrites-the-old-buffer")
	b.Set("k4", "overwrites-the-old-buffer-too")
	cls2, _, _ := b.start(c, modePipeline)
	for _, cl := range cls2 {
		if cl == left {
			t.Fatal("the next run took the call left to its connection")
		}
	}
	if got := string(left.cmd.Frame); got != want {
		t.Fatalf("the left command's frame changed to %q, want %q", got, want)
	}
	// The connection writes it at last and its reply comes: the late completion recycles it.
	left.cmd.Writing()
	left.cmd.Written()
	left.cmd.Reply = resp.SimpleString("OK")
	left.cmd.Complete(nil)
	if left.borrowed || left.cmd.Frame != nil {
		t.Fatalf("the recycled call kept the borrowed frame %q", left.cmd.Frame)
	}
	b.release(c, cls2, nil)
	b.done()
}

// TestBatchCallBlocksAreBounded: a run larger than maxBlockCalls gives the calls beyond the
// bound back to the client's pool of single calls, without their borrowed frames, and its
// block keeps maxBlockCalls calls; a batch run on another client takes that client's calls.
func TestBatchCallBlocksAreBounded(t *testing.T) {
	c := &Client{}
	var b Batch
	for range maxBlockCalls + 10 {
		b.Set("k", "v")
	}
	cls, cmds, g := b.start(c, modePipeline)
	blk := b.blk
	extra := cls[maxBlockCalls]
	completeAll(cmds, resp.SimpleString("OK"))
	<-g.done
	if err := b.settle(c, cls, true, nil, false, modePipeline, nil); err != nil {
		t.Fatal(err)
	}
	b.done()
	if len(blk.cls) != maxBlockCalls || b.blk != nil {
		t.Fatalf("the block keeps %d calls, want %d (and the batch none: %v)", len(blk.cls), maxBlockCalls, b.blk)
	}
	if extra.borrowed || extra.cmd.Frame != nil {
		t.Fatal("a call given back to the pool kept its borrowed frame")
	}
	other := &Client{}
	b.Set("k", "v")
	cls, _, _ = b.start(other, modePipeline)
	if cls[0].client != other {
		t.Fatal("a run on another client took a call of the first one")
	}
	b.release(other, cls, nil)
	b.done()
}

// TestBatchAtomicCallsUseSharedFrames: MULTI and EXEC go out with the shared constant frames,
// and a call that carried one returns to the pool without it (appending to it would write over
// every later transaction's MULTI).
func TestBatchAtomicCallsUseSharedFrames(t *testing.T) {
	c := &Client{}
	var b Batch
	b.Set("k", "v")
	cls, _, _ := b.start(c, modeAtomic)
	if string(cls[0].cmd.Frame) != "*1\r\n$5\r\nMULTI\r\n" || string(cls[2].cmd.Frame) != "*1\r\n$4\r\nEXEC\r\n" {
		t.Fatalf("frames %q, %q", cls[0].cmd.Frame, cls[2].cmd.Frame)
	}
	multi := cls[0]
	b.release(c, cls, []bool{true, false, false}) // MULTI left to its connection
	b.done()
	c.putCall(multi) // its late completion
	if multi.borrowed || multi.cmd.Frame != nil {
		t.Fatal("MULTI's call kept the shared frame in the pool")
	}
	if string(multiFrame) != "*1\r\n$5\r\nMULTI\r\n" {
		t.Fatalf("the shared MULTI frame is %q", multiFrame)
	}
}
