package resp

import (
	"bytes"
	"io"
	"math"
	"strconv"
	"testing"

	"pgregory.net/rapid"
)

var scalarKinds = []Kind{
	KindSimpleString, KindSimpleError, KindInteger, KindBulkString, KindNull, KindBoolean,
	KindDouble, KindBigNumber, KindBulkError, KindVerbatimString,
}

var allKinds = append(append([]Kind(nil), scalarKinds...), KindArray, KindMap, KindSet, KindPush)

// noCRLF maps CR and LF, which simple strings cannot carry, to other bytes.
func noCRLF(b []byte) []byte {
	for i, c := range b {
		if c == '\r' || c == '\n' {
			b[i] = c + 1
		}
	}
	return b
}

// drawValue draws an arbitrary Value nested at most depth levels deep,
// with attributes attached at any level.
func drawValue(t *rapid.T, depth int) Value {
	kinds := scalarKinds
	if depth > 0 {
		kinds = allKinds
	}
	var v Value
	switch k := rapid.SampledFrom(kinds).Draw(t, "kind"); k {
	case KindSimpleString, KindSimpleError:
		v = Value{Kind: k, Str: noCRLF(rapid.SliceOfN(rapid.Byte(), 0, 24).Draw(t, "line"))}
	case KindBulkString, KindBulkError:
		v = Value{Kind: k, Str: rapid.SliceOfN(rapid.Byte(), 0, 48).Draw(t, "bulk")}
	case KindInteger:
		v = Int(rapid.OneOf(rapid.Int64(), rapid.SampledFrom([]int64{0, -1, math.MaxInt64, math.MinInt64})).Draw(t, "int"))
	case KindNull:
		v = Value{Kind: KindNull, NullForm: rapid.SampledFrom([]NullForm{NullFormRESP3, NullFormBulk, NullFormArray}).Draw(t, "form")}
	case KindBoolean:
		v = Bool(rapid.Bool().Draw(t, "bool"))
	case KindDouble:
		v = Double(rapid.OneOf(
			rapid.Float64(),
			rapid.Map(rapid.Int64(), func(n int64) float64 { return float64(n) }),
			rapid.SampledFrom([]float64{math.Inf(1), math.Inf(-1), math.NaN(), math.Copysign(0, -1), math.SmallestNonzeroFloat64, math.MaxFloat64}),
		).Draw(t, "double"))
	case KindBigNumber:
		digits := rapid.SliceOfN(rapid.ByteRange('0', '9'), 1, 60).Draw(t, "digits")
		if rapid.Bool().Draw(t, "negative") {
			digits = append([]byte{'-'}, digits...)
		}
		v = Value{Kind: KindBigNumber, Str: digits}
	case KindVerbatimString:
		f := rapid.SliceOfN(rapid.Byte(), 3, 3).Draw(t, "format")
		v = Value{Kind: KindVerbatimString, Format: [3]byte{f[0], f[1], f[2]}, Str: rapid.SliceOfN(rapid.Byte(), 0, 32).Draw(t, "text")}
		if v.Format == [3]byte{} {
			v.Format = [3]byte{'t', 'x', 't'} // what AppendValue writes for a zero Format
		}
	default:
		n := rapid.IntRange(0, 4).Draw(t, "len")
		if k == KindMap {
			n *= 2
		}
		v = Value{Kind: k, elems: make([]Value, n)}
		for i := range v.elems {
			v.elems[i] = drawValue(t, depth-1)
		}
	}
	if depth > 0 && rapid.IntRange(0, 9).Draw(t, "hasAttrs") == 0 {
		v.attrs = make([]Value, 2*rapid.IntRange(1, 2).Draw(t, "attrs"))
		for i := range v.attrs {
			v.attrs[i] = drawValue(t, depth-1)
		}
	}
	return v
}

var genValue = rapid.Custom(func(t *rapid.T) Value { return drawValue(t, 4) })

// downgrade is the reference model of what a RESP2 client receives for v,
// written independently of the encoder.
func downgrade(v Value) Value {
	switch v.Kind {
	case KindSimpleString, KindSimpleError, KindInteger, KindBulkString:
		return Value{Kind: v.Kind, Str: v.Str, Int: v.Int}
	case KindNull:
		if v.NullForm == NullFormArray {
			return NullArray()
		}
		return NullBulk()
	case KindBoolean:
		if v.Bool {
			return Int(1)
		}
		return Int(0)
	case KindDouble:
		var s string
		switch {
		case math.IsNaN(v.Float):
			s = "nan"
		case math.IsInf(v.Float, 0):
			s = map[bool]string{true: "inf", false: "-inf"}[v.Float > 0]
		default:
			s = strconv.FormatFloat(v.Float, 'g', -1, 64)
		}
		return BulkString(s)
	case KindBigNumber, KindVerbatimString:
		return Bulk(v.Str)
	case KindBulkError:
		msg := bytes.ReplaceAll(bytes.ReplaceAll(v.Str, []byte("\r"), []byte(" ")), []byte("\n"), []byte(" "))
		return Value{Kind: KindSimpleError, Str: msg}
	default: // aggregates
		out := Value{Kind: KindArray, elems: make([]Value, v.Len())}
		for i, e := range v.All() {
			out.elems[i] = downgrade(e)
		}
		return out
	}
}

// resp2Only reports whether v uses only kinds a RESP2 client can receive
// and carries no attributes.
func resp2Only(v Value) bool {
	switch v.Kind {
	case KindSimpleString, KindSimpleError, KindInteger, KindBulkString, KindArray:
	case KindNull:
		if v.NullForm == NullFormRESP3 {
			return false
		}
	default:
		return false
	}
	if v.Attrs().Len() > 0 {
		return false
	}
	for _, e := range v.All() {
		if !resp2Only(e) {
			return false
		}
	}
	return true
}

func TestRapidRoundTripRESP3(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		v := genValue.Draw(t, "v")
		enc := AppendValue(nil, v, 3)
		var got Value
		n, err := Parse(enc, &got, nil)
		if err != nil || n != len(enc) {
			t.Fatalf("Parse(%q) = %d, %v", enc, n, err)
		}
		if !Equal(got, v) {
			t.Fatalf("round trip: got %v, want %v (wire %q)", got, v, enc)
		}
		// Re-encoding the parsed value is byte-identical.
		if again := AppendValue(nil, got, 3); !bytes.Equal(again, enc) {
			t.Fatalf("re-encoding differs:\n%q\n%q", again, enc)
		}
		// A clone survives the reuse of the parsed value's storage.
		c := got.Clone()
		if _, err := Parse([]byte("*2\r\n$5\r\nXXXXX\r\n+YYYYYYYYYYYYYYYYYYYYYYYYY\r\n"), &got, nil); err != nil {
			t.Fatal(err)
		}
		if !Equal(c, v) {
			t.Fatalf("clone changed after re-parse: %v", c)
		}
		// Every split point (a random one for long encodings): the prefix
		// is incomplete and consumes nothing.
		cuts := []int{rapid.IntRange(0, len(enc)-1).Draw(t, "cut")}
		if len(enc) <= 256 {
			cuts = cuts[:0]
			for i := range len(enc) {
				cuts = append(cuts, i)
			}
		}
		for _, cut := range cuts {
			if n, err := Parse(enc[:cut:cut], &got, nil); err != ErrIncomplete || n != 0 {
				t.Fatalf("prefix of %d bytes: %d, %v", cut, n, err)
			}
		}
	})
}

func TestRapidDowngradeRESP2(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		v := genValue.Draw(t, "v")
		enc := AppendValue(nil, v, 2)
		var got Value
		n, err := Parse(enc, &got, nil)
		if err != nil || n != len(enc) {
			t.Fatalf("Parse(%q) = %d, %v", enc, n, err)
		}
		if !resp2Only(got) {
			t.Fatalf("RESP2 output %q carries RESP3-only types: %v", enc, got)
		}
		if want := downgrade(v); !strictEqual(got, want) {
			t.Fatalf("RESP2 downgrade of %v: got %v, want %v", v, got, want)
		}
	})
}

// chunkReader returns its data in pieces of the given sizes, cycling.
type chunkReader struct {
	data  []byte
	sizes []int
	i     int
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	n := 1
	if len(c.sizes) > 0 {
		n = c.sizes[c.i%len(c.sizes)]
		c.i++
	}
	n = min(n, len(p), len(c.data))
	copy(p, c.data[:n])
	c.data = c.data[n:]
	return n, nil
}

func TestRapidReaderStream(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		vals := rapid.SliceOfN(genValue, 1, 8).Draw(t, "values")
		proto := rapid.SampledFrom([]int{2, 3}).Draw(t, "proto")
		var stream []byte
		for _, v := range vals {
			stream = AppendValue(stream, v, proto)
		}
		sizes := rapid.SliceOfN(rapid.IntRange(0, 40), 1, 6).Draw(t, "chunks")
		for i := range sizes {
			sizes[i]++ // never a (0, nil) read
		}
		r := NewReader(&chunkReader{data: stream, sizes: sizes}, nil)
		var got Value
		for i, v := range vals {
			if err := r.Read(&got); err != nil {
				t.Fatalf("value %d: %v", i, err)
			}
			want := v
			if proto == 2 {
				want = downgrade(v)
			}
			if !Equal(got, want) {
				t.Fatalf("value %d: got %v, want %v", i, got, want)
			}
		}
		if err := r.Read(&got); err != io.EOF {
			t.Fatalf("after the last value: %v, want io.EOF", err)
		}
	})
}
