package netio_test

import (
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/respire-go/respire/netio"
	"github.com/respire-go/respire/netio/redistest"
)

// BenchmarkLivenessBounds measures pipelined GETs on one connection to a real redis-server with
// the liveness bounds off and on (idle read 30 s, write stall inherited): the price of re-arming
// the read deadline before each read of the socket and the write deadline before each write.
func BenchmarkLivenessBounds(b *testing.B) {
	srv := redistest.Start(b, redistest.Config{})
	value := string(make([]byte, 16))
	procs := runtime.GOMAXPROCS(0)
	for _, bounds := range []struct {
		name string
		idle time.Duration
	}{{"off", 0}, {"on", 30 * time.Second}} {
		tr := netio.NewTransport(netio.TransportConfig{IdleReadTimeout: bounds.idle, WriteStallTimeout: bounds.idle})
		conn, _ := mustConnect(b, tr, tcp(b, srv.Addr()))
		for _, callers := range []int{1, 64} {
			b.Run(bounds.name+"/callers="+strconv.Itoa(callers), func(b *testing.B) {
				var ids atomic.Int64
				b.ReportAllocs()
				b.SetParallelism(max(1, callers/procs))
				if callers == 1 {
					c := newBenchCaller(0, value)
					c.run(b, conn, "SET")
					b.ResetTimer()
					for i := 0; i < b.N; i++ {
						c.run(b, conn, "GET")
					}
					return
				}
				b.RunParallel(func(pb *testing.PB) {
					c := newBenchCaller(int(ids.Add(1)), value)
					c.run(b, conn, "SET")
					for pb.Next() {
						c.run(b, conn, "GET")
					}
				})
			})
		}
	}
}
