package resp

import (
	"math"
	"strconv"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// parseDoubleMatches fails t unless parseDouble gives s exactly the bits strconv gives it.
func parseDoubleMatches(t interface {
	Helper()
	Fatalf(string, ...any)
}, s string) {
	t.Helper()
	want, err := strconv.ParseFloat(s, 64)
	if err != nil && !strings.Contains(err.Error(), "range") {
		t.Fatalf("strconv rejects %q: %v", s, err)
	}
	if got := parseDouble([]byte(s)); math.Float64bits(got) != math.Float64bits(want) && !(math.IsNaN(got) && math.IsNaN(want)) {
		t.Fatalf("parseDouble(%q) = %v (%#x), strconv gives %v (%#x)", s, got, math.Float64bits(got), want, math.Float64bits(want))
	}
}

// TestParseDoubleShortForms checks the fast conversion of short decimals (shortDouble) against
// strconv on the forms Redis prints and the edges of the fast path: signed zeros, leading
// zeros, 15 and 16 significant digits, 22 and 23 fraction digits, and what it leaves to
// strconv (exponents, infinities, NaN, a leading plus).
func TestParseDoubleShortForms(t *testing.T) {
	for _, s := range []string{
		"0", "-0", "0.0", "-0.0", "00012", "-00012.50", "1", "-1", "7.5", "0.1", "0.2", "0.3",
		"3.14159", "123456789012345", "999999999999999", "1234567890123456", "0.000000000000000000001",
		"0.0000000000000000000001", "0.00000000000000000000001", "1.0000000000000002",
		"0.10000000000000001", "1.7976931348623157e308", "1e400", "-1e-400", "inf", "-inf", "nan",
		"+3", "2.5E3", "9007199254740993", "4503599627370497.5",
	} {
		parseDoubleMatches(t, s)
	}
	// The fast path takes the short forms.
	for _, s := range []string{"0", "-0", "7.5", "-00012.50", "123456789012345", "0.1"} {
		if _, ok := shortDouble([]byte(s)); !ok {
			t.Errorf("shortDouble(%q) declined a short decimal", s)
		}
	}
	for _, s := range []string{"1234567890123456", "1e3", "inf", "+3", "0.00000000000000000000001"} {
		if _, ok := shortDouble([]byte(s)); ok {
			t.Errorf("shortDouble(%q) took a form it must leave to strconv", s)
		}
	}
}

// TestParseDoubleProperty draws decimals of every length around the fast path's bounds and
// checks that parseDouble gives exactly strconv's bits.
func TestParseDoubleProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var b strings.Builder
		if rapid.Bool().Draw(t, "neg") {
			b.WriteByte('-')
		}
		digit := rapid.ByteRange('0', '9')
		for range rapid.IntRange(1, 18).Draw(t, "int") {
			b.WriteByte(digit.Draw(t, "d"))
		}
		if n := rapid.IntRange(0, 25).Draw(t, "frac"); n > 0 {
			b.WriteByte('.')
			for range n {
				b.WriteByte(digit.Draw(t, "f"))
			}
		}
		if !validDouble([]byte(b.String())) {
			t.Fatalf("drew %q, which validDouble rejects", b.String())
		}
		parseDoubleMatches(t, b.String())
	})
}

// TestAppendElems checks AppendElems against Elem for parsed and built aggregates, its
// appending after what dst holds, and that it appends nothing for a scalar.
func TestAppendElems(t *testing.T) {
	var parsed Value
	in := "*3\r\n*2\r\n$1\r\na\r\n,1.5\r\n:7\r\n%1\r\n+k\r\n_\r\n"
	if _, err := Parse([]byte(in), &parsed, nil); err != nil {
		t.Fatal(err)
	}
	built := ArrayOf(BulkString("x"), Int(2), ArrayOf(Double(0.5)))
	for _, v := range []Value{parsed, built} {
		pre := BulkString("before")
		got := v.AppendElems([]Value{pre})
		if len(got) != 1+v.Len() || !Equal(got[0], pre) {
			t.Fatalf("AppendElems(%v) = %v, want the element before and %d after", v, got, v.Len())
		}
		for i := range v.Len() {
			if !Equal(got[1+i], v.Elem(i)) {
				t.Errorf("element %d of %v: AppendElems gives %v, Elem %v", i, v, got[1+i], v.Elem(i))
			}
		}
		var buf [2]Value
		if e0 := v.Elem(0); e0.Kind == KindArray && len(e0.AppendElems(buf[:0])) != e0.Len() {
			t.Errorf("AppendElems of %v into an array of two: not its %d elements", e0, e0.Len())
		}
	}
	s := BulkString("scalar")
	if got := s.AppendElems(nil); len(got) != 0 {
		t.Errorf("AppendElems of a scalar = %v, want nothing", got)
	}
}

// TestAsFloat64MatchesStrconv draws short strings of digits, points, signs and exponents, the
// well-formed and the malformed, and checks that AsFloat64 of a bulk string holding one gives
// strconv.ParseFloat's bits when strconv accepts it and an error when strconv rejects it or
// finds it out of range: the fast conversion takes only forms strconv accepts, with strconv's
// value.
func TestAsFloat64MatchesStrconv(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := string(rapid.SliceOfN(rapid.SampledFrom([]byte("0123456789.-+e")), 0, 20).Draw(t, "text"))
		want, werr := strconv.ParseFloat(s, 64)
		got, err := BulkString(s).AsFloat64()
		switch {
		case werr != nil: // out of range included: AsFloat64 refuses what strconv saturates
			if err == nil {
				t.Fatalf("AsFloat64(%q) = %v, strconv rejects it: %v", s, got, werr)
			}
		case err != nil:
			t.Fatalf("AsFloat64(%q): %v, strconv gives %v", s, err, want)
		case math.Float64bits(got) != math.Float64bits(want):
			t.Fatalf("AsFloat64(%q) = %v, strconv gives %v", s, got, want)
		}
	})
}
