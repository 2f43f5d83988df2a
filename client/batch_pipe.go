package client

import (
	"context"

	"github.com/cockroachdb/errors"

	"github.com/respire-go/respire/engine"
	"github.com/respire-go/respire/netio/resp"
)

// A Client's pipelined batch goes to its connection as one command (engine.Multi): its frame is
// the batch's buffer, the frames of every entry back to back, and its replies land in one slice,
// in order. The connection then handles one queue entry, one flight entry and one completion per
// batch instead of one per entry, and the caller reads the replies from one block of memory
// instead of from a command each. What a batch promises does not change: the replies that
// arrived before a failure are kept, each other entry reports its own outcome (unknown when the
// pipeline may have been written, definite when it cannot have been), nothing is resent.
//
// Where it is not used: transactions (MULTI ... EXEC as a group of commands), dedicated
// connections and Cluster clients (each entry goes by its own slot). A simulated client's
// pipeline carries one command id per entry (engine.Multi.IDs, simseam.go), by which the
// simulator attributes each command and its reply.

// pipe is a pooled pipeline command and what its run needs.
type pipe struct {
	cmd    engine.Command
	multi  engine.Multi
	shapes []engine.Shape
	// ids are the command ids of a simulated client's pipeline (simseam.go).
	ids    []uint64
	grp    *callGroup
	client *Client
	one    [1]*engine.Command
}

// Pooled pipelines keep reply slots for at most maxPipeSlots entries, each with at most
// maxBlockReply bytes of storage (as a batch's pooled calls do), and no arena block: the
// strings handed out keep the blocks they lie in, the pool none.
const maxPipeSlots = maxBlockCalls

// usePipe reports whether b's run in mode goes to the connection as one command.
func (c *Client) usePipe(mode batchMode) bool {
	return mode == modePipeline && !c.opts.UseCluster
}

// onDone runs when the connection completes the pipeline: it wakes the batch's caller, or
// recycles the pipeline if the caller left it to its connection.
func (p *pipe) onDone(*engine.Command) {
	if p.cmd.Answered() {
		p.grp.complete()
		return
	}
	p.client.putPipe(p)
}

// startPipe readies the pipeline command of b's run: its frame is b's buffer, one reply slot
// per entry, each entry's reply shape.
func (b *Batch) startPipe(c *Client) *pipe {
	if b.grp == nil {
		b.grp = &callGroup{done: make(chan struct{}, 1)}
	}
	b.grp.left.Store(1)
	p, _ := c.pipes.Get().(*pipe)
	if p == nil {
		p = &pipe{client: c}
		p.cmd.Done = p.onDone
		p.cmd.Name = "PIPELINE"
	}
	p.grp = b.grp
	p.multi.IDs = nil
	n := len(b.ents)
	p.multi.Reset(n)
	p.multi.Expect = nil
	p.shapes = p.shapes[:0]
	for i := range b.ents {
		if b.ents[i].shape != anyReply {
			if p.shapes == nil || cap(p.shapes) < n {
				p.shapes = make([]engine.Shape, 0, n)
			}
			for j := range b.ents {
				p.shapes = append(p.shapes, b.ents[j].shape)
			}
			p.multi.Expect = p.shapes
			break
		}
	}
	cmd := &p.cmd
	cmd.Reset()
	cmd.Multi = &p.multi
	cmd.Frame = b.buf[:len(b.buf):len(b.buf)]
	p.one[0] = cmd
	return p
}

// putPipe returns p to c's pool, with bounded storage.
func (c *Client) putPipe(p *pipe) {
	p.grp = nil
	p.cmd.Frame = nil
	if cap(p.multi.Replies) > maxPipeSlots {
		p.multi.Replies = nil
	}
	for i := range p.multi.Replies {
		if p.multi.Replies[i].StorageSize() > maxBlockReply {
			p.multi.Replies[i].Reset(0)
		}
	}
	if cap(p.shapes) > maxPipeSlots {
		p.shapes = nil
	}
	p.multi.Expect = nil
	p.multi.Arena.Drop()
	c.pipes.Put(p)
}

// runPipe runs b, checked and prepared, as one pipeline command: runBatchIn for modePipeline.
func (c *Client) runPipe(ctx context.Context, b *Batch) error {
	p := b.startPipe(c)
	cmds := p.one[:]
	var done, timedOut bool
	var ctxErr error
	if c.sim != nil {
		done, ctxErr, timedOut = c.awaitPipeSim(ctx, p, len(b.ents)) // simseam.go
	} else {
		budget := c.submitReadOwn(ctx, cmds)
		select {
		case <-p.grp.done:
			done = true
		default:
			done, ctxErr, timedOut = awaitGroup(ctx, p.grp, budget, relaxOf{lead: cmds[0]})
		}
	}
	if !done && c.eng.Withdraw(cmds[0]) {
		// Still waiting for a connection: nothing was sent.
		err := ctxErr
		if timedOut {
			err = c.timeoutErr(b.ents[0].name, StageWaitingForCapacity)
		}
		b.grp.left.Store(0)
		c.putPipe(p)
		b.failAll(err)
		return err
	}
	return b.settlePipe(c, p, done, ctxErr, timedOut)
}

// settlePipe turns the pipeline's replies into the entries' outcomes and returns the first
// error in queue order. When the wait was interrupted (done false: by ctxErr, or by the budget
// when timedOut), the entries whose replies arrived are settled first, then the pipeline is left
// to its connection, unless its completion won the race: then the rest is settled from it.
func (b *Batch) settlePipe(c *Client, p *pipe, done bool, ctxErr error, timedOut bool) error {
	cmd := &p.cmd
	n := len(b.ents)
	texts := b.pack()
	var first error
	from := 0
	if !done {
		// The replies that arrived are final and settled first; then the caller leaves, unless
		// the completion came first (engine.Command.LeaveMulti).
		var stage Stage
		left := cmd.LeaveMulti(func(arrived int) {
			first = b.settleReplies(c, p.multi.Replies, 0, arrived, texts)
			from = arrived
			stage = stageOf(cmd.Stage())
		})
		if left {
			// Left to the connection, which recycles the pipeline; it may still write its
			// frame from the batch's buffer.
			b.grp.left.Store(0)
			b.lent = true
			for i := from; i < n; i++ {
				ent := &b.ents[i]
				var err error
				if timedOut {
					err = c.timeoutErr(ent.name, stage)
				} else {
					err = &UnknownOutcomeError{CommandName: ent.name, Endpoint: c.ep, Stage: stage, Err: ctxErr}
				}
				ent.out.fail(err)
				if first == nil {
					first = err
				}
			}
			return first
		}
		<-b.grp.done // the completion won: it is delivered
	}
	got := n
	if cmd.Err != nil {
		got = p.multi.Stored()
	}
	// The pipeline completed: its arena is the caller's, and the strings of its replies are
	// handed out as views of it (resp.Arena), never written again: Reset drops its blocks.
	texts.arena = &p.multi.Arena
	err := b.settleReplies(c, p.multi.Replies, from, got, texts)
	texts.arena = nil
	if first == nil {
		first = err
	}
	if got < n {
		fail := c.commandFailure(cmd)
		for i := max(from, got); i < n; i++ {
			ent := &b.ents[i]
			err := withCommandName(fail, ent.name)
			ent.out.fail(err)
			if first == nil {
				first = err
			}
		}
	}
	c.putPipe(p)
	return first
}

// settleReplies settles entries [from, to) from their replies and returns the first error.
func (b *Batch) settleReplies(c *Client, replies []resp.Value, from, to int, texts *textPack) error {
	var first error
	sentinel := c.opts.SentinelPrimaryName != ""
	for i := from; i < to; i++ {
		ent := &b.ents[i]
		v := &replies[i]
		if sentinel {
			c.noteReadOnly(v)
		}
		if ent.keys != replyNoKeys {
			v = b.reply(i, v)
		}
		if err := ent.out.settle(v, ent.name, c.ep, texts, ent.dec); first == nil {
			first = err
		}
	}
	return first
}

// withCommandName returns err as the outcome of the command name: an unknown outcome or a
// timeout is reported under that command's name; other errors as they are.
func withCommandName(err error, name string) error {
	var uo *UnknownOutcomeError
	var te *TimeoutError
	switch {
	case errors.As(err, &uo):
		own := *uo
		own.CommandName = name
		return &own
	case errors.As(err, &te):
		own := *te
		own.CommandName = name
		return &own
	}
	return err
}
