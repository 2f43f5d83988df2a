package client

import (
	"context"
	"strconv"
	"time"

	"github.com/respire-go/respire/engine"
	"github.com/respire-go/respire/engine/config"
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
	DefaultHedgeDelay                   = config.DefaultHedgeDelay
	DefaultHedgeMaximumExtraLoadPercent = config.DefaultHedgeMaximumExtraLoadPercent
)

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
	if c.creads != nil {
		h := c.creads.Hedges() // every shard's router's
		return HedgeStats{Watched: h.Eligible, Sent: h.Sent, Won: h.Won}
	}
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

// executeHedged runs a read the router watches, through the engine's hedged read: the
// original attempt goes to target, a hedge where the router says, and the router's settlement
// picks the attempt whose outcome completes cl. cl itself is never sent: it receives the
// winner's reply. The client only waits (for the hedged read's wake, its context and its
// timeout) and maps the outcome to its errors.
func (c *Client) executeHedged(ctx context.Context, cl *call, g *replicaGen, rt *engine.ReadRoute, w *engine.ReadWatch, target int) error {
	h := engine.NewHedgedRead(rt, w, &cl.cmd)
	h.Start(target)
	if settled, ctxErr := c.awaitHedged(ctx, cl, h); !settled {
		return c.leaveHedged(cl, h, ctxErr, c.readEndpointsOf(g))
	}
	return c.settleHedged(cl, g, h)
}

// awaitHedged drives h until its router settles it (true), ctx ends (false and ctx's error) or
// its timeout passes (false, nil), and stops the call's timer. The timeout is awaitReply's rule
// applied to every attempt still in flight: when CommandTimeout fires, an attempt whose
// connection is in a maintenance window keeps the read alive until its relaxed deadline, counted
// from the read's start (relaxHedged). While it is kept alive, the read asks again when one of
// those windows shrinks (engine.Relax.Shrunk) or an attempt ends, and times out at once when no
// attempt in flight keeps it alive any more. Standalone, Sentinel and Cluster hedged reads wait
// here.
func (c *Client) awaitHedged(ctx context.Context, cl *call, h *engine.HedgedRead) (settled bool, ctxErr error) {
	timeout := c.armTimeout(cl)
	cl.relaxStart = time.Time{} // set when the own timeout fired: the read's start
	var shrunk [2]<-chan struct{}
	ask := false
wait:
	for {
		if settled = h.Step(); settled {
			break
		}
		if ask {
			ask = false
			if !c.relaxHedged(cl, h, &shrunk) {
				break
			}
		}
		select {
		case <-h.Wake():
			// An attempt may have ended: the one whose window kept the read alive, say.
			ask = !cl.relaxStart.IsZero()
		case <-ctx.Done():
			ctxErr = ctx.Err()
			break wait
		case fired := <-timeout:
			if cl.relaxStart.IsZero() { // the own timeout: later firings are relaxed wakes
				cl.relaxStart = fired.Add(-c.opts.CommandTimeout)
			}
			ask = true
		case <-shrunk[0]:
			ask = true
		case <-shrunk[1]:
			ask = true
		}
	}
	if cl.timer != nil {
		cl.timer.Stop()
	}
	return settled, ctxErr
}

// relaxHedged is relaxTimer's rule for a hedged read started at cl.relaxStart: each attempt of h
// still in flight asks its connection's relaxation (relaxAt), and the read lives while one of
// them keeps it alive, until the latest time one of them says to ask again. It re-arms the
// call's timer for then, stores in shrunk the channels closed when those windows shrink, and
// reports true; false when the read times out now.
func (c *Client) relaxHedged(cl *call, h *engine.HedgedRead, shrunk *[2]<-chan struct{}) bool {
	now := time.Now()
	var wake time.Time
	for i := range shrunk {
		at, ch, ok := relaxAt(h.Relax(i), now, cl.relaxStart, c.opts.CommandTimeout)
		shrunk[i] = ch
		if ok && at.After(wake) {
			wake = at
		}
	}
	if wake.IsZero() {
		return false
	}
	cl.timer.Reset(wake.Sub(now))
	return true
}

// settleHedged completes cl with the settled attempt's outcome and lets the other go.
func (c *Client) settleHedged(cl *call, g *replicaGen, h *engine.HedgedRead) error {
	h.Release()
	x, target := h.Result()
	if x == nil { // the router closed
		name := cl.cmd.Name
		c.putCall(cl)
		return closedHedged(name, h, c.readEndpointsOf(g))
	}
	ep := c.readEndpoint(g, target)
	if err := x.Err; err != nil {
		var out error
		if x.MaybeSent() {
			out = &UnknownOutcomeError{CommandName: x.Name, Endpoint: ep, Stage: stageOf(x.FinalStage()), Err: err}
		} else {
			out = &ConnectionError{Endpoint: ep, Err: err}
		}
		c.putCall(cl)
		return out
	}
	cl.cmd.Reply, x.Reply = x.Reply, cl.cmd.Reply
	return nil
}

// leaveHedged ends a hedged read (standalone, Sentinel or Cluster) whose caller stopped waiting
// (ctxErr set) or whose command timeout passed: every attempt still in flight is let go, and
// the error is the original attempt's, as Client.abandon reports it; endpoint names a
// candidate's endpoint.
func (c *Client) leaveHedged(cl *call, h *engine.HedgedRead, ctxErr error, endpoint func(target int) Endpoint) error {
	name := cl.cmd.Name
	target, sent, st := h.Leave()
	c.putCall(cl)
	if !sent {
		if ctxErr != nil {
			return ctxErr
		}
		return c.timeoutErr(name, StageWaitingForCapacity)
	}
	if ctxErr != nil {
		return &UnknownOutcomeError{CommandName: name, Endpoint: endpoint(target), Stage: stageOf(st), Err: ctxErr}
	}
	return c.timeoutErr(name, stageOf(st))
}

// readEndpointsOf returns the endpoint of each candidate of g, by index.
func (c *Client) readEndpointsOf(g *replicaGen) func(target int) Endpoint {
	return func(target int) Endpoint { return c.readEndpoint(g, target) }
}

// closedHedged is the error of a hedged read whose router closed before an attempt settled it:
// ErrClosed when no attempt's bytes can have left, otherwise an unknown outcome wrapping
// ErrClosed (the read may have run; the client never reports a command that may have been sent
// as a definite failure).
func closedHedged(name string, h *engine.HedgedRead, endpoint func(target int) Endpoint) error {
	target, sent, st := h.Orphaned()
	if !sent {
		return ErrClosed
	}
	return &UnknownOutcomeError{CommandName: name, Endpoint: endpoint(target), Stage: stageOf(st), Err: ErrClosed}
}
