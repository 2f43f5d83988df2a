package engine

import (
	"context"
	"sync"
	"testing"

	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/netio/resp"
)

// instantConn completes every command at once with +OK, as a server with no latency would:
// what remains is the engine's own cost of routing a command on the hot path.
type instantConn struct{}

func (instantConn) Send(cmd *Command) {
	cmd.Writing()
	cmd.Written()
	cmd.Reply = resp.SimpleString("OK")
	cmd.Complete(nil)
}
func (instantConn) Drain() {}
func (instantConn) Close() {}

type instantTransport struct{}

func (instantTransport) Open(_ context.Context, req OpenRequest) {
	req.Sink.Ready(req.Conn, instantConn{})
}

// benchSubmit measures Submit of a SET on a healthy engine: parallel callers, allocations
// reported. With the Cluster configuration the command's slot is computed from its frame and
// the snapshot maps it to its node.
func benchSubmit(b *testing.B, cfg Config, seed func(e *Engine)) {
	e := New(cfg, Deps{Runtime: newManualRuntime(), Transport: instantTransport{}})
	seed(e)
	benchSubmitOn(b, e)
}

// benchSubmitOn measures Submit on e, whose connections are ready.
func benchSubmitOn(b *testing.B, e *Engine) {
	var frame []byte
	frame = resp.AppendArrayHeader(frame, 3)
	frame = resp.AppendBulkString(frame, "SET")
	frame = resp.AppendBulkString(frame, "bench:key:000042")
	frame = resp.AppendBulkString(frame, "0123456789abcdef0123456789abcdef")
	pool := sync.Pool{New: func() any {
		c := &Command{Name: "SET", Frame: frame}
		c.Done = func(*Command) {}
		return c
	}}
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			cmd := pool.Get().(*Command)
			cmd.Reset()
			e.Submit(cmd)
			pool.Put(cmd)
		}
	})
}

func BenchmarkSubmitStandalone(b *testing.B) {
	benchSubmit(b, Config{Slots: 1, Endpoint: Endpoint{Host: "127.0.0.1", Port: 6379}}, func(e *Engine) {
		done := make(chan struct{})
		e.Acquire(fsm.NeedAll, func(Grant) { close(done) })
		e.RunPending()
		<-done
	})
}
