package resp

import (
	"bytes"
	"strconv"
)

// Parse decodes one complete RESP2 or RESP3 value, including any RESP3
// attributes that precede it, from the start of buf into *v, and returns
// the number of bytes it occupied. Bytes after the value are not examined.
//
// If buf holds only a prefix of a valid value, Parse returns 0 and
// ErrIncomplete; call it again with the same bytes plus more. Malformed
// input, or input exceeding lim (nil means the defaults), yields a
// *ProtocolError. On any error *v is left exactly as it was.
//
// Aliasing. Parse copies every payload out of buf, so buf may be reused
// as soon as Parse returns (buf must not, however, overlap the storage of
// *v). The copies live in storage owned by *v: one pool of Values from
// which the Elems and Attrs slices of every nested value are carved, and
// one byte arena from which every Str is carved. All of those slices stay
// valid until the next Parse or Reader.Read into the same *v, which
// reuses the storage in place (growing it only when the new value does
// not fit) and so overwrites them. Copying the struct (w := *v) copies
// references, not storage: w is invalidated together with *v; call Clone
// to keep a value. Parse never writes through slices that *v held before
// the call other than its own storage, so parsing into a Value built with
// the constructors, or into a Clone, is safe. Every slice Parse hands out
// has its capacity clipped to its length, so appending to one never
// clobbers a neighbour.
//
// Parse checks the whole value is present and well formed before it
// writes anything, and sizes the storage only then, so a length header
// never causes an allocation ahead of the data. Re-parsing into the same
// Value allocates nothing once its storage is large enough.
func Parse(buf []byte, v *Value, lim *Limits) (n int, err error) {
	l := lim.resolve()
	if len(buf) > 0 && !pairwise(buf[0]) && buf[0] != '*' && buf[0] != '~' && buf[0] != '>' {
		// Fast path for a scalar reply: no frames needed.
		next, nbytes, _, err := scanOne(buf, 0, &l)
		if err != nil {
			return 0, err
		}
		fill(buf[:next], v, 0, nbytes)
		return next, nil
	}
	var st scanState
	var inline [16]frame
	if _, err := scan(buf, &st, append(inline[:0], frame{left: 1}), &l); err != nil {
		return 0, err
	}
	fill(buf[:st.pos], v, st.nodes, st.bytes)
	return st.pos, nil
}

// scanState is the resumable progress of validating one value. Together
// with the frame stack it summarises every header before pos; nothing is
// recorded for a header that is not yet complete.
type scanState struct {
	pos   int // offset of the next header, relative to the value start
	nodes int // pool Values the value needs (every nested value and attribute entry)
	bytes int // arena bytes the value needs
}

// frame is one open aggregate during scanning.
type frame struct {
	left     int  // values still expected at this level
	attrs    int  // attribute entries already pending for the next value here
	hasAttrs bool // an attribute was read and its value has not been yet
}

// scan validates buf from st.pos on, updating st and the frame stack as it
// completes headers. It returns nil when the value is complete (st.pos is
// then its length), ErrIncomplete when more bytes are needed (st and
// stack are then consistent and scanning may resume with a longer buf),
// or a *ProtocolError. The stack is passed and returned rather than kept
// in st so that Parse can back it with an array on its own stack.
func scan(buf []byte, st *scanState, stack []frame, l *limits) ([]frame, error) {
	pos := st.pos
	for {
		for len(stack) > 0 && stack[len(stack)-1].left == 0 {
			stack = stack[:len(stack)-1]
		}
		st.pos = pos
		if len(stack) == 0 {
			return stack, nil
		}
		next, nbytes, n, err := scanOne(buf, pos, l)
		if err != nil {
			return stack, err
		}
		top := &stack[len(stack)-1]
		if n < 0 {
			// A complete scalar (or null array).
			st.bytes += nbytes
			top.left--
			top.attrs, top.hasAttrs = 0, false
			pos = next
			continue
		}
		t := buf[pos]
		if n > int64(l.elems) || (pairwise(t) && 2*n > int64(l.elems)) {
			return stack, overLimit(pos+1, "MaxElements", n, int64(l.elems))
		}
		if len(stack) > l.depth {
			return stack, overLimit(pos, "MaxDepth", int64(len(stack)), int64(l.depth))
		}
		elems := int(n)
		if pairwise(t) {
			elems *= 2
		}
		add := elems
		if t == '|' && top.hasAttrs {
			// A second attribute before the same value: Parse merges both
			// into one contiguous Attrs slice, which costs a copy of the
			// entries gathered so far.
			add += top.attrs
		}
		if add > l.values-st.nodes {
			return stack, overLimit(pos, "MaxValues", int64(st.nodes)+int64(add), int64(l.values))
		}
		st.nodes += add
		if t == '|' {
			top.attrs += elems
			top.hasAttrs = true
		} else {
			top.left--
			top.attrs, top.hasAttrs = 0, false
		}
		pos = next
		if elems > 0 {
			stack = append(stack, frame{left: elems})
		}
	}
}

// scanOne validates what starts at buf[pos]. For a scalar, including the
// null bulk string and null array, it validates the whole value and
// returns the offset just past it, the arena bytes it needs, and n = -1.
// For an aggregate or attribute header it returns the offset past the
// header and the announced count n >= 0 (pairs for maps and attributes),
// which the caller checks against the limits.
func scanOne(buf []byte, pos int, l *limits) (next, nbytes int, n int64, err error) {
	if pos >= len(buf) {
		return 0, 0, 0, ErrIncomplete
	}
	t := buf[pos]
	if !isType(t) {
		return 0, 0, 0, malformed(pos, "invalid type byte "+strconv.QuoteRune(rune(t)))
	}
	cr, err := lineEnd(buf, pos+1, l.line)
	if err != nil {
		return 0, 0, 0, err
	}
	line := buf[pos+1 : cr]
	next = cr + 2
	if next > l.reply {
		return 0, 0, 0, overLimit(pos, "MaxReplyLen", int64(next), int64(l.reply))
	}
	switch t {
	case '+', '-':
		return next, len(line), -1, nil
	case '(':
		if !validBigNumber(line) {
			return 0, 0, 0, malformed(pos+1, "invalid big number")
		}
		return next, len(line), -1, nil
	case ':':
		if _, e := parseInt(line); e != "" {
			return 0, 0, 0, malformed(pos+1, "invalid integer: "+e)
		}
	case ',':
		if !validDouble(line) {
			return 0, 0, 0, malformed(pos+1, "invalid double")
		}
	case '#':
		if len(line) != 1 || (line[0] != 't' && line[0] != 'f') {
			return 0, 0, 0, malformed(pos+1, "invalid boolean")
		}
	case '_':
		if len(line) != 0 {
			return 0, 0, 0, malformed(pos+1, "null with payload")
		}
	case '$', '!', '=':
		n, e := parseLen(line)
		if e != "" {
			return 0, 0, 0, malformed(pos+1, "invalid length: "+e)
		}
		if n < 0 {
			if t != '$' {
				return 0, 0, 0, malformed(pos+1, "negative length")
			}
			break
		}
		if n > int64(l.bulk) {
			return 0, 0, 0, overLimit(pos+1, "MaxBulkLen", n, int64(l.bulk))
		}
		size := int(n)
		if size > l.reply-next-2 {
			return 0, 0, 0, overLimit(pos, "MaxReplyLen", int64(next)+n+2, int64(l.reply))
		}
		if size > len(buf)-next-2 {
			return 0, 0, 0, ErrIncomplete
		}
		end := next + size
		if buf[end] != '\r' || buf[end+1] != '\n' {
			return 0, 0, 0, malformed(end, "bulk payload not followed by CRLF")
		}
		if t == '=' {
			if size < 4 || buf[next+3] != ':' {
				return 0, 0, 0, malformed(next, "invalid verbatim string format")
			}
			size -= 4
		}
		return end + 2, size, -1, nil
	default: // '*', '%', '~', '>', '|'
		n, e := parseLen(line)
		if e != "" {
			return 0, 0, 0, malformed(pos+1, "invalid length: "+e)
		}
		if n < 0 && t != '*' {
			return 0, 0, 0, malformed(pos+1, "negative length")
		}
		return next, 0, n, nil
	}
	return next, 0, -1, nil
}

func isType(t byte) bool {
	switch t {
	case '+', '-', ':', '$', '*', '_', '#', ',', '(', '!', '=', '%', '~', '|', '>':
		return true
	}
	return false
}

// pairwise reports whether the aggregate type byte t counts pairs.
func pairwise(t byte) bool { return t == '%' || t == '|' }

// lineEnd finds the CRLF ending the line whose content starts at
// buf[start] and returns the index of its CR. The content may not contain
// CR or LF and may be at most max bytes long. It returns ErrIncomplete if
// the line may still turn out valid once more bytes arrive.
func lineEnd(buf []byte, start, max int) (int, error) {
	rest := buf[start:]
	window := rest
	limited := len(rest) > max
	if limited {
		window = rest[:max+1]
	}
	// Most lines are short: look for the first CR or LF byte by byte, and
	// switch to the vectorised search only for long lines.
	i := 0
	for ; i < len(window) && i < 32; i++ {
		if c := window[i]; c == '\r' || c == '\n' {
			break
		}
	}
	if i == 32 {
		if j := bytes.IndexByte(window[i:], '\r'); j >= 0 {
			i += j
		} else {
			i = len(window)
		}
		if j := bytes.IndexByte(window[32:i], '\n'); j >= 0 {
			i = 32 + j
		}
	}
	if i == len(window) {
		if limited {
			return 0, &ProtocolError{
				Offset: int64(start),
				Reason: "MaxLineLen exceeded: line longer than " + strconv.Itoa(max) + " bytes",
				Limit:  "MaxLineLen",
			}
		}
		return 0, ErrIncomplete
	}
	if window[i] == '\n' {
		return 0, malformed(start+i, "line feed without carriage return")
	}
	if i+1 == len(rest) {
		return 0, ErrIncomplete
	}
	if rest[i+1] != '\n' {
		return 0, malformed(start+i+1, "carriage return not followed by line feed")
	}
	return start + i, nil
}

// parseInt parses a RESP integer: optional sign and at least one decimal
// digit, within the int64 range. On failure it returns a reason.
func parseInt(b []byte) (int64, string) {
	neg := false
	if len(b) > 0 && (b[0] == '-' || b[0] == '+') {
		neg = b[0] == '-'
		b = b[1:]
	}
	u, e := parseDigits(b)
	if e != "" {
		return 0, e
	}
	if neg {
		if u > 1<<63 {
			return 0, "overflows int64"
		}
		return -int64(u), ""
	}
	if u > 1<<63-1 {
		return 0, "overflows int64"
	}
	return int64(u), ""
}

// parseDigits parses one or more decimal digits, saturating at 1<<63+1 so
// that callers can detect int64 overflow.
func parseDigits(b []byte) (uint64, string) {
	if len(b) == 0 {
		return 0, "no digits"
	}
	var u uint64
	over := false
	for _, c := range b {
		d := c - '0'
		if d > 9 {
			return 0, "not a number"
		}
		if u > (1<<63)/10 {
			over = true
			continue
		}
		u = u*10 + uint64(d)
	}
	if over || u > 1<<63 {
		return 1<<63 + 1, ""
	}
	return u, ""
}

// parseLen parses a length header: decimal digits, or exactly "-1".
func parseLen(b []byte) (int64, string) {
	if len(b) == 2 && b[0] == '-' && b[1] == '1' {
		return -1, ""
	}
	if len(b) > 0 && b[0] == '-' {
		return 0, "negative"
	}
	u, e := parseDigits(b)
	if e != "" {
		return 0, e
	}
	if u > 1<<63-1 {
		return 0, "overflows int64"
	}
	return int64(u), ""
}

// validBigNumber reports whether b is an optional '-' followed by one or
// more decimal digits.
func validBigNumber(b []byte) bool {
	if len(b) > 0 && b[0] == '-' {
		b = b[1:]
	}
	if len(b) == 0 {
		return false
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// validDouble reports whether b follows the RESP3 double grammar:
// "inf", "-inf", "nan", or [+-]digits[.digits][(e|E)[+-]digits].
func validDouble(b []byte) bool {
	switch string(b) {
	case "inf", "-inf", "nan":
		return true
	}
	i := 0
	if i < len(b) && (b[i] == '+' || b[i] == '-') {
		i++
	}
	digits := func() bool {
		s := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		return i > s
	}
	if !digits() {
		return false
	}
	if i < len(b) && b[i] == '.' {
		i++
		if !digits() {
			return false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if !digits() {
			return false
		}
	}
	return i == len(b)
}

// parseDouble converts text already accepted by validDouble. Out-of-range
// magnitudes saturate to ±Inf or zero, as strconv does.
func parseDouble(b []byte) float64 {
	f, _ := strconv.ParseFloat(string(b), 64)
	return f
}

// fill decodes the value buf, which scan has fully validated and measured
// (nodes pool Values, n arena bytes), into *v using v's storage.
func fill(buf []byte, v *Value, nodes, n int) {
	m := v.mem
	if nodes > 0 || n > 0 {
		if m == nil {
			m = new(store)
		}
		m.reserve(nodes, n)
	}
	var f filler
	if m != nil {
		f.nodes = m.nodes[:nodes]
		f.arena = m.arena[:n]
	}
	f.value(buf, 0, v)
	v.mem = m
	if m != nil {
		// Drop references held by slots the previous value used and this
		// one did not, so they do not pin memory.
		if m.used > nodes {
			clear(m.nodes[nodes:m.used])
		}
		m.used = nodes
	}
}

// filler hands out consecutive pieces of the pool and the arena.
type filler struct {
	nodes []Value
	arena []byte
}

func (f *filler) take(n int) []Value {
	s := f.nodes[:n:n]
	f.nodes = f.nodes[n:]
	return s
}

func (f *filler) bytes(b []byte) []byte {
	n := len(b)
	s := f.arena[:n:n]
	copy(s, b)
	f.arena = f.arena[n:]
	return s
}

// value decodes the validated value starting at buf[pos] into *dst,
// overwriting every field, and returns the offset just past it.
func (f *filler) value(buf []byte, pos int, dst *Value) int {
	var attrs []Value
	for buf[pos] == '|' {
		cr := findCR(buf, pos+1)
		n, _ := parseLen(buf[pos+1 : cr])
		pos = cr + 2
		merged := f.take(len(attrs) + 2*int(n))
		copy(merged, attrs)
		for i := len(attrs); i < len(merged); i++ {
			pos = f.value(buf, pos, &merged[i])
		}
		attrs = merged
	}
	if len(attrs) == 0 {
		attrs = nil
	}
	t := buf[pos]
	cr := findCR(buf, pos+1)
	line := buf[pos+1 : cr]
	next := cr + 2
	switch t {
	case '+':
		*dst = Value{Kind: KindSimpleString, Str: f.bytes(line)}
	case '-':
		*dst = Value{Kind: KindSimpleError, Str: f.bytes(line)}
	case '(':
		*dst = Value{Kind: KindBigNumber, Str: f.bytes(line)}
	case ':':
		n, _ := parseInt(line)
		*dst = Value{Kind: KindInteger, Int: n}
	case ',':
		*dst = Value{Kind: KindDouble, Float: parseDouble(line)}
	case '#':
		*dst = Value{Kind: KindBoolean, Bool: line[0] == 't'}
	case '_':
		*dst = Value{Kind: KindNull}
	case '$', '!', '=':
		n, _ := parseLen(line)
		if n < 0 {
			*dst = Value{Kind: KindNull, NullForm: NullFormBulk}
			break
		}
		data := buf[next : next+int(n)]
		next += int(n) + 2
		switch t {
		case '$':
			*dst = Value{Kind: KindBulkString, Str: f.bytes(data)}
		case '!':
			*dst = Value{Kind: KindBulkError, Str: f.bytes(data)}
		default:
			*dst = Value{Kind: KindVerbatimString, Format: [3]byte{data[0], data[1], data[2]}, Str: f.bytes(data[4:])}
		}
	default: // '*', '%', '~', '>'
		n, _ := parseLen(line)
		if n < 0 {
			*dst = Value{Kind: KindNull, NullForm: NullFormArray}
			break
		}
		k := KindArray
		switch t {
		case '%':
			k = KindMap
			n *= 2
		case '~':
			k = KindSet
		case '>':
			k = KindPush
		}
		elems := f.take(int(n))
		for i := range elems {
			next = f.value(buf, next, &elems[i])
		}
		*dst = Value{Kind: k, Elems: elems}
	}
	dst.Attrs = attrs
	return next
}

// findCR returns the index of the first CR at or after buf[i], which the
// caller knows exists: the line was validated by scan.
func findCR(buf []byte, i int) int {
	for end := min(i+16, len(buf)); i < end; i++ {
		if buf[i] == '\r' {
			return i
		}
	}
	return i + bytes.IndexByte(buf[i:], '\r')
}
