package netio_test

import (
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/respire-go/respire/engine"
	"github.com/respire-go/respire/netio"
	"github.com/respire-go/respire/netio/redistest"
	"github.com/respire-go/respire/netio/resp"
)

// benchCaller is one caller of the benchmarks: a pooled command reused for every operation and a
// channel its completion signals.
type benchCaller struct {
	cmd   engine.Command
	done  chan struct{}
	key   string
	value string
}

func newBenchCaller(id int, value string) *benchCaller {
	c := &benchCaller{done: make(chan struct{}, 1), key: "bench:" + strconv.Itoa(id), value: value}
	c.cmd.Done = func(*engine.Command) { c.done <- struct{}{} }
	return c
}

// run issues one command and waits for its reply.
func (c *benchCaller) run(b *testing.B, conn *netio.Conn, op string) {
	c.cmd.Reset()
	c.cmd.Enqueued()
	c.cmd.Name = op
	if op == "SET" {
		c.cmd.Frame = resp.AppendCommand(c.cmd.Frame[:0], "SET", c.key, c.value)
	} else {
		c.cmd.Frame = resp.AppendCommand(c.cmd.Frame[:0], "GET", c.key)
	}
	conn.Send(&c.cmd)
	<-c.done
	if c.cmd.Err != nil || c.cmd.Reply.IsError() {
		b.Errorf("%s: %v %v", op, c.cmd.Err, c.cmd.Reply)
	}
}

// BenchmarkPipeline measures pipelined SET and GET through Conn.Send on one connection to a real
// redis-server, with 1, 8, 64 and 256 concurrent callers, each waiting for its reply before its
// next command (the shape of an application's request handlers). Run with -benchmem: steady
// state allocates nothing per SET or GET beyond the caller's own arguments.
func BenchmarkPipeline(b *testing.B) {
	srv := redistest.Start(b, redistest.Config{})
	tr := netio.NewTransport(netio.TransportConfig{})
	conn, _ := mustConnect(b, tr, tcp(b, srv.Addr()))
	value := string(make([]byte, 16))
	procs := runtime.GOMAXPROCS(0)
	for _, op := range []string{"SET", "GET"} {
		for _, callers := range []int{1, 8, 64, 256} {
			b.Run(op+"/callers="+strconv.Itoa(callers), func(b *testing.B) {
				var ids atomic.Int64
				b.ReportAllocs()
				if callers == 1 {
					c := newBenchCaller(0, value)
					c.run(b, conn, "SET")
					b.ResetTimer()
					for i := 0; i < b.N; i++ {
						c.run(b, conn, op)
					}
					return
				}
				// RunParallel starts parallelism × GOMAXPROCS goroutines.
				b.SetParallelism(max(1, callers/procs))
				b.RunParallel(func(pb *testing.PB) {
					c := newBenchCaller(int(ids.Add(1)), value)
					c.run(b, conn, "SET")
					for pb.Next() {
						c.run(b, conn, op)
					}
				})
			})
		}
	}
}
