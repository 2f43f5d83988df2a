package client_test

import (
	"testing"

	"github.com/respire-go/respire/client"
)

// TestBatchFuturesAreAllocatedInBlocks: queueing 100 commands in a reused batch allocates
// their futures a block at a time (4 blocks of 32), not one by one, and every future is its
// own.
func TestBatchFuturesAreAllocatedInBlocks(t *testing.T) {
	var b client.Batch
	keys := make([]string, 100)
	for i := range keys {
		keys[i] = "k"
	}
	var futures []*client.Future[client.Optional[string]]
	allocs := testing.AllocsPerRun(50, func() {
		futures = futures[:0]
		for _, k := range keys {
			futures = append(futures, b.Get(k))
		}
		b.Reset()
	})
	if allocs > 4 {
		t.Fatalf("%v allocations to queue 100 GETs, want at most 4", allocs)
	}
	seen := make(map[*client.Future[client.Optional[string]]]bool)
	for _, f := range futures {
		if seen[f] {
			t.Fatal("a future was handed out twice")
		}
		seen[f] = true
		if f.Err() == nil {
			t.Fatal("an unrun future has no ErrNotRun")
		}
	}
}
