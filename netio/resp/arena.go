package resp

import "unsafe"

// Arena holds the payloads of short replies back to back in blocks, for a reader of many
// replies that are read on one goroutine and used on another (a pipeline's replies, see
// engine.Multi): Move puts a reply in its place with its payload in the arena, leaving the
// storage the reader decodes into where it is, hot in the reader's cache, instead of handing it
// over with the reply; and the strings the application keeps can be views of the arena's blocks
// (String) instead of copies.
//
// Bounds: a block is at most ArenaBlock bytes (the first block of a fill as large as the previous
// fill took, rounded up, when that was less) and only payloads of at most ArenaMax bytes go to one, so
// that a string kept from a block holds at most ArenaBlock bytes in memory. Bytes written to a
// block are never written again: a block is only appended to, and Drop forgets the blocks
// instead of reusing them.
type Arena struct {
	// blocks are the arena's full blocks; cur is the block being filled, n its bytes used.
	blocks [][]byte
	cur    []byte
	n      int
	// used counts the bytes taken since the last Drop; last is what the fill before took,
	// which sizes the next fill's first block.
	used, last int
}

const (
	// ArenaBlock is the size of an arena block.
	ArenaBlock = 8 << 10
	// ArenaMax bounds the payloads an arena takes.
	ArenaMax = 256
	// arenaRound rounds a first block's size up.
	arenaRound = 512
)

// Move moves the reply src into dst when it is a scalar that needs no storage of its own: an
// integer, a null, a boolean, a double, a bulk string of at most ArenaMax bytes, whose payload
// is copied into the arena, or a simple string or error of at most ArenaMax bytes, whose payload
// is copied into dst's own storage (valid until dst is written again, as for a value read into
// dst). dst keeps the storage it owns (for a later Parse or Read) and src keeps its own. It
// reports false, changing nothing, for any other value (an aggregate, a value with attributes, a
// longer string): move those with their storage.
func (a *Arena) Move(dst, src *Value) bool {
	if src.ent != nil || src.elems != nil || src.attrs != nil {
		return false
	}
	switch src.Kind {
	case KindBulkString:
		if len(src.Str) > ArenaMax {
			return false
		}
		dst.setScalar(KindBulkString, 0, false, 0, 0)
		dst.Str = a.copy(src.Str)
	case KindSimpleString, KindSimpleError:
		if len(src.Str) > ArenaMax {
			return false
		}
		dst.setText(src.Kind, src.Str)
	case KindInteger, KindNull, KindBoolean, KindDouble:
		dst.setNumber(src.Kind, src.NullForm, src.Bool, src.Int, src.Float)
	default:
		return false
	}
	return true
}

// setText makes *v a simple string or error holding a copy of p in v's own storage (made when it
// has none): such replies (+OK, -ERR ...) are rarely kept, and decoders copy what they keep.
func (v *Value) setText(k Kind, p []byte) {
	v.setScalar(k, 0, false, 0, 0)
	m := v.mem
	if m == nil {
		m = new(store)
		v.mem = m
	}
	if cap(m.tape) < len(p) {
		m.tape = make([]byte, 0, max(len(p), minTape))
	}
	t := m.tape[:len(p):len(p)]
	copy(t, p)
	v.Str = t
}

// setNumber is setScalar for a value without a string (an integer, a null, a boolean, a double).
func (v *Value) setNumber(k Kind, nf NullForm, b bool, i int64, f float64) {
	v.setScalar(k, nf, b, i, f)
	if v.Str != nil {
		v.Str = nil
	}
}

// setScalar makes *v a scalar of the given kind and payload without a string, keeping its
// storage. It stores a pointer field only when it was set: a store of a pointer costs a write
// barrier while the garbage collector marks, and a reader moves one value per reply.
func (v *Value) setScalar(k Kind, nf NullForm, b bool, i int64, f float64) {
	v.Kind, v.NullForm, v.Bool, v.Format, v.Int, v.Float = k, nf, b, [3]byte{}, i, f
	if v.elems != nil {
		v.elems = nil
	}
	if v.attrs != nil {
		v.attrs = nil
	}
	if v.ent != nil {
		v.ent = nil
	}
}

// copy appends p to the current block, or to a new one when it does not fit, and returns the
// copy, its capacity clipped to its length.
func (a *Arena) copy(p []byte) []byte {
	n := len(p)
	if n == 0 {
		return []byte{}
	}
	if len(a.cur)-a.n < n {
		size := ArenaBlock
		if a.cur != nil {
			a.blocks = append(a.blocks, a.cur)
		} else if a.last > 0 && a.last < ArenaBlock {
			// The first block of a fill is as large as the previous fill took (a pipeline
			// pooled for similar batches), rounded up, so that it wastes little.
			size = max((a.last+arenaRound-1)&^(arenaRound-1), n)
		}
		a.cur, a.n = make([]byte, size), 0
	}
	start := a.n
	a.n += copy(a.cur[start:], p)
	a.used += n
	return a.cur[start:a.n:a.n]
}

// String returns p as a string without copying it when p lies in one of the arena's blocks, and
// reports whether it does. The string stays valid after Drop.
func (a *Arena) String(p []byte) (string, bool) {
	if len(p) == 0 {
		return "", false
	}
	if a.owns(a.cur, p) {
		return unsafe.String(unsafe.SliceData(p), len(p)), true
	}
	for _, b := range a.blocks {
		if a.owns(b, p) {
			return unsafe.String(unsafe.SliceData(p), len(p)), true
		}
	}
	return "", false
}

// owns reports whether p, not empty, lies within block b.
func (*Arena) owns(b, p []byte) bool {
	if len(b) == 0 {
		return false
	}
	at := uintptr(unsafe.Pointer(unsafe.SliceData(p)))
	base := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	return at >= base && at+uintptr(len(p)) <= base+uintptr(len(b))
}

// Drop forgets the arena's blocks: the values and strings that point into them stay valid, and
// the next Move starts a new block.
func (a *Arena) Drop() {
	if a.cur == nil {
		return
	}
	clear(a.blocks)
	a.blocks = a.blocks[:0]
	a.cur, a.n = nil, 0
	a.last, a.used = a.used, 0
}

// ReadBufferedTo reads the next value into *dst as Move would move it, when it is whole in the
// buffer and one the fast path takes (see readFast) that Move takes too: a simple string or error
// or a bulk string of at most ArenaMax bytes, an integer, a null. It reports whether it did;
// otherwise it leaves everything untouched (anything else, a value not yet whole, malformed input
// or a value beyond a limit), and ReadBuffered reads the value with the general rules and errors.
// It never reads the underlying reader. dst keeps its storage, as with Move; no value of the
// Reader's own storage is involved, which a driver that knows where the next reply goes uses to
// store it there directly (netio's pipelines).
func (r *Reader) ReadBufferedTo(dst *Value, a *Arena) bool {
	if r.err != nil || r.partial || r.noFast || r.w == r.r {
		return false
	}
	s, ok := r.scanFast(r.buf[r.r:r.w])
	if !ok || len(s.text) > ArenaMax {
		return false
	}
	switch s.tag {
	case tagBulk:
		dst.setScalar(KindBulkString, 0, false, 0, 0)
		dst.Str = a.copy(s.text)
	case tagSimple, tagError:
		dst.setText(tagKinds[s.tag], s.text)
	case tagInt:
		dst.setNumber(KindInteger, 0, false, s.n, 0)
	case tagNull:
		dst.setNumber(KindNull, NullFormRESP3, false, 0, 0)
	default: // tagNullBulk
		dst.setNumber(KindNull, NullFormBulk, false, 0, 0)
	}
	r.consume(s.size)
	r.shrink()
	return true
}
