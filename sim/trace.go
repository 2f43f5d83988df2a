package sim

import (
	"crypto/sha256"
	"encoding/hex"
	"hash"
	"strconv"
	"time"
)

// tracer builds the run's trace: one line per observation, hashed as it is produced (SHA-256 of
// the lines joined by newlines). Lines are built in one reused buffer; they are kept as strings
// only when the run asked for the trace, so that normal runs allocate nothing per line.
type tracer struct {
	k     *kernel
	keep  bool
	h     hash.Hash
	lines []string
	n     int
	buf   []byte
	// pending holds trace bytes not yet hashed.
	pending []byte
}

func newTracer(k *kernel, keep bool) *tracer {
	return &tracer{k: k, keep: keep, h: sha256.New(), buf: make([]byte, 0, 256), pending: make([]byte, 0, hashBatch+512)}
}

// begin starts a line with the current virtual time and returns the buffer to append to.
func (t *tracer) begin() []byte {
	b := appendClock(t.buf[:0], t.k.now)
	return append(b, ' ')
}

// end hashes (and keeps, if asked) the line built in b. Lines are batched before hashing.
func (t *tracer) end(b []byte) {
	if t.n > 0 {
		t.pending = append(t.pending, '\n')
	}
	t.pending = append(t.pending, b...)
	if len(t.pending) >= hashBatch {
		t.h.Write(t.pending)
		t.pending = t.pending[:0]
	}
	t.n++
	if t.keep {
		t.lines = append(t.lines, string(b))
	}
	t.buf = b[:0]
}

// hashBatch is how many trace bytes are gathered before they are hashed.
const hashBatch = 16 << 10

// sum returns the hex SHA-256 of the trace so far.
func (t *tracer) sum() string {
	t.h.Write(t.pending)
	t.pending = t.pending[:0]
	return hex.EncodeToString(t.h.Sum(nil))
}

// appendClock appends a fixed-format virtual time: "t=" seconds "." nine digits of nanoseconds,
// the same form the engine's events use. It runs for every trace line, so the nine digits are
// written two at a time from a table instead of through strconv.
func appendClock(dst []byte, at time.Duration) []byte {
	dst = append(dst, "t="...)
	if at < 0 {
		dst = append(dst, '-')
		at = -at
	}
	dst = strconv.AppendInt(dst, int64(at/time.Second), 10)
	frac := uint32(at % time.Second)
	rest := frac % 100_000_000
	var digits [10]byte
	digits[0] = '.'
	digits[1] = byte('0' + frac/100_000_000)
	putFourDigits(digits[2:6], rest/10_000)
	putFourDigits(digits[6:10], rest%10_000)
	return append(dst, digits[:]...)
}

// digitPairs holds "00" to "99".
const digitPairs = "00010203040506070809101112131415161718192021222324252627282930313233343536373839" +
	"40414243444546474849505152535455565758596061626364656667686970717273747576777879" +
	"8081828384858687888990919293949596979899"

// putFourDigits writes v (below 10,000) as four decimal digits into b[:4].
func putFourDigits(b []byte, v uint32) {
	hi, lo := v/100, v%100
	b[0], b[1] = digitPairs[2*hi], digitPairs[2*hi+1]
	b[2], b[3] = digitPairs[2*lo], digitPairs[2*lo+1]
}

// appendField appends " label=value" for an unsigned value.
func appendField(dst []byte, label string, v uint64) []byte {
	dst = append(dst, ' ')
	dst = append(dst, label...)
	dst = append(dst, '=')
	return strconv.AppendUint(dst, v, 10)
}

// appendIntField appends " label=value" for a signed value.
func appendIntField(dst []byte, label string, v int64) []byte {
	dst = append(dst, ' ')
	dst = append(dst, label...)
	dst = append(dst, '=')
	return strconv.AppendInt(dst, v, 10)
}

// appendStrField appends " label=value" for a value without spaces.
func appendStrField(dst []byte, label, v string) []byte {
	dst = append(dst, ' ')
	dst = append(dst, label...)
	dst = append(dst, '=')
	return append(dst, v...)
}

// appendQuoted appends " label=" and the quoted text.
func appendQuoted(dst []byte, label, v string) []byte {
	dst = append(dst, ' ')
	dst = append(dst, label...)
	dst = append(dst, '=')
	return appendQuote(dst, v)
}

// appendQuote appends v quoted exactly as strconv.AppendQuote does. Error texts are nearly always
// printable ASCII without quotes or backslashes, which strconv.Quote leaves as they are: those are
// copied in one go instead of rune by rune.
func appendQuote(dst []byte, v string) []byte {
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < ' ' || c > '~' || c == '"' || c == '\\' {
			return strconv.AppendQuote(dst, v)
		}
	}
	dst = append(dst, '"')
	dst = append(dst, v...)
	return append(dst, '"')
}
