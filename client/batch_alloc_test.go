//go:build !race

// The race detector drops pooled objects at random and allocates on synchronised accesses, so
// this file is left out of race builds.

package client

import (
	"testing"

	"github.com/respire-go/respire/netio/resp"
)

// runFake runs the batch's pipeline with every command answered by reply, as a connection
// would, and settles it.
func runFake(t *testing.T, c *Client, b *Batch, reply resp.Value) {
	t.Helper()
	cls, cmds, g := b.start(c, modePipeline)
	completeAll(cmds, reply)
	<-g.done
	if err := b.settle(c, cls, true, nil, false, modePipeline, nil); err != nil {
		t.Fatal(err)
	}
	b.done()
}

// TestBatchRunAllocations: a reused batch of 100 GETs allocates its futures (in blocks of 32)
// and one shared block for its short values, not a call, a frame or a string per command; a
// new Batch per run reuses the calls of the runs before it (a batch that kept its calls to
// itself would allocate 100 calls per new Batch).
func TestBatchRunAllocations(t *testing.T) {
	c := &Client{}
	value := resp.BulkString("0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef")
	var reused Batch
	gets := func() {
		for range 100 {
			reused.Get("key")
		}
		runFake(t, c, &reused, value)
	}
	gets()
	// 4 blocks of futures, and 6,400 bytes of values: one block of 8 KiB, two when a run
	// starts near the end of one.
	if n := testing.AllocsPerRun(50, gets); n > 6 {
		t.Errorf("a reused batch of 100 GETs: %v allocations per run, want at most 6", n)
	}
	fresh := func() {
		var b Batch
		for range 100 {
			b.Set("key", "value")
		}
		runFake(t, c, &b, resp.SimpleString("OK"))
	}
	fresh()
	// The new Batch's own growth (buffer, entries, futures, group) is about 25 allocations.
	if n := testing.AllocsPerRun(50, fresh); n > 40 {
		t.Errorf("a new batch of 100 SETs per run: %v allocations per run, want at most 40 (its calls reused)", n)
	}
}
