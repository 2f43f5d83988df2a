package client

import (
	"github.com/respire-go/respire/engine"
	"github.com/respire-go/respire/netio/resp"
)

// A Batch owns the calls of its runs: it keeps them from one run to the next instead of taking
// each from the client's pool and putting it back, and their frames are views of the batch's
// buffer rather than copies. What a Batch keeps this way is bounded: the calls of at most
// maxOwnedCalls commands, each with at most maxOwnedReply bytes of reply storage.
const (
	// maxOwnedCalls bounds the calls a Batch keeps between runs; the calls of a larger run
	// beyond it go back to the client's pool.
	maxOwnedCalls = 512
	// maxOwnedReply bounds the reply storage a kept call retains; a larger one is dropped.
	maxOwnedReply = 4 << 10
)

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
	cls := b.cls
	if cap(cls) < n {
		grown := make([]*call, n)
		copy(grown, cls)
		cls = grown
	}
	cls = cls[:n]
	cmds := b.cmds[:0]
	if cap(cmds) < n {
		cmds = make([]*engine.Command, 0, n)
	}
	at := 0
	if mode != modePipeline {
		cl := b.own(c, cls, 0, g)
		cl.cmd.Name, cl.cmd.Expect, cl.cmd.Frame = "MULTI", okShape, multiFrame[:len(multiFrame):len(multiFrame)]
		cmds = append(cmds, &cl.cmd)
		at = 1
	}
	for i := range b.ents {
		ent := &b.ents[i]
		cl := b.own(c, cls, at+i, g)
		cl.cmd.Name = ent.name
		cl.cmd.Expect = ent.shape
		if mode != modePipeline {
			cl.cmd.Expect = queuedShape
		}
		cl.cmd.Frame = b.buf[ent.start:ent.end:ent.end]
		cmds = append(cmds, &cl.cmd)
	}
	if mode != modePipeline {
		cl := b.own(c, cls, n-1, g)
		cl.cmd.Name, cl.cmd.Frame = "EXEC", execFrame[:len(execFrame):len(execFrame)]
		cl.cmd.Expect = engine.ShapeOf(resp.KindArray, resp.KindNull).Elems(len(b.ents))
		cmds = append(cmds, &cl.cmd)
	}
	b.cls, b.cmds = cls, cmds
	return cls, cmds, g
}

// own returns the call at index i of the run, taking one from c's pool when the batch has
// none of c's there, reset and in the group g.
func (b *Batch) own(c *Client, cls []*call, i int, g *callGroup) *call {
	cl := cls[i]
	if cl == nil || cl.client != c {
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

// release ends a run's hold on its calls: the batch keeps them for its next run, except those
// left to their connection (left[i], when left is not nil), which recycles them when they
// complete, and those beyond maxOwnedCalls, which go back to the client's pool. A call left to
// its connection may still be written from the batch's buffer: the batch then gives that
// buffer up (done) instead of reusing it.
func (b *Batch) release(c *Client, cls []*call, left []bool) {
	for i, cl := range cls {
		switch {
		case left != nil && left[i]:
			cls[i] = nil
			b.lent = true
		case i >= maxOwnedCalls:
			c.putCall(cl)
			cls[i] = nil
		case cl.cmd.Reply.StorageSize() > maxOwnedReply:
			cl.cmd.Reply.Reset(0)
		}
	}
	b.cls = cls[:min(len(cls), maxOwnedCalls)]
	clear(b.cmds)
	b.cmds = b.cmds[:0]
}
