package resp

import (
	"errors"
	"io"
	"testing"
)

// fuzzLimits are small enough for the fuzzer to hit every limit.
var fuzzLimits = &Limits{MaxBulkLen: 64, MaxLineLen: 32, MaxElements: 16, MaxValues: 48, MaxDepth: 6, MaxReplyLen: 512}

// checkParseResult asserts the Parse contract on one result.
func checkParseResult(t *testing.T, data []byte, n int, err error) {
	t.Helper()
	if n < 0 || n > len(data) {
		t.Fatalf("consumed %d of %d bytes", n, len(data))
	}
	if err == nil {
		if n == 0 {
			t.Fatal("success without consuming anything")
		}
		return
	}
	if n != 0 {
		t.Fatalf("consumed %d bytes with error %v", n, err)
	}
	if err == ErrIncomplete {
		return
	}
	var pe *ProtocolError
	if !errors.As(err, &pe) {
		t.Fatalf("error %v (%T) is neither ErrIncomplete nor *ProtocolError", err, err)
	}
	if pe.Offset < 0 || pe.Offset > int64(len(data)) {
		t.Fatalf("error offset %d outside the %d-byte input", pe.Offset, len(data))
	}
}

func FuzzParse(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		var v Value
		n, err := Parse(data, &v, nil)
		checkParseResult(t, data, n, err)

		// Parsing with tight limits never succeeds where the defaults fail,
		// and agrees with them when it succeeds.
		var small Value
		sn, serr := Parse(data, &small, fuzzLimits)
		checkParseResult(t, data, sn, serr)
		if serr == nil && (err != nil || sn != n || !strictEqual(small, v)) {
			t.Fatalf("tight limits: %d %v %v; defaults: %d %v %v", sn, serr, small, n, err, v)
		}
		if serr == ErrIncomplete && err != nil && err != ErrIncomplete {
			t.Fatalf("tight limits incomplete where defaults fail: %v", err)
		}
		if err != nil {
			return
		}
		// Proper prefixes of a value are incomplete.
		for _, cut := range []int{n - 1, n / 2} {
			if pn, perr := Parse(data[:cut:cut], &small, nil); perr != ErrIncomplete || pn != 0 {
				t.Fatalf("prefix of %d bytes: %d, %v", cut, pn, perr)
			}
		}
		// Parsing into a Value with storage from an earlier, different
		// value gives the same result.
		reused := v.Clone()
		if _, err := Parse([]byte("*3\r\n$5\r\nhello\r\n%1\r\n+k\r\n:1\r\n|1\r\n+a\r\n+b\r\n_\r\n"), &reused, nil); err != nil {
			t.Fatal(err)
		}
		if rn, rerr := Parse(data, &reused, nil); rerr != nil || rn != n || !strictEqual(reused, v) {
			t.Fatalf("reused destination: %d, %v, %v; want %v", rn, rerr, reused, v)
		}
		// RESP3 re-encoding parses back to an Equal value and is stable.
		enc := AppendValue(nil, v, 3)
		var back Value
		if bn, berr := Parse(enc, &back, nil); berr != nil || bn != len(enc) || !Equal(back, v) {
			t.Fatalf("RESP3 round trip of %q via %q: %d, %v, %v", data[:n], enc, bn, berr, back)
		}
		if again := AppendValue(nil, back, 3); string(again) != string(enc) {
			t.Fatalf("unstable encoding: %q then %q", enc, again)
		}
		// RESP2 output parses, uses only RESP2 kinds, and matches the model.
		enc2 := AppendValue(nil, v, 2)
		if bn, berr := Parse(enc2, &back, nil); berr != nil || bn != len(enc2) {
			t.Fatalf("RESP2 encoding %q: %d, %v", enc2, bn, berr)
		}
		if !resp2Only(back) || !strictEqual(back, downgrade(v)) {
			t.Fatalf("RESP2 encoding of %v parsed as %v", v, back)
		}
		if c := v.Clone(); !strictEqual(c, v) {
			t.Fatalf("clone %v differs from %v", c, v)
		}
		checkAppendElems(t, &v)
		_ = v.String()
	})
}

// checkAppendElems fails t unless AppendElems gives every aggregate of v's tree the elements
// Elem gives it, in order.
func checkAppendElems(t *testing.T, v *Value) {
	t.Helper()
	if !v.Kind.IsAggregate() {
		return
	}
	elems := v.AppendElems(nil)
	if len(elems) != v.Len() {
		t.Fatalf("AppendElems gave %d elements of %v, Len %d", len(elems), v, v.Len())
	}
	for i := range elems {
		if e := v.Elem(i); !strictEqual(elems[i], e) {
			t.Fatalf("element %d of %v: AppendElems %v, Elem %v", i, v, elems[i], e)
		}
		checkAppendElems(t, &elems[i])
	}
}

func FuzzParseCommand(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		args := [][]byte{[]byte("previous"), []byte("contents")}
		n, err := ParseCommand(data, &args, nil)
		checkParseResult(t, data, n, err)
		var small [][]byte
		sn, serr := ParseCommand(data, &small, fuzzLimits)
		checkParseResult(t, data, sn, serr)
		if serr == nil && (err != nil || sn != n || !equalArgs(small, args)) {
			t.Fatalf("tight limits: %d %v %q; defaults: %d %v %q", sn, serr, small, n, err, args)
		}
		if err != nil {
			if len(args) != 2 || string(args[0]) != "previous" {
				t.Fatalf("args changed on error: %q", args)
			}
			return
		}
		if n > 1 {
			if pn, perr := ParseCommand(data[:n-1:n-1], &small, nil); perr != ErrIncomplete || pn != 0 {
				t.Fatalf("prefix: %d, %v", pn, perr)
			}
		}
		// Re-encoding the arguments as a multibulk request parses back to
		// the same arguments (an empty request re-encodes as "*0").
		enc := AppendCommandBytes(nil, args...)
		var back [][]byte
		if bn, berr := ParseCommand(enc, &back, nil); berr != nil || bn != len(enc) || !equalArgs(back, args) {
			t.Fatalf("round trip via %q: %d, %v, %q", enc, bn, berr, back)
		}
		// The arguments are also a valid RESP array of bulk strings.
		var v Value
		if _, err := Parse(enc, &v, nil); err != nil || v.Kind != KindArray || v.Len() != len(args) {
			t.Fatalf("request %q does not parse as a value: %v %v", enc, err, v)
		}
	})
}

func equalArgs(a, b [][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if string(a[i]) != string(b[i]) {
			return false
		}
	}
	return true
}

// FuzzReader reads data through a Reader fed in chunks whose sizes come
// from the chunks input, and checks the values and the final error match
// what repeated Parse calls on the whole input give.
func FuzzReader(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte, chunks []byte) {
		sizes := make([]int, len(chunks))
		for i, c := range chunks {
			sizes[i] = int(c%64) + 1
		}
		for _, lim := range []*Limits{nil, fuzzLimits} {
			r := NewReader(&chunkReader{data: data, sizes: sizes}, lim)
			var got, want Value
			off := 0
			for values := 0; ; values++ {
				if values > len(data) {
					t.Fatal("more values than bytes")
				}
				rerr := r.Read(&got)
				n, perr := Parse(data[off:], &want, lim)
				switch {
				case perr == nil:
					if rerr != nil || !strictEqual(got, want) {
						t.Fatalf("value at %d: Reader %v %v, Parse %v", off, rerr, got, want)
					}
					off += n
					if r.Buffered() > len(data)-off {
						t.Fatalf("Buffered %d exceeds the %d unread bytes", r.Buffered(), len(data)-off)
					}
					continue
				case perr == ErrIncomplete && off == len(data):
					if rerr != io.EOF {
						t.Fatalf("at the end: %v, want io.EOF", rerr)
					}
				case perr == ErrIncomplete:
					if rerr != io.ErrUnexpectedEOF {
						t.Fatalf("truncated value at %d: %v, want io.ErrUnexpectedEOF", off, rerr)
					}
				default:
					var rpe, ppe *ProtocolError
					if !errors.As(rerr, &rpe) || !errors.As(perr, &ppe) {
						t.Fatalf("at %d: Reader %v, Parse %v", off, rerr, perr)
					}
					if rpe.Offset != ppe.Offset+int64(off) || rpe.Reason != ppe.Reason || rpe.Limit != ppe.Limit {
						t.Fatalf("at %d: Reader %v, Parse %v", off, rerr, perr)
					}
					if again := r.Read(&got); again != rerr {
						t.Fatalf("protocol error not sticky: %v", again)
					}
				}
				break
			}
		}
	})
}
