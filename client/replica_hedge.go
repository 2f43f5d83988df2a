package client

import (
	"context"
	"strconv"
	"time"

	"github.com/respire-go/respire/engine"
	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/internal/command"
)

// HedgedReadOptions configures hedged reads (Options.HedgedReads). Experimental: outside the
// compatibility promise.
//
// A hedge-eligible read (a buffered, idempotent, deterministic read-only command: GET, MGET,
// collection, geo and stream range reads; never a write, a script, a random read, a cursor, a
// blocking read, a batch or a transaction) that has no answer Delay after it was sent is sent
// to a second server too, if the budget allows. The first success completes the read; when
// both fail, the original attempt's failure is returned. The losing attempt is not cancelled:
// it keeps its connection's response slot until it ends. Primary reads are never hedged;
// Replica reads hedge only to replicas. A hedge to a replica can return stale data even when
// the original read went to the primary. Hedging copies the command and allocates.
type HedgedReadOptions struct {
	// Delay is how long a read waits for its answer before a hedge is sent (0: 10ms; else
	// 1ms to 1min). Choose it from the latencies you observe.
	Delay time.Duration
	// MaximumExtraLoadPercent caps hedges: each eligible read earns this percent of a hedge,
	// and at most one hedge is stored (0: 5; else 1 to 100). At 5, twenty eligible reads fund
	// one hedge. It bounds hedge starts, not bytes or server time.
	MaximumExtraLoadPercent int
}

// Defaults of HedgedReadOptions.
const (
	DefaultHedgeDelay                   = 10 * time.Millisecond
	DefaultHedgeMaximumExtraLoadPercent = 5
)

// validate checks the hedging options.
func (h *HedgedReadOptions) validate(replicas bool) error {
	switch {
	case h == nil:
		return nil
	case !replicas:
		return configErr("HedgedReads", "needs replicas: ReplicaEndpoints or SentinelPrimaryName")
	case h.Delay != 0 && (h.Delay < fsm.HedgeDelayMin || h.Delay > fsm.HedgeDelayMax):
		return configErr("HedgedReads.Delay", "must be 0 (the default, 10ms) or in [1ms, 1m]")
	case h.MaximumExtraLoadPercent < 0 || h.MaximumExtraLoadPercent > 100:
		return configErr("HedgedReads.MaximumExtraLoadPercent", "must be 0 (the default, 5) or in [1, 100]")
	}
	return nil
}

// routerHedging sets the hedging fields of a router configuration from h.
func routerHedging(cfg *fsm.RouterConfig, h *HedgedReadOptions) {
	if h == nil {
		return
	}
	cfg.HedgeDelay, cfg.HedgeLoadPercent = h.Delay, h.MaximumExtraLoadPercent
	if cfg.HedgeDelay == 0 {
		cfg.HedgeDelay = DefaultHedgeDelay
	}
	if cfg.HedgeLoadPercent == 0 {
		cfg.HedgeLoadPercent = DefaultHedgeMaximumExtraLoadPercent
	}
}

// hedgeable reports whether a read-only command may be hedged: not a script, not a random
// read, never blocking.
func hedgeable(info *command.Info) bool {
	if info == nil || info.Blocking() != command.BlockingNever {
		return false
	}
	switch info.Name() {
	case "EVAL_RO", "EVALSHA_RO", "FCALL_RO", "RANDOMKEY", "SRANDMEMBER", "HRANDFIELD", "ZRANDMEMBER", "SORT_RO":
		return false
	}
	return true
}

// HedgeStats are a client's hedged-read figures.
type HedgeStats struct {
	// Watched counts the reads watched for a hedge; Sent the hedges sent; Won the hedges whose
	// answer completed the read.
	Watched, Sent, Won uint64
}

// ExtraLoadPercent is the extra load hedging added: hedges sent per watched read, in percent.
func (s HedgeStats) ExtraLoadPercent() float64 {
	if s.Watched == 0 {
		return 0
	}
	return float64(s.Sent) * 100 / float64(s.Watched)
}

// String describes the figures.
func (s HedgeStats) String() string {
	return "watched=" + strconv.FormatUint(s.Watched, 10) + " sent=" + strconv.FormatUint(s.Sent, 10) +
		" won=" + strconv.FormatUint(s.Won, 10)
}

// HedgeStats returns the client's hedged-read figures (zero without Options.HedgedReads).
func (c *Client) HedgeStats() HedgeStats {
	rs := c.replicas
	if rs == nil {
		return HedgeStats{}
	}
	rs.mu.Lock()
	h := rs.past
	rs.mu.Unlock()
	if g := rs.cur.Load(); g != nil {
		now := g.router.Hedges()
		h.Eligible, h.Sent, h.Won = h.Eligible+now.Eligible, h.Sent+now.Sent, h.Won+now.Won
	}
	return HedgeStats{Watched: h.Eligible, Sent: h.Sent, Won: h.Won}
}

// readAttempt is one copy of a hedged read on its way to a server.
type readAttempt struct {
	cl     *call
	target int
	done   bool
}

// copyCall returns a pooled call carrying cl's command.
func (c *Client) copyCall(cl *call) *call {
	x := c.getCall()
	x.cmd.Frame = append(x.cmd.Frame[:0], cl.cmd.Frame...)
	x.cmd.Name, x.cmd.Expect = cl.cmd.Name, cl.cmd.Expect
	return x
}

func attemptOK(x *call) bool { return x.cmd.Err == nil && !x.cmd.Reply.IsError() }

// executeHedged runs a read the router watches: the original attempt goes to target, a hedge
// where the router says, and the router's settlement picks the attempt whose outcome
// completes cl. cl itself is never sent: it receives the winner's reply.
func (c *Client) executeHedged(ctx context.Context, cl *call, g *replicaGen, w *engine.ReadWatch, target int) error {
	var at [2]readAttempt
	at[0] = readAttempt{cl: c.copyCall(cl), target: target}
	n := 1
	send := func(a *readAttempt) {
		a.cl.cmd.Reset()
		g.router.Target(a.target).Submit(&a.cl.cmd)
	}
	send(&at[0])
	timeout := c.armTimeout(cl)
	stop := func() {
		if cl.timer != nil {
			cl.timer.Stop()
		}
	}
	ended := func(a *readAttempt) {
		a.done = true
		if a.cl.cmd.Err != nil {
			g.router.Failed(a.target)
		}
		g.router.Ended(w, a.target, attemptOK(a.cl))
	}
	for {
		var hedgeDone chan struct{}
		if n == 2 && !at[1].done {
			hedgeDone = at[1].cl.done
		}
		var origDone chan struct{}
		if !at[0].done {
			origDone = at[0].cl.done
		}
		select {
		case <-origDone:
			ended(&at[0])
		case <-hedgeDone:
			ended(&at[1])
		case s := <-w.Signals:
			if !s.Settle {
				at[1], n = readAttempt{cl: c.copyCall(cl), target: s.Target}, 2
				send(&at[1])
				continue
			}
			stop()
			return c.settleHedged(cl, g, at[:n], s)
		case <-ctx.Done():
			stop()
			g.router.Withdraw(w)
			return c.leaveHedged(cl, g, at[:n], ctx.Err())
		case <-timeout:
			g.router.Withdraw(w)
			return c.leaveHedged(cl, g, at[:n], nil)
		}
	}
}

// settleHedged completes cl with the settled attempt's outcome and lets the other go.
func (c *Client) settleHedged(cl *call, g *replicaGen, at []readAttempt, s engine.HedgeSignal) error {
	var win *readAttempt
	for i := range at {
		if at[i].target == s.Target && at[i].done {
			win = &at[i]
		}
	}
	for i := range at {
		if &at[i] != win {
			c.release(g, &at[i])
		}
	}
	if win == nil { // the router closed
		c.putCall(cl)
		return ErrClosed
	}
	x := win.cl
	ep := c.readEndpoint(g, win.target)
	if err := x.cmd.Err; err != nil {
		var out error
		if x.cmd.MaybeSent() {
			out = &UnknownOutcomeError{CommandName: x.cmd.Name, Endpoint: ep, Stage: stageOf(x.cmd.FinalStage()), Err: err}
		} else {
			out = &ConnectionError{Endpoint: ep, Err: err}
		}
		c.putCall(x)
		c.putCall(cl)
		return out
	}
	cl.cmd.Reply, x.cmd.Reply = x.cmd.Reply, cl.cmd.Reply
	c.putCall(x)
	return nil
}

// leaveHedged ends a hedged read whose caller stopped waiting: every attempt still in flight
// is abandoned, and the error is the original attempt's, as Client.abandon reports it.
func (c *Client) leaveHedged(cl *call, g *replicaGen, at []readAttempt, ctxErr error) error {
	name := cl.cmd.Name
	orig := at[0]
	stage := Stage(StageWaitingForCapacity)
	sent := false
	if !orig.done {
		st := orig.cl.cmd.Stage()
		sent = st >= engine.StageBuffered && st < engine.StageDone
		stage = stageOf(st)
	}
	for i := range at {
		c.release(g, &at[i])
	}
	c.putCall(cl)
	if !sent {
		if ctxErr != nil {
			return ctxErr
		}
		return c.timeoutErr(name, StageWaitingForCapacity)
	}
	if ctxErr != nil {
		return &UnknownOutcomeError{CommandName: name, Endpoint: c.readEndpoint(g, orig.target), Stage: stage, Err: ctxErr}
	}
	return c.timeoutErr(name, stage)
}

// release gives an attempt back: recycled now if it ended or was withdrawn, or left to its
// connection, whose late completion recycles it.
func (c *Client) release(g *replicaGen, a *readAttempt) {
	if a.done {
		c.putCall(a.cl)
		return
	}
	ab := g.router.Target(a.target).Abandon(&a.cl.cmd)
	switch {
	case ab.Wait:
		<-a.cl.done
		c.putCall(a.cl)
	case ab.Owned:
		c.putCall(a.cl)
	}
}
