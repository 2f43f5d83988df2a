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
// the same form the engine's events use.
func appendClock(dst []byte, at time.Duration) []byte {
	dst = append(dst, "t="...)
	if at < 0 {
		dst = append(dst, '-')
		at = -at
	}
	dst = strconv.AppendInt(dst, int64(at/time.Second), 10)
	// 1e9+frac has ten digits, the first a '1': overwrite it with the decimal point.
	dot := len(dst)
	dst = strconv.AppendInt(dst, int64(time.Second)+int64(at%time.Second), 10)
	dst[dot] = '.'
	return dst
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
	return strconv.AppendQuote(dst, v)
}

// appendDur appends " label=" and d in Go syntax.
func appendDur(dst []byte, label string, d time.Duration) []byte {
	dst = append(dst, ' ')
	dst = append(dst, label...)
	dst = append(dst, '=')
	return append(dst, d.String()...)
}
