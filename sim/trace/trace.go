// Package trace builds a simulated run's trace: one line per observation (an engine step, a
// connection's progress, a fault, a workload operation), each starting with its virtual time. The
// lines are hashed as they are produced (SHA-256 of the lines joined by newlines) and kept only
// when asked, so that a normal run allocates nothing per line. The same scenario and seed give
// the same lines, and the hash proves it.
package trace

import (
	"crypto/sha256"
	"encoding/hex"
	"hash"
	"io"
	"strconv"
	"time"
)

// Clock gives the virtual time each line starts with.
type Clock interface {
	Now() time.Duration
}

// Tracer builds the trace of one run. Lines are built in one reused buffer: Begin (or Raw) starts
// one, the Line methods append its fields, End records it.
type Tracer struct {
	clock Clock
	keep  bool
	h     hash.Hash
	lines []string
	n     int
	buf   []byte
	// pending holds trace bytes not yet hashed.
	pending []byte
	// out receives every line as it ends (Stream), or is nil; werr is its first error.
	out    io.Writer
	outBuf []byte
	werr   error
}

// New returns a tracer whose lines start with clock's time; keep keeps the lines (Lines) besides
// hashing them.
func New(clock Clock, keep bool) *Tracer {
	return &Tracer{clock: clock, keep: keep, h: sha256.New(), buf: make([]byte, 0, 256), pending: make([]byte, 0, hashBatch+512)}
}

// Begin starts a line with the current virtual time and what it records ("conn open", "op
// done").
func (t *Tracer) Begin(what string) Line {
	b := appendClock(t.buf[:0], t.clock.Now())
	b = append(b, ' ')
	return append(b, what...)
}

// Raw starts an empty line, for text that carries its own time (an engine step).
func (t *Tracer) Raw() Line { return t.buf[:0] }

// End records the line l: it is hashed (lines are batched before hashing) and kept if asked.
func (t *Tracer) End(l Line) {
	if t.n > 0 {
		t.pending = append(t.pending, '\n')
	}
	t.pending = append(t.pending, l...)
	if len(t.pending) >= hashBatch {
		t.h.Write(t.pending)
		t.pending = t.pending[:0]
	}
	t.n++
	if t.out != nil {
		t.outBuf = append(append(t.outBuf, l...), '\n')
		if len(t.outBuf) >= hashBatch {
			t.flushOut()
		}
	}
	if t.keep {
		t.lines = append(t.lines, string(l))
	}
	t.buf = l[:0]
}

// Plant records that a deliberate bug acted on command id.
func (t *Tracer) Plant(name string, id uint64) { t.End(t.Begin("plant").Word(name).Uint("id", id)) }

// Stream makes the tracer write every line that ends from now on to w, one per line, through a
// buffer (Flush empties it): a run's whole trace goes to a file without being kept in memory.
func (t *Tracer) Stream(w io.Writer) { t.out = w }

// Flush writes the buffered lines to the writer of Stream and returns the first write error.
func (t *Tracer) Flush() error {
	t.flushOut()
	return t.werr
}

func (t *Tracer) flushOut() {
	if t.out != nil && len(t.outBuf) > 0 && t.werr == nil {
		_, t.werr = t.out.Write(t.outBuf)
	}
	t.outBuf = t.outBuf[:0]
}

// Lines returns the lines kept so far (nil unless kept).
func (t *Tracer) Lines() []string { return t.lines }

// Sum returns the hex SHA-256 of the trace so far.
func (t *Tracer) Sum() string {
	t.h.Write(t.pending)
	t.pending = t.pending[:0]
	return hex.EncodeToString(t.h.Sum(nil))
}

// Line is a trace line being built; each method appends to it and returns it.
type Line []byte

// Word appends a space and w.
func (l Line) Word(w string) Line {
	l = append(l, ' ')
	return append(l, w...)
}

// Uint appends " label=v".
func (l Line) Uint(label string, v uint64) Line { return strconv.AppendUint(l.label(label), v, 10) }

// Int appends " label=v".
func (l Line) Int(label string, v int) Line { return strconv.AppendInt(l.label(label), int64(v), 10) }

// Str appends " label=v", for a value without spaces.
func (l Line) Str(label, v string) Line { return append(l.label(label), v...) }

// Quoted appends " label=" and v quoted as strconv.Quote does.
func (l Line) Quoted(label, v string) Line { return appendQuote(l.label(label), v) }

func (l Line) label(label string) Line {
	l = append(l, ' ')
	l = append(l, label...)
	return append(l, '=')
}

// hashBatch is how many trace bytes are gathered before they are hashed.
const hashBatch = 16 << 10

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
