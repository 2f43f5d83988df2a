package resp

import (
	"strings"
	"testing"
)

// The inputs of the zero-allocation claims, shared with the benchmarks.
var (
	key16    = strings.Repeat("k", 16)
	value64  = strings.Repeat("v", 64)
	inBulk64 = []byte("$64\r\n" + value64 + "\r\n")
	inOK     = []byte("+OK\r\n")
	inInt    = []byte(":12345\r\n")
	inArr10  = func() []byte {
		b := AppendArrayHeader(nil, 10)
		for i := range 10 {
			b = AppendBulkString(b, strings.Repeat(string(rune('a'+i)), 10))
		}
		return b
	}()
	inNested = []byte("|1\r\n+ttl\r\n:5\r\n%2\r\n+a\r\n*2\r\n,1.5\r\n#t\r\n+b\r\n~1\r\n(123\r\n")
)

func assertNoAllocs(t *testing.T, name string, f func()) {
	t.Helper()
	f() // warm up: the first call may size storage
	if n := testing.AllocsPerRun(200, f); n != 0 {
		t.Errorf("%s: %.1f allocations per run, want 0", name, n)
	}
}

func TestParseZeroAlloc(t *testing.T) {
	for name, in := range map[string][]byte{
		"bulk64": inBulk64, "ok": inOK, "int": inInt, "array10": inArr10, "nested": inNested,
		"null": []byte("_\r\n"), "verbatim": []byte("=7\r\ntxt:abc\r\n"), "bulk error": []byte("!3\r\nERR\r\n"),
	} {
		var v Value
		assertNoAllocs(t, "Parse "+name, func() {
			if _, err := Parse(in, &v, nil); err != nil {
				t.Fatal(err)
			}
		})
	}
	// Alternating between replies of different shapes into one Value also
	// settles at zero once the storage has grown to the largest.
	var v Value
	assertNoAllocs(t, "Parse alternating", func() {
		for _, in := range [][]byte{inArr10, inOK, inNested, inBulk64} {
			if _, err := Parse(in, &v, nil); err != nil {
				t.Fatal(err)
			}
		}
	})
}

func TestParseCommandZeroAlloc(t *testing.T) {
	cmd := AppendCommand(nil, "SET", key16, value64)
	var args [][]byte
	assertNoAllocs(t, "ParseCommand multibulk", func() {
		if _, err := ParseCommand(cmd, &args, nil); err != nil {
			t.Fatal(err)
		}
	})
	inline := []byte("SET key value\r\n")
	assertNoAllocs(t, "ParseCommand inline", func() {
		if _, err := ParseCommand(inline, &args, nil); err != nil {
			t.Fatal(err)
		}
	})
}

func TestEncodeZeroAlloc(t *testing.T) {
	dst := make([]byte, 0, 4096)
	assertNoAllocs(t, "AppendCommand", func() { dst = AppendCommand(dst[:0], "SET", key16, value64) })
	kb, vb := []byte(key16), []byte(value64)
	assertNoAllocs(t, "AppendCommandBytes", func() { dst = AppendCommandBytes(dst[:0], []byte("SET"), kb, vb) })
	assertNoAllocs(t, "AppendBulkInt", func() { dst = AppendBulkInt(dst[:0], -1234567) })
	var nested Value
	if _, err := Parse(inNested, &nested, nil); err != nil {
		t.Fatal(err)
	}
	for _, proto := range []int{2, 3} {
		assertNoAllocs(t, "AppendValue", func() { dst = AppendValue(dst[:0], nested, proto) })
	}
}

// repeatReader yields the same bytes forever.
type repeatReader struct {
	data []byte
	off  int
}

func (r *repeatReader) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		c := copy(p[n:], r.data[r.off:])
		n += c
		r.off = (r.off + c) % len(r.data)
	}
	return n, nil
}

func TestReaderZeroAlloc(t *testing.T) {
	// Replies of awkward sizes so values keep straddling buffer refills.
	var stream []byte
	stream = append(stream, inBulk64...)
	stream = append(stream, inOK...)
	stream = append(stream, inArr10...)
	stream = append(stream, inInt...)
	stream = append(stream, inNested...)
	r := NewReader(&repeatReader{data: stream}, nil)
	var v Value
	for range 1000 {
		if err := r.Read(&v); err != nil {
			t.Fatal(err)
		}
	}
	assertNoAllocs(t, "Reader.Read", func() {
		if err := r.Read(&v); err != nil {
			t.Fatal(err)
		}
	})
}
