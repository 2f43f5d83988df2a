package resp

import (
	"encoding/binary"
	"errors"
	"strconv"
)

// errMore is returned by decoder.feed when the value needs more input.
var errMore = errors.New("respire: more input needed")

// minTape is the smallest tape a growing decoder allocates.
const minTape = 256

// decoder validates one RESP value as its bytes arrive and writes its tape (see tape.go). It
// consumes input in units: a whole line, or any part of a bulk payload, so a caller need only
// keep the current line buffered; a payload can even be read straight into the tape
// (payloadSpace).
//
// In dry mode it writes nothing and only measures the tape: Parse validates and measures in a
// dry pass, then writes into storage sized exactly. Every check runs in both modes alike, so a
// dry pass that succeeds guarantees the writing pass does.
type decoder struct {
	lim    limits
	dry    bool
	out    []byte // the tape written so far (write mode)
	size   int    // tape bytes produced so far, written or measured
	wire   int    // bytes of the value consumed so far
	values int    // nested values announced so far, for MaxValues
	bulk   int    // payload bytes of the current bulk string still to come
	tail   bool   // the CRLF after a payload is still to come
	grows  bool   // out may be reallocated when full (Reader); Parse sizes it beforehand
	// The open aggregates: levels[0] is the root, a pseudo-aggregate of one value. The first
	// inlineLevels live in the decoder itself, so that Parse, which keeps its decoder on its
	// stack, allocates nothing for them; deeper ones go to overflow.
	depth    int
	levels   [inlineLevels]level
	overflow []level
}

// inlineLevels is how many nesting levels a decoder holds without allocating.
const inlineLevels = 16

// level is one open aggregate, or the root.
type level struct {
	hdr   int  // tape offset of the entry's tag (-1 for the root)
	body  int  // tape offset of the body
	index int  // tape offset of the index, or -1
	n     int  // elements expected
	done  int  // elements begun
	attrs bool // an attribute map
	// The attribute entry already complete for the next value at this level (several attribute
	// maps before one value merge into one entry): its tape offset, or -1, and its count.
	pendAttrs  int
	pendAttrsN int
}

// begin starts a new value, writing (unless dry) into out[:0].
func (d *decoder) begin(out []byte, lim *limits, dry, grows bool) {
	d.lim = *lim
	d.dry, d.grows = dry, grows
	d.out = out[:0]
	d.size, d.wire, d.values = 0, 0, 0
	d.bulk, d.tail = 0, false
	d.depth = 0
	d.push(level{hdr: -1, index: -1, n: 1, pendAttrs: -1})
}

// level returns open level i (0 is the root).
func (d *decoder) level(i int) *level {
	if i < inlineLevels {
		return &d.levels[i]
	}
	return &d.overflow[i-inlineLevels]
}

// top returns the innermost open level.
func (d *decoder) top() *level { return d.level(d.depth - 1) }

func (d *decoder) push(l level) {
	if d.depth < inlineLevels {
		d.levels[d.depth] = l
	} else {
		d.overflow = append(d.overflow[:d.depth-inlineLevels], l)
	}
	d.depth++
}

// started reports whether any byte of the value has been consumed.
func (d *decoder) started() bool { return d.wire > 0 }

// feed consumes what it can of in, the bytes that follow those already consumed, and returns how
// many it used. The error is nil when the value is complete, errMore when it needs the bytes
// after in, or a *ProtocolError whose offset counts from the value's first byte.
func (d *decoder) feed(in []byte) (int, error) {
	pos, err := d.run(in)
	d.wire += pos
	return pos, err
}

func (d *decoder) run(in []byte) (int, error) {
	pos := 0
	for {
		if d.bulk > 0 {
			k := min(d.bulk, len(in)-pos)
			d.putBytes(in[pos : pos+k])
			pos += k
			d.bulk -= k
			if d.bulk > 0 {
				return pos, errMore
			}
		}
		if d.tail {
			if len(in)-pos < 2 {
				return pos, errMore
			}
			if in[pos] != '\r' || in[pos+1] != '\n' {
				return pos, malformed(d.wire+pos, "bulk payload not followed by CRLF")
			}
			pos += 2
			d.tail = false
		}
		// Close every aggregate whose last element is complete.
		for d.depth > 1 && d.top().done == d.top().n {
			d.close()
		}
		if d.depth == 1 && d.levels[0].done == 1 {
			return pos, nil
		}
		next, err := d.header(in, pos)
		if err != nil {
			return pos, err
		}
		pos = next
	}
}

// header handles the value or aggregate header that starts at in[pos], returning the offset past
// what it consumed (for a bulk string, its header only).
func (d *decoder) header(in []byte, pos int) (int, error) {
	if pos >= len(in) {
		return 0, errMore
	}
	t := in[pos]
	if !isType(t) {
		return 0, malformed(d.wire+pos, "invalid type byte "+strconv.QuoteRune(rune(t)))
	}
	cr, err := lineEnd(in, pos+1, d.lim.line)
	if err != nil {
		if err == ErrIncomplete {
			return 0, errMore
		}
		var pe *ProtocolError
		if errors.As(err, &pe) {
			pe.Offset += int64(d.wire)
		}
		return 0, err
	}
	line := in[pos+1 : cr]
	next := cr + 2
	at := d.wire + pos // offset of this header in the value
	if d.wire+next > d.lim.reply {
		return 0, overLimit(at, "MaxReplyLen", int64(d.wire+next), int64(d.lim.reply))
	}
	top := d.top()
	switch t {
	case '+', '-':
		tag := tagSimple
		if t == '-' {
			tag = tagError
		}
		d.element(top, tag)
		d.putString(line)
	case '(':
		if !validBigNumber(line) {
			return 0, malformed(at+1, "invalid big number")
		}
		d.element(top, tagBigNumber)
		d.putString(line)
	case ',':
		if !validDouble(line) {
			return 0, malformed(at+1, "invalid double")
		}
		d.element(top, tagDouble)
		d.putString(line)
	case ':':
		n, e := parseInt(line)
		if e != "" {
			return 0, malformed(at+1, "invalid integer: "+e)
		}
		d.element(top, tagInt)
		d.putUvarint(zigzag(n))
	case '#':
		if len(line) != 1 || (line[0] != 't' && line[0] != 'f') {
			return 0, malformed(at+1, "invalid boolean")
		}
		if line[0] == 't' {
			d.element(top, tagTrue)
		} else {
			d.element(top, tagFalse)
		}
	case '_':
		if len(line) != 0 {
			return 0, malformed(at+1, "null with payload")
		}
		d.element(top, tagNull)
	case '$', '!', '=':
		return d.bulkHeader(in, t, line, pos, next)
	default: // '*', '%', '~', '>', '|'
		n, e := parseLen(line)
		if e != "" {
			return 0, malformed(at+1, "invalid length: "+e)
		}
		if n < 0 {
			if t != '*' {
				return 0, malformed(at+1, "negative length")
			}
			d.element(top, tagNullArray)
			return next, nil
		}
		if err := d.aggregate(t, n, at); err != nil {
			return 0, err
		}
	}
	return next, nil
}

// bulkHeader handles the header of a bulk string, bulk error or verbatim string. The payload is
// copied by run as it arrives; a verbatim string waits for its format prefix first.
func (d *decoder) bulkHeader(in []byte, t byte, line []byte, pos, next int) (int, error) {
	at := d.wire + pos
	n, e := parseLen(line)
	if e != "" {
		return 0, malformed(at+1, "invalid length: "+e)
	}
	top := d.top()
	if n < 0 {
		if t != '$' {
			return 0, malformed(at+1, "negative length")
		}
		d.element(top, tagNullBulk)
		return next, nil
	}
	if n > int64(d.lim.bulk) {
		return 0, overLimit(at+1, "MaxBulkLen", n, int64(d.lim.bulk))
	}
	size := int(n)
	if size > d.lim.reply-(d.wire+next)-2 {
		return 0, overLimit(at, "MaxReplyLen", int64(d.wire+next)+n+2, int64(d.lim.reply))
	}
	switch t {
	case '$':
		d.element(top, tagBulk)
	case '!':
		d.element(top, tagBulkError)
	default:
		if size < 4 {
			return 0, malformed(d.wire+next, "invalid verbatim string format")
		}
		if len(in) < next+4 {
			return 0, errMore
		}
		if in[next+3] != ':' {
			return 0, malformed(d.wire+next, "invalid verbatim string format")
		}
		d.element(top, tagVerbatim)
		d.putUvarint(uint64(size - 1))
		d.putBytes(in[next : next+3])
		d.bulk, d.tail = size-4, true
		return next + 4, nil
	}
	d.putUvarint(uint64(size))
	d.bulk, d.tail = size, true
	return next, nil
}

// aggregate handles the header of an aggregate or attribute map of n entries (pairs for maps).
func (d *decoder) aggregate(t byte, n int64, at int) error {
	if n > int64(d.lim.elems) || (pairwise(t) && 2*n > int64(d.lim.elems)) {
		return overLimit(at+1, "MaxElements", n, int64(d.lim.elems))
	}
	if d.depth > d.lim.depth {
		return overLimit(at, "MaxDepth", int64(d.depth), int64(d.lim.depth))
	}
	elems := int(n)
	if pairwise(t) {
		elems *= 2
	}
	if elems > d.lim.values-d.values {
		return overLimit(at, "MaxValues", int64(d.values)+int64(elems), int64(d.lim.values))
	}
	d.values += elems
	top := d.top()
	if t == '|' {
		if top.pendAttrs >= 0 {
			// Another attribute map before the same value: it extends the entry just closed.
			hdr, done := top.pendAttrs, top.pendAttrsN
			top.pendAttrs = -1
			d.push(level{hdr: hdr, body: hdr + attrsHeader, index: -1, n: done + elems, done: done, attrs: true, pendAttrs: -1})
			return nil
		}
		hdr := d.size
		d.putByte(tagAttrs)
		d.putZeros(8)
		d.push(level{hdr: hdr, body: hdr + attrsHeader, index: -1, n: elems, attrs: true, pendAttrs: -1})
		return nil
	}
	tag := tagArray
	switch t {
	case '%':
		tag = tagMap
	case '~':
		tag = tagSet
	case '>':
		tag = tagPush
	}
	hdr := d.size
	d.element(top, tag)
	d.putUvarint(uint64(elems))
	if elems == 0 {
		return nil
	}
	d.putZeros(4)
	index := d.size
	d.putZeros(4 * indexLen(elems))
	d.push(level{hdr: hdr, body: d.size, index: index, n: elems, pendAttrs: -1})
	return nil
}

// element begins a value (of any kind but attribute) at level top: it records the element in the
// index and writes the tag.
func (d *decoder) element(top *level, tag byte) {
	start := d.size
	if top.pendAttrs >= 0 {
		start = top.pendAttrs
		top.pendAttrs = -1
	}
	if top.index >= 0 && top.done > 0 && top.done%indexStride == 0 && !d.dry {
		binary.LittleEndian.PutUint32(d.out[top.index+4*(top.done/indexStride-1):], uint32(start-top.body))
	}
	top.done++
	d.putByte(tag)
}

// close ends the innermost aggregate, filling in its header.
func (d *decoder) close() {
	d.depth--
	l := *d.level(d.depth)
	if !d.dry {
		if l.attrs {
			binary.LittleEndian.PutUint32(d.out[l.hdr+1:], uint32(l.n))
			binary.LittleEndian.PutUint32(d.out[l.hdr+5:], uint32(d.size-l.body))
		} else {
			binary.LittleEndian.PutUint32(d.out[l.index-4:], uint32(d.size-l.body))
		}
	}
	if l.attrs {
		top := d.top()
		top.pendAttrs, top.pendAttrsN = l.hdr, l.n
	}
}

// room makes sure the tape can take n more bytes. A growing tape at least doubles; while a bulk
// payload is copied it is sized exactly to the payload's end as soon as it would otherwise reach
// half of it, so a large bulk string costs its size, not the next power of two, and storage is
// never more than four times the bytes that arrived.
func (d *decoder) room(n int) {
	need := len(d.out) + n
	if need <= cap(d.out) {
		return
	}
	c := max(need, 2*cap(d.out), minTape)
	if d.bulk > 0 {
		if exact := len(d.out) + d.bulk; 2*c >= exact {
			c = max(need, exact)
		}
	}
	grown := make([]byte, len(d.out), c)
	copy(grown, d.out)
	d.out = grown
}

func (d *decoder) putByte(b byte) {
	d.size++
	if d.dry {
		return
	}
	if d.grows {
		d.room(1)
	}
	d.out = append(d.out, b)
}

func (d *decoder) putZeros(n int) {
	d.size += n
	if d.dry {
		return
	}
	if d.grows {
		d.room(n)
	}
	d.out = d.out[:len(d.out)+n]
	clear(d.out[len(d.out)-n:])
}

func (d *decoder) putUvarint(x uint64) {
	if d.dry {
		d.size += uvarintLen(x)
		return
	}
	if d.grows {
		d.room(binary.MaxVarintLen64)
	}
	before := len(d.out)
	d.out = binary.AppendUvarint(d.out, x)
	d.size += len(d.out) - before
}

func (d *decoder) putBytes(b []byte) {
	d.size += len(b)
	if d.dry {
		return
	}
	if d.grows {
		d.room(len(b))
	}
	d.out = append(d.out, b...)
}

func (d *decoder) putString(b []byte) {
	d.putUvarint(uint64(len(b)))
	d.putBytes(b)
}

// payloadSpace returns the tape space the rest of the current bulk payload goes into, so that
// a Reader can read it straight from its source: the spare capacity of the tape, grown first
// (by the rule of room) when there is none, and never more than the payload still to come. It
// returns nil when no payload is pending.
func (d *decoder) payloadSpace() []byte {
	if d.bulk == 0 || d.dry {
		return nil
	}
	if len(d.out) == cap(d.out) {
		d.room(min(d.bulk, minTape))
	}
	n := min(d.bulk, cap(d.out)-len(d.out))
	return d.out[len(d.out) : len(d.out)+n]
}

// payloadRead records that n bytes were read into the space payloadSpace returned.
func (d *decoder) payloadRead(n int) {
	d.out = d.out[:len(d.out)+n]
	d.size += n
	d.wire += n
	d.bulk -= n
}
