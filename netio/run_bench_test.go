package netio_test

import (
	"context"
	"io"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/respire-go/respire/engine"
	"github.com/respire-go/respire/netio"
	"github.com/respire-go/respire/netio/resp"
)

// memServer is a net.Conn whose peer is an in-memory server answering every command written
// with one fixed reply: the read side of a Conn measured without a server and without system
// calls. Every command written must have a frame of frameLen bytes.
type memServer struct {
	mu       sync.Mutex
	cond     sync.Cond
	reply    []byte
	frameLen int
	partial  int // bytes of a frame written without its end yet
	owed     int // replies the server owes
	closed   bool
}

func newMemServer(frameLen int, reply []byte) *memServer {
	s := &memServer{reply: reply, frameLen: frameLen}
	s.cond.L = &s.mu
	return s
}

func (s *memServer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return 0, net.ErrClosed
	}
	s.partial += len(p)
	s.owed += s.partial / s.frameLen
	s.partial %= s.frameLen
	s.cond.Broadcast()
	return len(p), nil
}

func (s *memServer) Read(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for s.owed == 0 && !s.closed {
		s.cond.Wait()
	}
	if s.closed {
		return 0, io.EOF
	}
	k := min(s.owed, len(p)/len(s.reply))
	for i := range k {
		copy(p[i*len(s.reply):], s.reply)
	}
	s.owed -= k
	return k * len(s.reply), nil
}

func (s *memServer) Close() error {
	s.mu.Lock()
	s.closed = true
	s.cond.Broadcast()
	s.mu.Unlock()
	return nil
}

func (s *memServer) LocalAddr() net.Addr              { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1} }
func (s *memServer) RemoteAddr() net.Addr             { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 2} }
func (s *memServer) SetDeadline(time.Time) error      { return nil }
func (s *memServer) SetReadDeadline(time.Time) error  { return nil }
func (s *memServer) SetWriteDeadline(time.Time) error { return nil }

// BenchmarkReplyRuns measures batches of 100 GETs (64-byte values) on one connection whose
// server is in memory, so that the figure is the client's own work per batch: callers
// building nothing (their commands are prepared once), the writer, and the read side pairing
// and completing 100 replies. "one" pairs each reply under its own hold of the flight lock and
// reads 4 KiB at a time (netio.PairOneAtATime); "runs" is the default (conn_run.go).
// cpu-µs/op is the process's CPU time per batch, steadier than the wall time on a shared
// machine.
func BenchmarkReplyRuns(b *testing.B) {
	const batch = 100
	frame := resp.AppendCommand(nil, "GET", "bench:key:000000")
	value := make([]byte, 64)
	reply := resp.AppendValue(nil, resp.BulkString(string(value)), 2)
	for _, mode := range []string{"one", "runs"} {
		for _, callers := range []int{1, 64} {
			b.Run(mode+"/callers="+strconv.Itoa(callers), func(b *testing.B) {
				srv := newMemServer(len(frame), reply)
				tr := netio.NewTransport(netio.TransportConfig{
					Handshake: netio.HandshakeConfig{Protocol: netio.ProtocolRESP2},
					Dialer: netio.Dialer{Dial: func(context.Context, engine.Endpoint) (net.Conn, error) {
						return srv, nil
					}},
				})
				conn, _ := mustConnect(b, tr, engine.Endpoint{Host: "127.0.0.1", Port: 2})
				defer conn.Close()
				if mode == "one" {
					netio.PairOneAtATime(conn)
				}
				var next atomic.Int64
				var wg sync.WaitGroup
				b.ReportAllocs()
				b.ResetTimer()
				cpu := processCPU()
				for range callers {
					wg.Add(1)
					go func() {
						defer wg.Done()
						runBatches(b, conn, frame, batch, &next)
					}()
				}
				wg.Wait()
				b.ReportMetric(float64((processCPU()-cpu).Microseconds())/float64(b.N), "cpu-µs/op")
			})
		}
	}
}

// runBatches sends batches of n commands as groups until next reaches b.N, waiting for each
// batch's last reply before the next batch.
func runBatches(b *testing.B, conn *netio.Conn, frame []byte, n int, next *atomic.Int64) {
	cmds := make([]engine.Command, n)
	group := make([]*engine.Command, n)
	var left atomic.Int64
	done := make(chan struct{}, 1)
	for i := range cmds {
		cmds[i].Name = "GET"
		cmds[i].Frame = frame
		cmds[i].Done = func(*engine.Command) {
			if left.Add(-1) == 0 {
				done <- struct{}{}
			}
		}
		group[i] = &cmds[i]
	}
	for next.Add(1) <= int64(b.N) {
		left.Store(int64(n))
		for i := range cmds {
			cmds[i].Reset()
			cmds[i].Enqueued()
		}
		if !conn.OfferGroup(group) {
			b.Error("OfferGroup refused the batch")
			return
		}
		<-done
		if cmds[n-1].Err != nil {
			b.Error(cmds[n-1].Err)
			return
		}
	}
}
