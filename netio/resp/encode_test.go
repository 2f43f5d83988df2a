package resp

import (
	"math"
	"testing"
)

func TestEncoders(t *testing.T) {
	cases := []struct {
		name string
		got  []byte
		want string
	}{
		{"array header", AppendArrayHeader(nil, 3), "*3\r\n"},
		{"array header zero", AppendArrayHeader(nil, 0), "*0\r\n"},
		{"array header negative", AppendArrayHeader(nil, -7), "*-1\r\n"},
		{"bulk", AppendBulk(nil, []byte("a\r\nb")), "$4\r\na\r\nb\r\n"},
		{"bulk nil", AppendBulk(nil, nil), "$0\r\n\r\n"},
		{"bulk string", AppendBulkString(nil, "hello"), "$5\r\nhello\r\n"},
		{"bulk int", AppendBulkInt(nil, 10), "$2\r\n10\r\n"},
		{"bulk int negative", AppendBulkInt(nil, -42), "$3\r\n-42\r\n"},
		{"bulk int min", AppendBulkInt(nil, math.MinInt64), "$20\r\n-9223372036854775808\r\n"},
		{"command", AppendCommand(nil, "SET", "k", "v"), "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n"},
		{"command empty arg", AppendCommand(nil, "ECHO", ""), "*2\r\n$4\r\nECHO\r\n$0\r\n\r\n"},
		{"command no args", AppendCommand(nil), "*0\r\n"},
		{"command bytes", AppendCommandBytes(nil, []byte("GET"), []byte("k")), "*2\r\n$3\r\nGET\r\n$1\r\nk\r\n"},
		{"appends", AppendBulkString([]byte("prefix"), "x"), "prefix$1\r\nx\r\n"},
	}
	for _, tc := range cases {
		if string(tc.got) != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, tc.got, tc.want)
		}
	}
}

func TestAppendValue(t *testing.T) {
	cases := []struct {
		name   string
		v      Value
		r3, r2 string
	}{
		{"simple", SimpleString("OK"), "+OK\r\n", "+OK\r\n"},
		{"simple CRLF sanitised", SimpleString("a\r\nb"), "+a  b\r\n", "+a  b\r\n"},
		{"error", ErrorValue("ERR x"), "-ERR x\r\n", "-ERR x\r\n"},
		{"error LF sanitised", ErrorValue("ERR\nx"), "-ERR x\r\n", "-ERR x\r\n"},
		{"int", Int(-5), ":-5\r\n", ":-5\r\n"},
		{"bulk", BulkString("hi"), "$2\r\nhi\r\n", "$2\r\nhi\r\n"},
		{"null", NullValue(), "_\r\n", "$-1\r\n"},
		{"null bulk", NullBulk(), "_\r\n", "$-1\r\n"},
		{"null array", NullArray(), "_\r\n", "*-1\r\n"},
		{"true", Bool(true), "#t\r\n", ":1\r\n"},
		{"false", Bool(false), "#f\r\n", ":0\r\n"},
		{"double", Double(1.5), ",1.5\r\n", "$3\r\n1.5\r\n"},
		{"double big", Double(1e21), ",1e+21\r\n", "$5\r\n1e+21\r\n"},
		{"double inf", Double(math.Inf(1)), ",inf\r\n", "$3\r\ninf\r\n"},
		{"double -inf", Double(math.Inf(-1)), ",-inf\r\n", "$4\r\n-inf\r\n"},
		{"double nan", Double(math.NaN()), ",nan\r\n", "$3\r\nnan\r\n"},
		{"double -0", Double(math.Copysign(0, -1)), ",-0\r\n", "$2\r\n-0\r\n"},
		{"big number", BigNumber("-123"), "(-123\r\n", "$4\r\n-123\r\n"},
		{"bulk error", BulkErrorValue("ERR a\r\nb"), "!8\r\nERR a\r\nb\r\n", "-ERR a  b\r\n"},
		{"verbatim", Verbatim("mkd", "# hi"), "=8\r\nmkd:# hi\r\n", "$4\r\n# hi\r\n"},
		{"verbatim zero format", Value{Kind: KindVerbatimString, Str: []byte("x")}, "=5\r\ntxt:x\r\n", "$1\r\nx\r\n"},
		{"verbatim short format", Verbatim("t", "x"), "=5\r\nt  :x\r\n", "$1\r\nx\r\n"},
		{"array", ArrayOf(Int(1), BulkString("a")), "*2\r\n:1\r\n$1\r\na\r\n", "*2\r\n:1\r\n$1\r\na\r\n"},
		{"array empty", ArrayOf(), "*0\r\n", "*0\r\n"},
		{"set", SetOf(Int(1)), "~1\r\n:1\r\n", "*1\r\n:1\r\n"},
		{"push", PushOf(BulkString("message")), ">1\r\n$7\r\nmessage\r\n", "*1\r\n$7\r\nmessage\r\n"},
		{"map", MapOf(SimpleString("a"), Bool(true)), "%1\r\n+a\r\n#t\r\n", "*2\r\n+a\r\n:1\r\n"},
		{"map odd padded", MapOf(SimpleString("a")), "%1\r\n+a\r\n_\r\n", "*2\r\n+a\r\n$-1\r\n"},
		{"attribute kind as map", Value{Kind: KindAttribute, elems: []Value{Int(1), Int(2)}}, "%1\r\n:1\r\n:2\r\n", "*2\r\n:1\r\n:2\r\n"},
		{"attrs", SimpleString("x").WithAttrs(SimpleString("a"), Int(1)), "|1\r\n+a\r\n:1\r\n+x\r\n", "+x\r\n"},
		{"attrs odd padded", Int(1).WithAttrs(SimpleString("a")), "|1\r\n+a\r\n_\r\n:1\r\n", ":1\r\n"},
		{"nested attrs dropped in RESP2", ArrayOf(Int(1).WithAttrs(Int(2), Int(3))), "*1\r\n|1\r\n:2\r\n:3\r\n:1\r\n", "*1\r\n:1\r\n"},
		{"nested downgrade", MapOf(Double(2), SetOf(Bool(false), NullArray())), "%1\r\n,2\r\n~2\r\n#f\r\n_\r\n", "*2\r\n$1\r\n2\r\n*2\r\n:0\r\n*-1\r\n"},
		{"invalid kind", Value{}, "_\r\n", "$-1\r\n"},
		{"undefined kind", Value{Kind: 200}, "_\r\n", "$-1\r\n"},
	}
	for _, tc := range cases {
		if got := AppendValue(nil, tc.v, 3); string(got) != tc.r3 {
			t.Errorf("%s RESP3: got %q, want %q", tc.name, got, tc.r3)
		}
		if got := AppendValue(nil, tc.v, 2); string(got) != tc.r2 {
			t.Errorf("%s RESP2: got %q, want %q", tc.name, got, tc.r2)
		}
		// Protocol versions below 2 behave as RESP2, above 3 as RESP3.
		if got := AppendValue(nil, tc.v, 0); string(got) != tc.r2 {
			t.Errorf("%s proto 0: got %q", tc.name, got)
		}
		if got := AppendValue(nil, tc.v, 4); string(got) != tc.r3 {
			t.Errorf("%s proto 4: got %q", tc.name, got)
		}
		// Whatever the value, the output parses.
		for _, proto := range []int{2, 3} {
			enc := AppendValue(nil, tc.v, proto)
			var v Value
			if n, err := Parse(enc, &v, nil); err != nil || n != len(enc) {
				t.Errorf("%s proto %d: output %q does not parse: %d, %v", tc.name, proto, enc, n, err)
			}
		}
	}
}

// TestValidCasesRoundTrip re-encodes every parsed table case in RESP3 and
// checks it parses back to the same value.
func TestValidCasesRoundTrip(t *testing.T) {
	for _, tc := range validCases {
		enc := AppendValue(nil, tc.want, 3)
		var v Value
		n, err := Parse(enc, &v, nil)
		if err != nil || n != len(enc) || !Equal(v, tc.want) {
			t.Errorf("%s: %q -> %d, %v, %v", tc.name, enc, n, err, v)
		}
	}
}
