package resp

import "encoding/binary"

// The fast path of Reader.
//
// Most replies a client reads are small scalars that arrive whole: +OK, :1, $-1, or a bulk
// string of a few dozen bytes. The general decoder (decode.go) handles them as it handles
// everything else, one unit at a time through its state machine, writing the tape a byte or a
// varint at a time and then decoding the Value back from the tape (decodeAt). readFast instead
// recognises a whole top-level simple string, simple error, integer, RESP3 null, null bulk
// string or bulk string at the start of the buffered bytes, writes its tape entry in one go, and
// builds the Value from what it parsed.
//
// It never reports an error of its own: whenever the bytes are anything else (another type, an
// attribute, an aggregate, a value not yet whole in the buffer, malformed input, or a value that
// would exceed a limit), it declines and leaves everything untouched, and the general decoder
// then reads the value from its first byte, with its own errors and offsets. What it accepts it
// stores exactly as the general decoder does: the same tape bytes, the same Value, the same
// limits (TestFastPathMatchesDecoder checks both paths on random and malformed streams, cut at
// every point).

// fastScalar is a value the fast path takes, recognised whole at the start of the buffered
// bytes by scanFast.
type fastScalar struct {
	// tag is the value's tape tag: tagSimple, tagError, tagInt, tagNull, tagNullBulk or tagBulk.
	tag byte
	// n is an integer's value.
	n int64
	// text is a string's payload, a view of the read buffer.
	text []byte
	// size is the number of bytes the value occupies.
	size int
}

// scanFast recognises the value at the start of b (not empty) when it is one the fast path takes
// and is whole in b, within r's limits, and reports whether it did. It reads nothing and changes
// nothing: readFast and ReadBufferedTo store what it found, each its own way.
func (r *Reader) scanFast(b []byte) (fastScalar, bool) {
	var s fastScalar
	switch b[0] {
	case '$':
		s.tag = tagBulk
	case '+':
		s.tag = tagSimple
	case '-':
		s.tag = tagError
	case ':':
		s.tag = tagInt
	case '_':
		s.tag = tagNull
	default:
		return s, false
	}
	cr, err := lineEnd(b, 1, r.lim.line)
	if err != nil || cr+2 > r.lim.reply {
		return s, false
	}
	line := b[1:cr]
	s.size = cr + 2
	switch s.tag {
	case tagInt:
		n, e := parseInt(line)
		if e != "" {
			return s, false
		}
		s.n = n
	case tagNull:
		if len(line) != 0 {
			return s, false
		}
	case tagBulk:
		n, e := parseLen(line)
		if e != "" {
			return s, false
		}
		if n < 0 { // parseLen accepts exactly -1
			s.tag = tagNullBulk
			break
		}
		next := s.size
		if n > int64(r.lim.bulk) || int(n) > r.lim.reply-next-2 {
			return s, false
		}
		end := next + int(n)
		if len(b) < end+2 || b[end] != '\r' || b[end+1] != '\n' {
			return s, false
		}
		s.text, s.size = b[next:end], end+2
	default:
		s.text = line
	}
	return s, true
}

// readFast reads the value at the start of the buffered bytes into *v when it is one the fast
// path takes (see above) and is whole in the buffer, and reports whether it did. It must only be
// called between values (not r.partial) with bytes buffered.
func (r *Reader) readFast(v *Value) bool {
	if r.noFast {
		return false
	}
	s, ok := r.scanFast(r.buf[r.r:r.w])
	if !ok {
		return false
	}
	switch s.tag {
	case tagInt:
		x := zigzag(s.n)
		t := r.fastTape(1 + uvarintLen(x))
		t[0] = tagInt
		binary.PutUvarint(t[1:], x)
		r.fastDeliver(v, Value{Kind: KindInteger, Int: s.n}, t, s.size)
	case tagNull, tagNullBulk:
		t := r.fastTape(1)
		t[0] = s.tag
		nf := NullFormRESP3
		if s.tag == tagNullBulk {
			nf = NullFormBulk
		}
		r.fastDeliver(v, Value{Kind: KindNull, NullForm: nf}, t, s.size)
	default:
		t, str := r.fastString(s.tag, s.text)
		r.fastDeliver(v, Value{Kind: tagKinds[s.tag], Str: str}, t, s.size)
	}
	return true
}

// fastTape returns the next value's storage tape, n bytes long. Storage too small for it is
// replaced by storage of exactly n bytes, or of the decoder's smallest tape when n is smaller, so
// that a large bulk string costs its size, as with the decoder.
func (r *Reader) fastTape(n int) []byte {
	m := r.pend
	if m == nil {
		m = new(store)
		r.pend = m
	}
	if cap(m.tape) < n {
		m.tape = make([]byte, 0, max(n, minTape))
	}
	return m.tape[:n]
}

// fastString writes the tape entry of a string with the given tag and returns the tape and the
// payload's place in it, its capacity clipped to the end of the entry (the end of the tape).
func (r *Reader) fastString(tag byte, s []byte) (tape, str []byte) {
	k := 1 + uvarintLen(uint64(len(s)))
	t := r.fastTape(k + len(s))
	t[0] = tag
	binary.PutUvarint(t[1:], uint64(len(s)))
	copy(t[k:], s)
	return t, t[k:len(t):len(t)]
}

// fastDeliver hands val, stored in tape (the pending storage's, from fastTape), to *v as deliver
// does, and consumes the n bytes it occupied.
func (r *Reader) fastDeliver(v *Value, val Value, tape []byte, n int) {
	m := r.pend
	m.tape = tape
	old := v.mem
	*v = val
	v.mem = m
	r.pend = nil
	if old != nil && cap(old.tape) <= readerRetainedStorage {
		r.pend = old
	}
	r.consume(n)
	r.shrink()
}
