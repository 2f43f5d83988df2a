package resp

import (
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"
)

// strictEqual is Equal that also compares NullForm, recursively.
func strictEqual(a, b Value) bool {
	if !Equal(a, b) {
		return false
	}
	if a.Kind == KindNull && a.NullForm != b.NullForm {
		return false
	}
	for i, e := range a.All() {
		if !strictEqual(e, b.Elem(i)) {
			return false
		}
	}
	x, y := a.Attrs(), b.Attrs()
	for i, e := range x.All() {
		if !strictEqual(e, y.Elem(i)) {
			return false
		}
	}
	return true
}

type validCase struct {
	name string
	in   string
	want Value
}

var validCases = []validCase{
	// RESP2 types.
	{"simple", "+OK\r\n", SimpleString("OK")},
	{"simple empty", "+\r\n", SimpleString("")},
	{"simple with spaces", "+hello world\r\n", SimpleString("hello world")},
	{"error", "-ERR unknown command 'foo'\r\n", ErrorValue("ERR unknown command 'foo'")},
	{"error empty", "-\r\n", ErrorValue("")},
	{"int zero", ":0\r\n", Int(0)},
	{"int negative", ":-17\r\n", Int(-17)},
	{"int plus", ":+5\r\n", Int(5)},
	{"int leading zeros", ":007\r\n", Int(7)},
	{"int max", ":9223372036854775807\r\n", Int(math.MaxInt64)},
	{"int min", ":-9223372036854775808\r\n", Int(math.MinInt64)},
	{"bulk", "$5\r\nhello\r\n", BulkString("hello")},
	{"bulk empty", "$0\r\n\r\n", BulkString("")},
	{"bulk binary with CRLF", "$6\r\na\r\n\x00\xffb\r\n", Bulk([]byte("a\r\n\x00\xffb"))},
	{"bulk leading zeros", "$03\r\nabc\r\n", BulkString("abc")},
	{"null bulk", "$-1\r\n", NullBulk()},
	{"array empty", "*0\r\n", ArrayOf()},
	{"null array", "*-1\r\n", NullArray()},
	{"array mixed", "*3\r\n$3\r\nfoo\r\n:1\r\n$-1\r\n", ArrayOf(BulkString("foo"), Int(1), NullBulk())},
	{"array nested", "*2\r\n*1\r\n+a\r\n*0\r\n", ArrayOf(ArrayOf(SimpleString("a")), ArrayOf())},
	{"array of null arrays", "*2\r\n*-1\r\n*-1\r\n", ArrayOf(NullArray(), NullArray())},
	// RESP3 types.
	{"null", "_\r\n", NullValue()},
	{"true", "#t\r\n", Bool(true)},
	{"false", "#f\r\n", Bool(false)},
	{"double", ",1.5\r\n", Double(1.5)},
	{"double int", ",10\r\n", Double(10)},
	{"double exp", ",1.5E-3\r\n", Double(0.0015)},
	{"double exp sign", ",-2e+2\r\n", Double(-200)},
	{"double plus", ",+2\r\n", Double(2)},
	{"double neg zero", ",-0\r\n", Double(math.Copysign(0, -1))},
	{"double inf", ",inf\r\n", Double(math.Inf(1))},
	{"double -inf", ",-inf\r\n", Double(math.Inf(-1))},
	{"double nan", ",nan\r\n", Double(math.NaN())},
	{"double huge saturates", ",1e400\r\n", Double(math.Inf(1))},
	{"big number", "(3492890328409238509324850943850943825024385\r\n", BigNumber("3492890328409238509324850943850943825024385")},
	{"big number negative", "(-1\r\n", BigNumber("-1")},
	{"bulk error", "!21\r\nSYNTAX invalid syntax\r\n", BulkErrorValue("SYNTAX invalid syntax")},
	{"bulk error empty", "!0\r\n\r\n", BulkErrorValue("")},
	{"verbatim", "=15\r\ntxt:Some string\r\n", Verbatim("txt", "Some string")},
	{"verbatim empty text", "=4\r\nmkd:\r\n", Verbatim("mkd", "")},
	{"verbatim binary format", "=5\r\n\r\n::x\r\n", Verbatim("\r\n:", "x")},
	{"map", "%2\r\n+first\r\n:1\r\n+second\r\n:2\r\n", MapOf(SimpleString("first"), Int(1), SimpleString("second"), Int(2))},
	{"map empty", "%0\r\n", MapOf()},
	{"map nested", "%1\r\n*1\r\n:1\r\n%1\r\n_\r\n#t\r\n", MapOf(ArrayOf(Int(1)), MapOf(NullValue(), Bool(true)))},
	{"set", "~2\r\n+a\r\n:1\r\n", SetOf(SimpleString("a"), Int(1))},
	{"set empty", "~0\r\n", SetOf()},
	{"push", ">3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$2\r\nhi\r\n", PushOf(BulkString("message"), BulkString("ch"), BulkString("hi"))},
	{"push empty", ">0\r\n", PushOf()},
	{"attribute", "|1\r\n+key-popularity\r\n%2\r\n$1\r\na\r\n,0.1923\r\n$1\r\nb\r\n,0.0012\r\n*2\r\n:2039123\r\n:9543892\r\n",
		ArrayOf(Int(2039123), Int(9543892)).WithAttrs(
			SimpleString("key-popularity"),
			MapOf(BulkString("a"), Double(0.1923), BulkString("b"), Double(0.0012)))},
	{"attribute on element", "*2\r\n|1\r\n+ttl\r\n:3\r\n$1\r\nv\r\n:2\r\n",
		ArrayOf(BulkString("v").WithAttrs(SimpleString("ttl"), Int(3)), Int(2))},
	{"attribute on map key", "%1\r\n|1\r\n+a\r\n+b\r\n+k\r\n+v\r\n",
		MapOf(SimpleString("k").WithAttrs(SimpleString("a"), SimpleString("b")), SimpleString("v"))},
	{"attribute empty", "|0\r\n+x\r\n", SimpleString("x")},
	{"attributes merged", "|1\r\n+a\r\n:1\r\n|1\r\n+b\r\n*1\r\n:2\r\n+x\r\n",
		SimpleString("x").WithAttrs(SimpleString("a"), Int(1), SimpleString("b"), ArrayOf(Int(2)))},
	{"attributes merged after empty", "|0\r\n|1\r\n+b\r\n:2\r\n|0\r\n_\r\n", NullValue().WithAttrs(SimpleString("b"), Int(2))},
	{"attribute on attribute value", "|1\r\n+a\r\n|1\r\n+m\r\n+n\r\n:1\r\n:2\r\n",
		Int(2).WithAttrs(SimpleString("a"), Int(1).WithAttrs(SimpleString("m"), SimpleString("n")))},
	{"attribute on null", "|1\r\n+a\r\n+b\r\n$-1\r\n", NullBulk().WithAttrs(SimpleString("a"), SimpleString("b"))},
}

func TestParseValid(t *testing.T) {
	for _, tc := range validCases {
		t.Run(tc.name, func(t *testing.T) {
			var v Value
			n, err := Parse([]byte(tc.in), &v, nil)
			if err != nil {
				t.Fatalf("Parse(%q): %v", tc.in, err)
			}
			if n != len(tc.in) {
				t.Fatalf("Parse(%q) consumed %d, want %d", tc.in, n, len(tc.in))
			}
			if !strictEqual(v, tc.want) {
				t.Fatalf("Parse(%q) = %v, want %v", tc.in, v, tc.want)
			}
			// Trailing bytes, even garbage, are not examined.
			n, err = Parse([]byte(tc.in+"?garbage"), &v, nil)
			if err != nil || n != len(tc.in) || !strictEqual(v, tc.want) {
				t.Fatalf("with trailing bytes: n=%d err=%v v=%v", n, err, v)
			}
		})
	}
}

// TestParseIncremental feeds every valid encoding one byte at a time: each
// proper prefix must be ErrIncomplete with nothing consumed and the
// destination untouched, and the full input must then give the same value
// as a one-shot parse, into the very same destination.
func TestParseIncremental(t *testing.T) {
	sentinel := ArrayOf(SimpleString("sentinel"), Int(42))
	for _, tc := range validCases {
		t.Run(tc.name, func(t *testing.T) {
			in := []byte(tc.in)
			var v Value
			if _, err := Parse(AppendValue(nil, sentinel, 3), &v, nil); err != nil {
				t.Fatal(err)
			}
			for i := 0; i < len(in); i++ {
				// A fresh copy of the prefix with no spare capacity, so any
				// read past the end would be caught by the race detector or
				// bounds checks.
				prefix := append([]byte(nil), in[:i]...)
				n, err := Parse(prefix, &v, nil)
				if err != ErrIncomplete || n != 0 {
					t.Fatalf("prefix %q: n=%d err=%v, want 0, ErrIncomplete", prefix, n, err)
				}
				if !strictEqual(v, sentinel) {
					t.Fatalf("prefix %q modified the destination: %v", prefix, v)
				}
			}
			n, err := Parse(in, &v, nil)
			if err != nil || n != len(in) || !strictEqual(v, tc.want) {
				t.Fatalf("full: n=%d err=%v v=%v", n, err, v)
			}
		})
	}
}

type badCase struct {
	name   string
	in     string
	lim    *Limits
	limit  string // expected ProtocolError.Limit
	offset int64  // expected ProtocolError.Offset
	reason string // substring of the reason
}

var badCases = []badCase{
	{"bad type byte", "x\r\n", nil, "", 0, "invalid type byte"},
	{"bad type byte alone", "?", nil, "", 0, "invalid type byte"},
	{"bad type byte CRLF", "\r\n", nil, "", 0, "invalid type byte"},
	{"bad type byte nested", "*2\r\n:1\r\n@x\r\n", nil, "", 8, "invalid type byte"},
	{"LF without CR", "+OK\n", nil, "", 3, "line feed"},
	{"LF inside line", "+O\nK\r\n", nil, "", 2, "line feed"},
	{"CR without LF", "+O\rK\r\n", nil, "", 3, "carriage return"},
	{"CR CR LF", "+OK\r\r\n", nil, "", 4, "carriage return"},
	{"int letters", ":abc\r\n", nil, "", 1, "invalid integer"},
	{"int empty", ":\r\n", nil, "", 1, "invalid integer"},
	{"int sign only", ":-\r\n", nil, "", 1, "invalid integer"},
	{"int double sign", ":--1\r\n", nil, "", 1, "invalid integer"},
	{"int fraction", ":1.5\r\n", nil, "", 1, "invalid integer"},
	{"int space", ":1 \r\n", nil, "", 1, "invalid integer"},
	{"int overflow", ":9223372036854775808\r\n", nil, "", 1, "overflows"},
	{"int underflow", ":-9223372036854775809\r\n", nil, "", 1, "overflows"},
	{"int huge", ":99999999999999999999999999\r\n", nil, "", 1, "overflows"},
	{"bulk len letters", "$abc\r\n", nil, "", 1, "invalid length"},
	{"bulk len empty", "$\r\n", nil, "", 1, "invalid length"},
	{"bulk len -2", "$-2\r\n", nil, "", 1, "negative"},
	{"bulk len -0", "$-0\r\n", nil, "", 1, "negative"},
	{"bulk len plus", "$+5\r\nhello\r\n", nil, "", 1, "invalid length"},
	{"bulk len overflow", "$9223372036854775808\r\n", nil, "", 1, "overflows"},
	{"bulk len huge", "$99999999999999999999999\r\n", nil, "", 1, "overflows"},
	{"bulk too long payload", "$3\r\nabcd\r\n", nil, "", 7, "CRLF"},
	{"bulk missing CR", "$3\r\nabc\n\n", nil, "", 7, "CRLF"},
	{"bulk error null", "!-1\r\n", nil, "", 1, "negative"},
	{"verbatim null", "=-1\r\n", nil, "", 1, "negative"},
	{"verbatim short", "=3\r\ntxt\r\n", nil, "", 4, "verbatim"},
	{"verbatim no colon", "=5\r\ntxt;x\r\n", nil, "", 4, "verbatim"},
	{"array len letters", "*x\r\n", nil, "", 1, "invalid length"},
	{"array len -2", "*-2\r\n", nil, "", 1, "negative"},
	{"array len overflow", "*9223372036854775808\r\n", nil, "", 1, "overflows"},
	{"map null", "%-1\r\n", nil, "", 1, "negative"},
	{"set null", "~-1\r\n", nil, "", 1, "negative"},
	{"push null", ">-1\r\n", nil, "", 1, "negative"},
	{"attribute null", "|-1\r\n", nil, "", 1, "negative"},
	{"bool x", "#x\r\n", nil, "", 1, "boolean"},
	{"bool empty", "#\r\n", nil, "", 1, "boolean"},
	{"bool long", "#tt\r\n", nil, "", 1, "boolean"},
	{"bool upper", "#T\r\n", nil, "", 1, "boolean"},
	{"null payload", "_x\r\n", nil, "", 1, "null"},
	{"double letters", ",abc\r\n", nil, "", 1, "double"},
	{"double empty", ",\r\n", nil, "", 1, "double"},
	{"double trailing dot", ",1.\r\n", nil, "", 1, "double"},
	{"double leading dot", ",.5\r\n", nil, "", 1, "double"},
	{"double bare exponent", ",1e\r\n", nil, "", 1, "double"},
	{"double signed bare exponent", ",1e+\r\n", nil, "", 1, "double"},
	{"double two signs", ",--1\r\n", nil, "", 1, "double"},
	{"double upper INF", ",INF\r\n", nil, "", 1, "double"},
	{"double Infinity", ",Infinity\r\n", nil, "", 1, "double"},
	{"double +inf", ",+inf\r\n", nil, "", 1, "double"},
	{"double hex", ",0x10\r\n", nil, "", 1, "double"},
	{"double underscore", ",1_0\r\n", nil, "", 1, "double"},
	{"double space", ", 1\r\n", nil, "", 1, "double"},
	{"big empty", "(\r\n", nil, "", 1, "big number"},
	{"big sign only", "(-\r\n", nil, "", 1, "big number"},
	{"big letters", "(12a\r\n", nil, "", 1, "big number"},
	{"big plus", "(+1\r\n", nil, "", 1, "big number"},
	{"big fraction", "(1.0\r\n", nil, "", 1, "big number"},
	{"nested malformed", "%1\r\n+k\r\n*1\r\n:x\r\n", nil, "", 13, "invalid integer"},
	{"malformed attribute", "|1\r\n+k\r\n#q\r\n+v\r\n", nil, "", 9, "boolean"},

	// Limits.
	{"bulk over default limit", "$536870913\r\n", nil, "MaxBulkLen", 1, "MaxBulkLen"},
	{"bulk at small limit ok then over", "$5\r\nhello\r\n", &Limits{MaxBulkLen: 4}, "MaxBulkLen", 1, "5 > 4"},
	{"bulk error over limit", "!5\r\nhello\r\n", &Limits{MaxBulkLen: 4}, "MaxBulkLen", 1, "MaxBulkLen"},
	{"verbatim over limit", "=9\r\ntxt:hello\r\n", &Limits{MaxBulkLen: 8}, "MaxBulkLen", 1, "MaxBulkLen"},
	{"line over limit", "+" + strings.Repeat("a", 9) + "\r\n", &Limits{MaxLineLen: 8}, "MaxLineLen", 1, "MaxLineLen"},
	{"line over limit no CR yet", "+" + strings.Repeat("a", 9), &Limits{MaxLineLen: 8}, "MaxLineLen", 1, "MaxLineLen"},
	{"header over line limit", "$000000001\r\na\r\n", &Limits{MaxLineLen: 8}, "MaxLineLen", 1, "MaxLineLen"},
	{"array over element limit", "*5\r\n", &Limits{MaxElements: 4}, "MaxElements", 1, "MaxElements"},
	{"map pairs over element limit", "%3\r\n", &Limits{MaxElements: 5}, "MaxElements", 1, "MaxElements"},
	{"attribute over element limit", "|3\r\n", &Limits{MaxElements: 5}, "MaxElements", 1, "MaxElements"},
	{"array over default element limit", "*16777217\r\n", nil, "MaxElements", 1, "MaxElements"},
	{"values over limit", "*2\r\n*2\r\n:1\r\n:2\r\n*2\r\n", &Limits{MaxValues: 5}, "MaxValues", 16, "MaxValues"},
	{"attribute merge over value limit", "|1\r\n+a\r\n+b\r\n|2\r\n", &Limits{MaxValues: 5}, "MaxValues", 12, "6 > 5"},
	{"depth over limit", strings.Repeat("*1\r\n", 3) + ":1\r\n", &Limits{MaxDepth: 2}, "MaxDepth", 8, "MaxDepth"},
	{"depth 65 over default", strings.Repeat("*1\r\n", 65) + ":1\r\n", nil, "MaxDepth", 256, "MaxDepth"},
	{"depth 100 over default", strings.Repeat("*1\r\n", 100) + ":1\r\n", nil, "MaxDepth", 256, "MaxDepth"},
	{"empty aggregate counts for depth", "*1\r\n*1\r\n*0\r\n", &Limits{MaxDepth: 2}, "MaxDepth", 8, "MaxDepth"},
	{"attribute counts for depth", "*1\r\n|1\r\n*0\r\n", &Limits{MaxDepth: 2}, "MaxDepth", 8, "MaxDepth"},
	{"reply over limit bulk", "$10\r\n0123456789\r\n", &Limits{MaxReplyLen: 15}, "MaxReplyLen", 0, "MaxReplyLen"},
	{"reply over limit lines", "*3\r\n:1\r\n:2\r\n:3\r\n", &Limits{MaxReplyLen: 15}, "MaxReplyLen", 12, "MaxReplyLen"},
}

func TestParseMalformed(t *testing.T) {
	for _, tc := range badCases {
		t.Run(tc.name, func(t *testing.T) {
			in := []byte(tc.in)
			v := SimpleString("untouched")
			n, err := Parse(in, &v, tc.lim)
			var pe *ProtocolError
			if !errors.As(err, &pe) {
				t.Fatalf("Parse(%q) = %d, %v; want *ProtocolError", tc.in, n, err)
			}
			if !errors.Is(err, ErrProtocol) {
				t.Fatalf("errors.Is(%v, ErrProtocol) = false", err)
			}
			if n != 0 {
				t.Fatalf("consumed %d on error", n)
			}
			if pe.Limit != tc.limit {
				t.Fatalf("Limit = %q, want %q (%v)", pe.Limit, tc.limit, err)
			}
			if pe.Offset != tc.offset {
				t.Fatalf("Offset = %d, want %d (%v)", pe.Offset, tc.offset, err)
			}
			if !strings.Contains(pe.Reason, tc.reason) {
				t.Fatalf("Reason %q does not mention %q", pe.Reason, tc.reason)
			}
			if !strings.HasPrefix(err.Error(), "respire: ") {
				t.Fatalf("error %q lacks the respire prefix", err)
			}
			if !strictEqual(v, SimpleString("untouched")) {
				t.Fatalf("destination modified on error: %v", v)
			}
			// Every prefix is either still incomplete or already the same
			// error: never a success, never a different verdict.
			for i := 0; i < len(in); i++ {
				prefix := append([]byte(nil), in[:i]...)
				n, perr := Parse(prefix, &v, tc.lim)
				if perr == ErrIncomplete && n == 0 {
					continue
				}
				if perr == nil || perr.Error() != err.Error() {
					t.Fatalf("prefix %q: n=%d err=%v; want ErrIncomplete or %v", prefix, n, perr, err)
				}
			}
		})
	}
}

func TestParseIncompleteCases(t *testing.T) {
	for _, in := range []string{
		"", "+", "+OK", "+OK\r", "$", "$5", "$5\r", "$5\r\n", "$5\r\nhel", "$5\r\nhello", "$5\r\nhello\r",
		"*2\r\n:1\r\n", "*1\r\n*1\r\n", "%1\r\n+k\r\n", "|1\r\n+a\r\n+b\r\n", "|0\r\n", "=4\r\ntxt",
		"_", "_\r", ",1.5", "#t\r",
	} {
		var v Value
		if n, err := Parse([]byte(in), &v, nil); err != ErrIncomplete || n != 0 {
			t.Errorf("Parse(%q) = %d, %v; want 0, ErrIncomplete", in, n, err)
		}
	}
}

func TestParseLimitBoundaries(t *testing.T) {
	ok := []struct {
		in  string
		lim Limits
	}{
		{"$4\r\nabcd\r\n", Limits{MaxBulkLen: 4}},
		{"=8\r\ntxt:abcd\r\n", Limits{MaxBulkLen: 8}},
		{"+abcdefgh\r\n", Limits{MaxLineLen: 8}},
		{"*4\r\n:1\r\n:2\r\n:3\r\n:4\r\n", Limits{MaxElements: 4}},
		{"%2\r\n:1\r\n:2\r\n:3\r\n:4\r\n", Limits{MaxElements: 4}},
		{"*2\r\n*2\r\n:1\r\n:2\r\n:3\r\n", Limits{MaxValues: 4}},
		{strings.Repeat("*1\r\n", 2) + ":1\r\n", Limits{MaxDepth: 2}},
		{strings.Repeat("*1\r\n", 64) + ":1\r\n", Limits{}},
		{"$10\r\n0123456789\r\n", Limits{MaxReplyLen: 17}},
	}
	for _, tc := range ok {
		var v Value
		if n, err := Parse([]byte(tc.in), &v, &tc.lim); err != nil || n != len(tc.in) {
			t.Errorf("Parse(%q, %+v) = %d, %v; want success at the boundary", tc.in, tc.lim, n, err)
		}
	}
}

// TestParseHostileHeaders checks that a header announcing a huge payload
// or element count costs no allocation until the data is actually there.
func TestParseHostileHeaders(t *testing.T) {
	big := &Limits{MaxBulkLen: 1 << 40, MaxElements: 1 << 40, MaxValues: 1 << 40, MaxReplyLen: 1 << 40}
	for _, in := range []string{
		"$2000000000\r\n0123456789",
		"*99999999\r\n" + strings.Repeat("$3\r\nabc\r\n", 10),
		"%99999999\r\n" + strings.Repeat(":1\r\n", 10),
		"*1\r\n*99999999\r\n*99999999\r\n:1\r\n",
	} {
		buf := []byte(in)
		var v Value
		allocs := testing.AllocsPerRun(20, func() {
			if n, err := Parse(buf, &v, big); err != ErrIncomplete || n != 0 {
				t.Fatalf("Parse(%q) = %d, %v; want ErrIncomplete", in, n, err)
			}
		})
		if allocs != 0 {
			t.Errorf("Parse(%q) allocated %.0f times for an incomplete value", in, allocs)
		}
		if v.mem != nil {
			t.Errorf("Parse(%q) created storage for an incomplete value", in)
		}
		// With the default limits the same headers are rejected outright.
		_, err := Parse(buf, &v, nil)
		var pe *ProtocolError
		if !errors.As(err, &pe) || pe.Limit == "" {
			t.Errorf("Parse(%q) with default limits = %v; want a limit error", in, err)
		}
	}
	// Beyond MaxReplyLenCeiling, even limits set higher refuse the header.
	_, err := Parse([]byte("$999999999999\r\n0123456789"), new(Value), big)
	var pe *ProtocolError
	if !errors.As(err, &pe) || pe.Limit != "MaxReplyLen" {
		t.Errorf("a header beyond the ceiling: %v; want a MaxReplyLen error", err)
	}
}

// TestParseStorageBounded checks that storage is sized by the data, not
// by headers, costs less than the wire size, and is reused across parses.
func TestParseStorageBounded(t *testing.T) {
	var v Value
	in := []byte("*3\r\n$5\r\nhello\r\n+world\r\n%1\r\n:1\r\n$2\r\nxy\r\n")
	if _, err := Parse(in, &v, nil); err != nil {
		t.Fatal(err)
	}
	// Array header 6, "hello" 7, "world" 7, map header 6, integer 2, "xy" 4.
	if got := v.StorageSize(); got != 32 || got >= len(in) {
		t.Errorf("storage of %d bytes for a %d-byte value, want exactly 32", got, len(in))
	}
	first := &v.mem.tape[:1][0]
	small := []byte("*2\r\n+ab\r\n:7\r\n")
	if _, err := Parse(small, &v, nil); err != nil {
		t.Fatal(err)
	}
	if &v.mem.tape[:1][0] != first {
		t.Error("storage was not reused for a smaller value")
	}
	if !Equal(v, ArrayOf(SimpleString("ab"), Int(7))) {
		t.Errorf("got %v", v)
	}
	// Slices handed out have clipped capacity.
	if e := v.Elem(0); cap(e.Str) != 2 || cap(v.ent) != len(v.ent) {
		t.Errorf("capacities not clipped: %d %d/%d", cap(e.Str), cap(v.ent), len(v.ent))
	}
}

// TestCompactStorage checks that a parsed reply costs about its wire size
// or less whatever its shape, that every element is reachable through
// Elem and All, and that Elem reads one element in a bounded number of
// steps (through the index) rather than from the start.
func TestCompactStorage(t *testing.T) {
	const n = 10000
	cases := []struct {
		name string
		elem func(i int) Value
	}{
		{"nulls", func(int) Value { return NullValue() }},
		{"booleans", func(i int) Value { return Bool(i%2 == 0) }},
		{"small ints", func(i int) Value { return Int(int64(i % 50)) }},
		{"short bulks", func(i int) Value { return BulkString(strconv.Itoa(i)) }},
		{"pairs", func(i int) Value { return ArrayOf(BulkString("k"), Int(int64(i))) }},
		{"singletons", func(i int) Value { return ArrayOf(NullValue()) }},
		{"empty arrays", func(int) Value { return ArrayOf() }},
		{"with attributes", func(i int) Value { return Int(int64(i)).WithAttrs(SimpleString("a"), Bool(true)) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			elems := make([]Value, n)
			for i := range elems {
				elems[i] = tc.elem(i)
			}
			want := ArrayOf(elems...)
			in := AppendValue(nil, want, 3)
			var v Value
			if _, err := Parse(in, &v, nil); err != nil {
				t.Fatal(err)
			}
			if v.StorageSize() > len(in)*3/2 {
				t.Errorf("storage %d bytes for %d wire bytes", v.StorageSize(), len(in))
			}
			if !Equal(v, want) {
				t.Fatalf("parsed value differs")
			}
			for _, i := range []int{0, 1, 7, 8, 9, 15, 16, 17, 4095, 4096, n - 2, n - 1} {
				if !strictEqual(v.Elem(i), elems[i]) {
					t.Fatalf("Elem(%d) = %v, want %v", i, v.Elem(i), elems[i])
				}
			}
			count := 0
			for i, e := range v.All() {
				if i != count || !strictEqual(e, elems[i]) {
					t.Fatalf("All yields %d: %v", i, e)
				}
				count++
			}
			if count != n {
				t.Fatalf("All yielded %d elements", count)
			}
		})
	}
	// Elem uses the index: reaching any element takes at most indexStride-1 skips.
	var v Value
	if _, err := Parse(AppendValue(nil, ArrayOf(make([]Value, n)...), 3), &v, nil); err != nil {
		t.Fatal(err)
	}
	a, _ := v.aggregate()
	if got := indexLen(n); got != (n-1)/indexStride || a.index < 0 {
		t.Fatalf("index of %d entries at %d", got, a.index)
	}
	for i := 0; i < n; i += 997 {
		want := a.body + 3*0 + i // every null is one byte
		if got := a.elemAt(v.ent, i); got != want {
			t.Fatalf("element %d at %d, want %d", i, got, want)
		}
	}
}

// TestParseCopiesPayload checks that buf can be reused right after Parse.
func TestParseCopiesPayload(t *testing.T) {
	buf := []byte("*2\r\n$3\r\nabc\r\n+def\r\n")
	var v Value
	if _, err := Parse(buf, &v, nil); err != nil {
		t.Fatal(err)
	}
	for i := range buf {
		buf[i] = 'Z'
	}
	if !Equal(v, ArrayOf(BulkString("abc"), SimpleString("def"))) {
		t.Errorf("value changed with the input buffer: %v", v)
	}
}

// TestParseIntoConstructed checks that Parse never writes through slices
// the destination held before, other than its own storage.
func TestParseIntoConstructed(t *testing.T) {
	payload := []byte("mine")
	elems := []Value{Bulk(payload)}
	v := ArrayOf(elems...)
	if _, err := Parse([]byte("*1\r\n$4\r\nxxxx\r\n"), &v, nil); err != nil {
		t.Fatal(err)
	}
	if string(payload) != "mine" || string(elems[0].Str) != "mine" {
		t.Error("Parse wrote into caller-owned slices")
	}
	c := v.Clone()
	if _, err := Parse([]byte("*1\r\n$4\r\nyyyy\r\n"), &v, nil); err != nil {
		t.Fatal(err)
	}
	if !Equal(c, ArrayOf(BulkString("xxxx"))) {
		t.Errorf("clone changed after re-parse: %v", c)
	}
}
