package engine

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/netio/resp"
)

// BenchmarkCommandCycle measures a command's own bookkeeping in a run of 100, as a batch's
// caller and a connection's reader share it: the caller resets each command and fills in what it
// sends (Reset, Name, Frame, Expect), the transport moves it through its stages and completes it
// with a reply swapped in (Enqueued, Writing, Written, Misfit, Complete, and Answered in Done), and the
// caller reads each outcome. "same" runs both sides on one goroutine; "reader" completes the
// commands on a second goroutine, as a connection's reader does, so that the command's memory
// travels between cores as it does in a real run.
func BenchmarkCommandCycle(b *testing.B) {
	const n = 100
	frame := resp.AppendCommand(nil, "GET", "key:42")
	expect := ShapeOf(resp.KindBulkString, resp.KindNull)
	setup := func() ([]*Command, *atomic.Int32, chan struct{}) {
		var left atomic.Int32
		done := make(chan struct{}, 1)
		cmds := make([]*Command, n)
		for i := range cmds {
			c := &Command{}
			c.Done = func(c *Command) {
				if c.Answered() && left.Add(-1) == 0 {
					done <- struct{}{}
				}
			}
			cmds[i] = c
		}
		return cmds, &left, done
	}
	fill := func(cmds []*Command, left *atomic.Int32) {
		left.Store(n)
		for _, c := range cmds {
			c.Reset()
			c.Name, c.Frame, c.Expect = "GET", frame, expect
		}
	}
	serve := func(cmds []*Command, scratch *resp.Value) {
		for _, c := range cmds {
			c.Enqueued()
			c.Writing()
			c.Written()
			scratch.Kind, scratch.Str = resp.KindBulkString, frame[:8]
			c.Reply, *scratch = *scratch, c.Reply
			if err := c.Misfit(); err != nil {
				panic(err)
			}
			c.Complete(nil)
		}
	}
	check := func(b *testing.B, cmds []*Command) {
		for _, c := range cmds {
			if c.Err != nil || c.Reply.Kind != resp.KindBulkString {
				b.Fatal(c.Err, c.Reply.Kind)
			}
		}
	}
	b.Run("same", func(b *testing.B) {
		cmds, left, done := setup()
		var scratch resp.Value
		b.ReportAllocs()
		for b.Loop() {
			fill(cmds, left)
			serve(cmds, &scratch)
			<-done
			check(b, cmds)
		}
	})
	b.Run("reader", func(b *testing.B) {
		cmds, left, done := setup()
		runs := make(chan []*Command)
		go func() {
			var scratch resp.Value
			for r := range runs {
				serve(r, &scratch)
			}
		}()
		defer close(runs)
		b.ReportAllocs()
		for b.Loop() {
			fill(cmds, left)
			runs <- cmds
			<-done
			check(b, cmds)
		}
	})
}

// instantGroupConn takes groups and completes their commands at once with +OK.
type instantGroupConn struct{ instantConn }

func (instantGroupConn) OfferGroup(cmds []*Command) bool {
	for _, c := range cmds {
		c.Writing()
		c.Written()
		c.Reply.Kind = resp.KindSimpleString
		c.Complete(nil)
	}
	return true
}

type instantGroupTransport struct{}

func (instantGroupTransport) Open(_ context.Context, req OpenRequest) {
	req.Sink.Ready(req.Conn, instantGroupConn{})
}

// BenchmarkSubmitGroup measures SubmitGroup of 100 commands on a ready connection that completes
// them at once: the engine's share of a batch's run, with the commands' own bookkeeping.
func BenchmarkSubmitGroup(b *testing.B) {
	e := New(Config{Slots: 1, Endpoint: Endpoint{Host: "127.0.0.1", Port: 6379}},
		Deps{Runtime: newManualRuntime(), Transport: instantGroupTransport{}})
	ready := make(chan struct{})
	e.Acquire(fsm.NeedAll, func(Grant) { close(ready) })
	e.RunPending()
	<-ready
	frame := resp.AppendCommand(nil, "SET", "key:42", "value")
	cmds := make([]*Command, 100)
	for i := range cmds {
		cmds[i] = &Command{Name: "SET", Frame: frame, Done: func(*Command) {}}
	}
	b.ReportAllocs()
	for b.Loop() {
		for _, c := range cmds {
			c.Reset()
		}
		e.SubmitGroup(cmds)
		for _, c := range cmds {
			if c.Stage() != StageDone || c.Err != nil {
				b.Fatal(c.Stage(), c.Err)
			}
		}
	}
}
