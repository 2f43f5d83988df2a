package client

import (
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/respire-go/respire/netio/resp"
)

// benchValue is the value of the batch benchmarks (bench/: 64 bytes).
var benchValue = strings.Repeat("0123456789abcdef", 4)

// BenchmarkBatchCallerSide measures what a Batch costs its caller per run of 100 GETs (or
// SETs), without a network: queueing, taking the run's calls, the completions as a connection
// would deliver them, and settling the futures. It isolates the client's share of the
// benchmarks in bench/ (Clients/BATCH*), which the server and the sockets dominate.
func BenchmarkBatchCallerSide(b *testing.B) {
	c := &Client{}
	keys := benchKeys(100)
	replies := make([][]byte, len(keys))
	for i := range replies {
		replies[i] = []byte(benchValue)
	}
	b.Run("GET", func(b *testing.B) {
		var bt Batch
		futs := make([]*Future[Optional[string]], 0, len(keys))
		b.ReportAllocs()
		defer reportCPU(b)()
		for b.Loop() {
			futs = futs[:0]
			for _, k := range keys {
				futs = append(futs, bt.Get(k))
			}
			benchRun(b, c, &bt, func(i int, v *resp.Value) { *v = resp.Bulk(replies[i]) })
			for _, f := range futs {
				if v, err := f.Result(); err != nil || len(v.Value) != len(benchValue) {
					b.Fatal(v, err)
				}
			}
		}
	})
	b.Run("SET", func(b *testing.B) {
		var bt Batch
		ok := resp.SimpleString("OK")
		futs := make([]*Future[None], 0, len(keys))
		b.ReportAllocs()
		defer reportCPU(b)()
		for b.Loop() {
			futs = futs[:0]
			for _, k := range keys {
				futs = append(futs, bt.Set(k, benchValue))
			}
			benchRun(b, c, &bt, func(_ int, v *resp.Value) { *v = ok })
			for _, f := range futs {
				if err := f.Err(); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}

// benchRun runs the batch's pipeline as runBatchIn does, with the connection's part played
// here: the pipeline command (batch_pipe.go) gets the replies reply(i), in order, and completes
// with the last.
func benchRun(b *testing.B, c *Client, bt *Batch, reply func(i int, v *resp.Value)) {
	defer bt.done()
	if err := bt.check(c, true, modePipeline); err != nil {
		b.Fatal(err)
	}
	p := bt.startPipe(c)
	cmd := &p.cmd
	cmd.Enqueued()
	cmd.Writing()
	cmd.Written()
	var v resp.Value
	for i := range bt.ents {
		reply(i, &v)
		cmd.Pair()
		if _, err := cmd.DeliverPart(&v, true); err != nil {
			b.Fatal(err)
		}
	}
	<-p.grp.done
	if err := bt.settlePipe(c, p, true, nil, false); err != nil {
		b.Fatal(err)
	}
}

// reportCPU returns a function that reports the process's CPU time (user and system) per op,
// which the wait for a core on a busy machine does not inflate.
func reportCPU(b *testing.B) func() {
	start := processCPU()
	return func() {
		b.ReportMetric(float64((processCPU()-start).Microseconds())/float64(b.N), "cpu-µs/op")
	}
}

// processCPU returns the process's CPU time so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchKeys returns n distinct keys.
func benchKeys(n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = "key:" + strconv.Itoa(i)
	}
	return keys
}

// BenchmarkEncodeFrames measures encoding alone: the frames of 100 GETs (or SETs of 64-byte
// values) appended to a batch's buffer, as Batch.Get and Batch.Set encode them.
func BenchmarkEncodeFrames(b *testing.B) {
	keys := benchKeys(100)
	var bt Batch
	b.Run("GET", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			bt.buf = bt.buf[:0]
			for _, k := range keys {
				e := bt.encoder()
				encGet(&e, k)
				e.finish()
			}
		}
	})
	b.Run("SET", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			bt.buf = bt.buf[:0]
			for _, k := range keys {
				e := bt.encoder()
				encSet(&e, k, benchValue)
				e.finish()
			}
		}
	})
}

// BenchmarkBatchQueue measures queueing alone: 100 GETs (or SETs) queued in a batch, which is
// then emptied without running (encoding, futures and entries).
func BenchmarkBatchQueue(b *testing.B) {
	keys := benchKeys(100)
	var bt Batch
	b.Run("GET", func(b *testing.B) {
		b.ReportAllocs()
		defer reportCPU(b)()
		for b.Loop() {
			for _, k := range keys {
				bt.Get(k)
			}
			bt.Reset()
		}
	})
	b.Run("SET", func(b *testing.B) {
		b.ReportAllocs()
		defer reportCPU(b)()
		for b.Loop() {
			for _, k := range keys {
				bt.Set(k, benchValue)
			}
			bt.Reset()
		}
	})
}
