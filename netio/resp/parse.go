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
// Storage. Parse copies the value out of buf, so buf may be reused as soon
// as Parse returns (buf must not, however, overlap the storage of *v). The
// copy lives in storage owned by *v, in a compact form whose size is about
// the value's wire size or less, whatever its shape (a RESP3 null costs one
// byte): elements are decoded from it when they are read (Value.Len,
// Value.Elem, Value.All), and Str slices point into it. All of those stay
// valid until the next Parse or Reader.Read into the same *v, which reuses
// the storage in place (growing it only when the new value does not fit)
// and so overwrites them. Copying the struct (w := *v), or an element
// returned by Elem, copies references, not storage: w is invalidated
// together with *v; call Clone to keep a value. Parse never writes through
// slices that *v held before the call other than its own storage, so
// parsing into a Value built with the constructors, or into a Clone, is
// safe. Every slice Parse hands out has its capacity clipped to its length,
// so appending to one never clobbers a neighbour. Value.Reset releases the
// storage of a Value that held a large reply.
//
// Parse checks the whole value is present and well formed before it
// writes anything, and sizes the storage only then, so a length header
// never causes an allocation ahead of the data. Re-parsing into the same
// Value allocates nothing once its storage is large enough.
func Parse(buf []byte, v *Value, lim *Limits) (n int, err error) {
	l := lim.resolve()
	var d decoder
	// A dry pass validates and measures; only then is storage sized and written.
	d.begin(nil, &l, true, false)
	n, err = d.feed(buf)
	if err != nil {
		if err == errMore {
			err = ErrIncomplete
		}
		return 0, err
	}
	m := v.mem
	if m == nil {
		m = new(store)
	}
	m.reserve(d.size)
	d.begin(m.tape, &l, false, false)
	if _, err := d.feed(buf[:n]); err != nil {
		panic("resp: a value validated by the dry pass failed to decode: " + err.Error())
	}
	m.tape = d.out
	decodeAt(m.tape, 0, v)
	v.mem = m
	return n, nil
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
	if f, ok := shortDouble(b); ok {
		return f
	}
	f, _ := strconv.ParseFloat(string(b), 64)
	return f
}

// exactPow10 holds the powers of ten up to 10^15, which a float64 represents exactly.
var exactPow10 = [...]float64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
	1e12, 1e13, 1e14, 1e15}

// shortDouble converts the common form of a score, [-]digits[.digits] with at most 15
// digits in all (zeros after the point count, leading zeros before it do not), and reports
// false for anything else, which strconv then converts. Both the digits, as an integer below
// 10^15, and the power of ten (at most 10^15: fraction digits are among the 15) are exact in a
// float64, so one division, which IEEE 754 rounds correctly, gives the correctly rounded value,
// as strconv.ParseFloat does.
func shortDouble(b []byte) (float64, bool) {
	i, neg := 0, false
	if len(b) > 0 && b[0] == '-' {
		i, neg = 1, true
	}
	var mant uint64
	digits, frac, dot, seen := 0, 0, false, false
	for ; i < len(b); i++ {
		c := b[i]
		switch {
		case c >= '0' && c <= '9':
			seen = true
			if mant == 0 && c == '0' && !dot {
				continue // a leading zero of the integer part counts for nothing
			}
			mant = mant*10 + uint64(c-'0')
			digits++
			if dot {
				frac++
			}
		case c == '.' && !dot:
			dot = true
		default:
			return 0, false
		}
	}
	if !seen || digits > 15 || (dot && frac == 0) {
		return 0, false
	}
	f := float64(mant) / exactPow10[frac]
	if neg {
		f = -f
	}
	return f, true
}

// findCR returns the index of the first CR at or after buf[i], which the
// caller knows exists: the line was validated already.
func findCR(buf []byte, i int) int {
	for end := min(i+16, len(buf)); i < end; i++ {
		if buf[i] == '\r' {
			return i
		}
	}
	return i + bytes.IndexByte(buf[i:], '\r')
}
