package client

import (
	"github.com/respire-go/respire/engine"
	"github.com/respire-go/respire/netio/resp"
)

// A batch's run takes its calls from the client as one block (callBlock), from a pool of its
// own, instead of one pooled call per command: one pool round trip per run. A block goes back
// to the pool when the run is settled, so a Batch keeps no call between runs, and a new Batch
// per request reuses the blocks of earlier ones. The calls' frames are views of the batch's
// buffer rather than copies. What a pooled block keeps is bounded: at most maxBlockCalls
// calls, each with at most maxBlockReply bytes of reply storage (and the pool is emptied by
// the garbage collector, as every sync.Pool).
const (
	// maxBlockCalls bounds the calls a block keeps; the calls of a larger run beyond it go
	// back to the client's pool of single calls.
	maxBlockCalls = 512
	// maxBlockReply bounds the reply storage a call of a block retains; a larger one is
	// dropped.
	maxBlockReply = 4 << 10
)

// callBlock is the calls of one batch run and their commands, in order.
type callBlock struct {
	cls  []*call
	cmds []*engine.Command
}

// The frames of the MULTI and EXEC that wrap an atomic batch, shared by every run: a call's
// frame is only read once it is sealed.
var (
	multiFrame = resp.AppendCommand(nil, "MULTI")
	execFrame  = resp.AppendCommand(nil, "EXEC")
)

// start readies the calls of a run (MULTI and EXEC around the commands for an atomic one) and
// makes them one group: each call's frame is its entry's bytes in the batch's buffer, its
// command is reset, and its completion counts the group down. It returns the calls and their
// commands, in order. Until release, the calls and the buffer belong to the run.
func (b *Batch) start(c *Client, mode batchMode) ([]*call, []*engine.Command, *callGroup) {
	n := len(b.ents)
	if mode != modePipeline {
		n += 2
	}
	if b.grp == nil {
		b.grp = &callGroup{done: make(chan struct{}, 1)}
	}
	g := b.grp
	g.left.Store(int32(n))
	blk, _ := c.callBlocks.Get().(*callBlock)
	if blk == nil {
		blk = &callBlock{}
	}
	b.blk = blk
	cls := blk.cls
	if cap(cls) < n {
		grown := make([]*call, n)
		copy(grown, cls)
		cls = grown
	}
	cls = cls[:n]
	cmds := blk.cmds[:0]
	if cap(cmds) < n {
		cmds = make([]*engine.Command, 0, n)
	}
	at := 0
	if mode != modePipeline {
		cl := takeCall(c, cls, 0, g)
		cl.cmd.Name, cl.cmd.Expect, cl.cmd.Frame = "MULTI", okShape, multiFrame[:len(multiFrame):len(multiFrame)]
		cmds = append(cmds, &cl.cmd)
		at = 1
	}
	for i := range b.ents {
		ent := &b.ents[i]
		cl := takeCall(c, cls, at+i, g)
		cl.cmd.Name = ent.name
		cl.cmd.Expect = ent.shape
		if mode != modePipeline {
			cl.cmd.Expect = queuedShape
		}
		cl.cmd.Frame = b.buf[ent.start:ent.end:ent.end]
		cmds = append(cmds, &cl.cmd)
	}
	if mode != modePipeline {
		cl := takeCall(c, cls, n-1, g)
		cl.cmd.Name, cl.cmd.Frame = "EXEC", execFrame[:len(execFrame):len(execFrame)]
		cl.cmd.Expect = engine.ShapeOf(resp.KindArray, resp.KindNull).Elems(len(b.ents))
		cmds = append(cmds, &cl.cmd)
	}
	blk.cls, blk.cmds = cls, cmds
	return cls, cmds, g
}

// takeCall returns the call at index i of the run, taking one from c's pool of single calls
// where the block has none, reset and in the group g.
func takeCall(c *Client, cls []*call, i int, g *callGroup) *call {
	cl := cls[i]
	if cl == nil {
		cl = c.getCall()
		cl.borrowed = true
		cls[i] = cl
	}
	if cl.grp != g {
		cl.grp = g
	}
	cl.cmd.Reset()
	return cl
}

// release ends a run's hold on its calls and gives their block back to c: it keeps them for
// the next run, except those left to their connection (left[i], when left is not nil), which
// recycles them when they complete, and those beyond maxBlockCalls, which go back to the
// client's pool of single calls. A call left to its connection may still be written from the
// batch's buffer: the batch then gives that buffer up (done) instead of reusing it.
func (b *Batch) release(c *Client, cls []*call, left []bool) {
	for i, cl := range cls {
		switch {
		case left != nil && left[i]:
			cls[i] = nil
			b.lent = true
		case i >= maxBlockCalls:
			c.putCall(cl)
			cls[i] = nil
		case cl.cmd.Reply.StorageSize() > maxBlockReply:
			cl.cmd.Reply.Reset(0)
		}
	}
	blk := b.blk
	b.blk = nil
	blk.cls = cls[:min(len(cls), maxBlockCalls)]
	clear(blk.cmds)
	blk.cmds = blk.cmds[:0]
	c.callBlocks.Put(blk)
}
