package client

import (
	"strings"

	"github.com/respire-go/respire/netio/resp"
)

// A Batch packs the short string results of its commands (GET, HGET, LPOP, ... : the result
// kinds marked packed in commands.txt) into shared blocks instead of allocating each string
// alone: a batch of 100 GETs of 64-byte values makes one allocation for its values instead of
// 100. The cost is retention: a string the application keeps holds its whole block in memory.
// The bounds keep that proportional to what is kept: a block is at most packBlock bytes, and
// only strings of at most maxPackedText bytes share one; a longer string is allocated alone. A
// block is never written again where a string was handed out, so the strings stay immutable.
const (
	// packBlock is the size of a block of packed strings.
	packBlock = 8 << 10
	// maxPackedText bounds the strings that are packed.
	maxPackedText = 256
)

// textPack hands out strings copied into its current block. It lives behind a pointer in the
// Batch: a strings.Builder must not be copied once used, and a Batch may be.
type textPack struct {
	block strings.Builder
	// arena, when set, holds replies whose strings are handed out as views instead of copies
	// (a pipeline's replies: batch_pipe.go); it is never written where they lie.
	arena *resp.Arena
}

// text returns a string holding a copy of p.
func (t *textPack) text(p []byte) string {
	n := len(p)
	switch {
	case n == 0:
		return ""
	case n > maxPackedText || t == nil:
		return string(p)
	}
	if t.arena != nil {
		if s, ok := t.arena.String(p); ok {
			return s
		}
	}
	if t.block.Cap()-t.block.Len() < n {
		t.block = strings.Builder{}
		t.block.Grow(packBlock)
	}
	start := t.block.Len()
	t.block.Write(p)
	// The Builder's String is a view of its block: bytes written before are never written
	// again, only appended after.
	return t.block.String()[start:]
}

// pack returns the batch's string pack, made at first use.
func (b *Batch) pack() *textPack {
	if b.texts == nil {
		b.texts = &textPack{}
	}
	return b.texts
}

// queuePacked is queue for a result decoded with a string pack: dec decodes as its unpacked
// twin does, the same value for the same reply, only its strings sharing blocks.
func queuePacked[T any](b *Batch, e *enc, dec func(*resp.Value, *textPack) (T, error)) *Future[T] {
	return enqueue[T](b, e, dec)
}

// isText reports a reply kind that textOf decodes as its bytes.
func isText(k resp.Kind) bool {
	return k == resp.KindBulkString || k == resp.KindSimpleString || k == resp.KindVerbatimString
}

// decOptStringPacked is decOptString with a string pack.
func decOptStringPacked(v *resp.Value, t *textPack) (Optional[string], error) {
	if isText(v.Kind) {
		return Optional[string]{Value: t.text(v.Str), Valid: true}, nil
	}
	return decOptString(v)
}

// decStringPacked is decString with a string pack.
func decStringPacked(v *resp.Value, t *textPack) (string, error) {
	if isText(v.Kind) {
		return t.text(v.Str), nil
	}
	return decString(v)
}
