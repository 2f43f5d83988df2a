package client

import (
	"testing"

	"github.com/respire-go/respire/netio/resp"
)

// TestPutPipeDropsTheArena: a pipeline back in the pool holds none of its last run's arena
// blocks. Before, putPipe dropped the reply slots of a batch over maxPipeSlots entries but kept
// its arena, so a pooled pipeline pinned up to MaxBatchLen short payloads (about 16 MiB) until
// its next run, whether or not the application still held them.
func TestPutPipeDropsTheArena(t *testing.T) {
	var c Client
	p := &pipe{client: &c}
	p.multi.Reset(maxPipeSlots + 1)
	var payloads [][]byte
	for i := range p.multi.Replies {
		src := resp.BulkString("a short value that goes to the arena")
		if !p.multi.Arena.Move(&p.multi.Replies[i], &src) {
			t.Fatal("the arena declined a short bulk string")
		}
		payloads = append(payloads, p.multi.Replies[i].Str)
	}
	c.putPipe(p)
	for i, b := range payloads {
		if _, ok := p.multi.Arena.String(b); ok {
			t.Fatalf("payload %d: the pooled pipeline still holds its arena block", i)
		}
		if string(b) != "a short value that goes to the arena" {
			t.Fatalf("payload %d changed: %q", i, b)
		}
	}
}
