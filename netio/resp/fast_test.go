package resp

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// fastLimits are tight enough for short inputs to reach MaxLineLen and MaxBulkLen from the fast
// path's kinds, and replyLimits and headerLimits to reach MaxReplyLen with lines and bulk
// headers.
var (
	fastLimits   = &Limits{MaxLineLen: 6, MaxBulkLen: 10, MaxReplyLen: 24}
	replyLimits  = &Limits{MaxLineLen: 32, MaxReplyLen: 7}
	headerLimits = &Limits{MaxReplyLen: 4}
)

// fastPieces are the units random streams are built from: values the fast path takes, values it
// leaves to the decoder, malformed and over-limit ones, and fragments.
var fastPieces = []string{
	"+OK\r\n", "+\r\n", "-ERR bad\r\n", "-\r\n", ":0\r\n", ":-7\r\n", ":+12\r\n",
	":9223372036854775807\r\n", ":-9223372036854775808\r\n", ":9223372036854775808\r\n",
	"_\r\n", "$-1\r\n", "$0\r\n\r\n", "$3\r\nabc\r\n", "$4\r\na\r\nb\r\n", "$10\r\n0123456789\r\n",
	"$11\r\n0123456789a\r\n", "+0123456\r\n", ":1234567\r\n",
	// Left to the decoder.
	"*2\r\n:1\r\n+x\r\n", "%1\r\n+k\r\n:2\r\n", "|1\r\n+a\r\n:1\r\n+v\r\n", ",1.5\r\n", "#t\r\n",
	"(123\r\n", "!3\r\nerr\r\n", "=7\r\ntxt:abc\r\n", "*-1\r\n", ">1\r\n+p\r\n", "*0\r\n",
	// Malformed.
	":\r\n", ":x\r\n", ":-\r\n", ":1\n", ":1\rx", "+a\nb\r\n", "_x\r\n", "$-2\r\n", "$x\r\n",
	"$\r\n", "$3\r\nabcd\r\n", "$3\r\nab\r\n", "$3\r\nabc\rx", "$01\r\nx\r\n", "?\r\n", "\r\n",
	"$99999999999999999999\r\n", ":99999999999999999999\r\n",
	// Fragments.
	"$", "$1", "+", "\r", "\n", ":1\r", "abc",
}

// fastSnapshot is everything a read produced, for comparing the fast path with the decoder.
type fastSnapshot struct {
	ok       bool
	err      string
	offset   int64
	limit    string
	kind     Kind
	nullForm NullForm
	boolean  bool
	format   [3]byte
	integer  int64
	float    uint64
	str      []byte
	strNil   bool
	strCap   int
	elems    bool
	attrs    bool
	ent      []byte
	tape     []byte
	buffered int
}

func snapshot(v *Value, ok bool, err error, r *Reader) fastSnapshot {
	s := fastSnapshot{ok: ok, buffered: r.Buffered()}
	if err != nil {
		s.err = err.Error()
		var pe *ProtocolError
		if errors.As(err, &pe) {
			s.offset, s.limit = pe.Offset, pe.Limit
		}
		return s
	}
	if !ok {
		return s
	}
	s.kind, s.nullForm, s.boolean, s.format = v.Kind, v.NullForm, v.Bool, v.Format
	s.integer, s.float = v.Int, math.Float64bits(v.Float)
	s.str, s.strNil, s.strCap = bytes.Clone(v.Str), v.Str == nil, cap(v.Str)
	s.elems, s.attrs = v.elems != nil, v.attrs != nil
	s.ent = bytes.Clone(v.ent)
	if v.mem != nil {
		s.tape = bytes.Clone(v.mem.tape)
	}
	return s
}

// readAll reads data through a Reader, the way a connection reads replies: a blocking Read, then
// ReadBuffered until it reports false, until an error. The underlying reader returns data in
// pieces of the given sizes.
func readAll(data []byte, sizes []int, lim *Limits, noFast bool) []fastSnapshot {
	r := NewReader(&chunkReader{data: data, sizes: sizes}, lim)
	r.noFast = noFast
	var out []fastSnapshot
	var v Value
	for range len(data) + 2 {
		err := r.Read(&v)
		out = append(out, snapshot(&v, err == nil, err, r))
		if err != nil {
			break
		}
		for {
			ok, err := r.ReadBuffered(&v)
			out = append(out, snapshot(&v, ok, err, r))
			if !ok {
				break
			}
		}
	}
	return out
}

// checkFastMatches fails t when the fast path and the decoder disagree on data cut at any point,
// with any of the limits.
func checkFastMatches(t interface {
	Helper()
	Fatalf(string, ...any)
}, data []byte) {
	t.Helper()
	for _, lim := range []*Limits{nil, fuzzLimits, fastLimits, replyLimits, headerLimits} {
		cuts := [][]int{{len(data) + 1}, {1}, {2, 5}}
		for k := 1; k < len(data); k++ {
			cuts = append(cuts, []int{k, len(data)})
		}
		for _, sizes := range cuts {
			want := readAll(data, sizes, lim, true)
			got := readAll(data, sizes, lim, false)
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("%q cut %v, limits %+v:\nfast path %+v\ndecoder   %+v", data, sizes, lim, got, want)
			}
		}
	}
}

// TestFastPathMatchesDecoder is the differential test of the fast path: streams of values the
// fast path takes, values it declines, malformed and over-limit input and fragments, read with
// and without the fast path, cut at every point and under five sets of limits, give the same
// values, the same storage tapes, the same buffered counts and the same errors (reason, offset,
// limit) in the same order.
func TestFastPathMatchesDecoder(t *testing.T) {
	for _, p := range fastPieces {
		checkFastMatches(t, []byte(p))
		checkFastMatches(t, []byte("+OK\r\n"+p+":1\r\n"))
	}
	rapid.Check(t, func(rt *rapid.T) {
		var data []byte
		for _, i := range rapid.SliceOfN(rapid.IntRange(0, len(fastPieces)-1), 1, 6).Draw(rt, "pieces") {
			data = append(data, fastPieces[i]...)
		}
		checkFastMatches(rt, data)
	})
	rapid.Check(t, func(rt *rapid.T) {
		// Scalars of the fast kinds with random content, and a random byte changed.
		var data []byte
		for range rapid.IntRange(1, 5).Draw(rt, "n") {
			payload := rapid.SliceOfN(rapid.Byte(), 0, 14).Draw(rt, "payload")
			switch rapid.IntRange(0, 4).Draw(rt, "kind") {
			case 0:
				data = append(data, '+')
				data = append(data, noCRLF(payload)...)
				data = append(data, "\r\n"...)
			case 1:
				data = append(data, '-')
				data = append(data, noCRLF(payload)...)
				data = append(data, "\r\n"...)
			case 2:
				data = strconv.AppendInt(append(data, ':'), rapid.Int64().Draw(rt, "int"), 10)
				data = append(data, "\r\n"...)
			case 3:
				data = append(data, "_\r\n"...)
			default:
				data = strconv.AppendInt(append(data, '$'), int64(len(payload)), 10)
				data = append(data, "\r\n"...)
				data = append(data, payload...)
				data = append(data, "\r\n"...)
			}
		}
		if rapid.Bool().Draw(rt, "corrupt") {
			i := rapid.IntRange(0, len(data)-1).Draw(rt, "at")
			data[i] = rapid.SampledFrom([]byte("\r\n$:+-_*0123456789x")).Draw(rt, "byte")
		}
		checkFastMatches(rt, data)
	})
}

// TestFastPathEngages checks that the differential test compares two different paths: a stream
// of the fast path's kinds, buffered whole, is read without ever starting the decoder, and with
// noFast through it.
func TestFastPathEngages(t *testing.T) {
	data := "+OK\r\n-ERR x\r\n:42\r\n_\r\n$-1\r\n$3\r\nabc\r\n"
	for _, noFast := range []bool{false, true} {
		r := NewReader(strings.NewReader(data), nil)
		r.noFast = noFast
		var v Value
		for err := r.Read(&v); err == nil; err = r.Read(&v) {
			if ok, err := r.ReadBuffered(&v); ok || err != nil {
				continue
			}
		}
		if started := r.dec.depth > 0; started != noFast {
			t.Fatalf("noFast %v: decoder started %v", noFast, started)
		}
	}
}

// TestFastPathKeepsStorage checks the storage rules of Read on the fast path: the destination's
// previous storage serves the next value, and a reused destination allocates nothing.
func TestFastPathKeepsStorage(t *testing.T) {
	stream := bytes.Repeat([]byte("$5\r\nhello\r\n:7\r\n"), 64)
	r := NewReader(&chunkReader{data: stream, sizes: []int{len(stream)}}, nil)
	var a, b Value
	if err := r.Read(&a); err != nil {
		t.Fatal(err)
	}
	if err := r.Read(&b); err != nil {
		t.Fatal(err)
	}
	allocs := testing.AllocsPerRun(20, func() {
		for _, v := range []*Value{&a, &b} {
			ok, err := r.ReadBuffered(v)
			if !ok || err != nil {
				t.Fatalf("ReadBuffered: %v %v", ok, err)
			}
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per pair of values, want 0", allocs)
	}
	if string(a.Str) != "hello" || b.Int != 7 {
		t.Fatalf("values %v %v", a, b)
	}
}

// TestFastPathSizesLargeStorageExactly checks that a bulk string the fast path stores in storage
// too small for it gets storage of its own size, not twice the old one: the bound of the Reader's
// memory. (The third value is decoded into the first one's storage, of 303 bytes.)
func TestFastPathSizesLargeStorageExactly(t *testing.T) {
	var stream []byte
	for _, n := range []int{300, 1000, 500} {
		stream = AppendValue(stream, BulkString(strings.Repeat("x", n)), 2)
	}
	r := NewReader(&chunkReader{data: stream, sizes: []int{len(stream)}}, nil)
	var v Value
	for _, n := range []int{300, 1000, 500} {
		if err := r.Read(&v); err != nil {
			t.Fatal(err)
		}
		if want := 1 + uvarintLen(uint64(n)) + n; v.StorageSize() != want || r.dec.depth != 0 {
			t.Fatalf("%d-byte bulk string: storage of %d bytes, want %d (decoder used: %v)", n, v.StorageSize(), want, r.dec.depth != 0)
		}
	}
}

// FuzzFastPath is the differential test on arbitrary input.
func FuzzFastPath(f *testing.F) {
	for _, p := range fastPieces {
		f.Add([]byte(p))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 96 {
			return // every cut point is tried: keep the input short
		}
		checkFastMatches(t, data)
	})
}
