package resp

import (
	"math"
	"strings"
	"testing"
)

func TestKind(t *testing.T) {
	all := map[Kind]struct {
		name   string
		prefix byte
		agg    bool
	}{
		KindInvalid:        {"Invalid", 0, false},
		KindSimpleString:   {"SimpleString", '+', false},
		KindSimpleError:    {"SimpleError", '-', false},
		KindInteger:        {"Integer", ':', false},
		KindBulkString:     {"BulkString", '$', false},
		KindArray:          {"Array", '*', true},
		KindNull:           {"Null", '_', false},
		KindBoolean:        {"Boolean", '#', false},
		KindDouble:         {"Double", ',', false},
		KindBigNumber:      {"BigNumber", '(', false},
		KindBulkError:      {"BulkError", '!', false},
		KindVerbatimString: {"VerbatimString", '=', false},
		KindMap:            {"Map", '%', true},
		KindSet:            {"Set", '~', true},
		KindAttribute:      {"Attribute", '|', true},
		KindPush:           {"Push", '>', true},
	}
	for k, want := range all {
		if k.String() != want.name || k.Prefix() != want.prefix || k.IsAggregate() != want.agg {
			t.Errorf("%d: got %q %q %v, want %+v", k, k.String(), k.Prefix(), k.IsAggregate(), want)
		}
	}
	if got := Kind(99).String(); got != "Kind(99)" {
		t.Errorf("Kind(99).String() = %q", got)
	}
	if Kind(99).Prefix() != 0 {
		t.Error("undefined kind has a prefix")
	}
}

func TestErrorHelpers(t *testing.T) {
	cases := []struct {
		v          Value
		isErr      bool
		code, text string
	}{
		{ErrorValue("WRONGPASS invalid username-password pair"), true, "WRONGPASS", "WRONGPASS invalid username-password pair"},
		{ErrorValue("LOADING Redis is loading the dataset in memory"), true, "LOADING", "LOADING Redis is loading the dataset in memory"},
		{ErrorValue("MOVED 3999 127.0.0.1:6381"), true, "MOVED", "MOVED 3999 127.0.0.1:6381"},
		{BulkErrorValue("SYNTAX invalid syntax"), true, "SYNTAX", "SYNTAX invalid syntax"},
		{ErrorValue("NOCODE"), true, "NOCODE", "NOCODE"},
		{ErrorValue(""), true, "", ""},
		{SimpleString("MOVED 1 x"), false, "", ""},
		{BulkString("ERR x"), false, "", ""},
		{NullValue(), false, "", ""},
	}
	for _, tc := range cases {
		if tc.v.IsError() != tc.isErr || tc.v.ErrorCode() != tc.code || tc.v.ErrorMessage() != tc.text {
			t.Errorf("%v: IsError=%v ErrorCode=%q ErrorMessage=%q", tc.v, tc.v.IsError(), tc.v.ErrorCode(), tc.v.ErrorMessage())
		}
		if tc.isErr && !tc.v.HasErrorCode(tc.code) {
			t.Errorf("%v: HasErrorCode(%q) = false", tc.v, tc.code)
		}
	}
	if ErrorValue("MOVEDX 1").HasErrorCode("MOVED") || SimpleString("MOVED").HasErrorCode("MOVED") {
		t.Error("HasErrorCode matched a non-matching value")
	}
	v := ErrorValue("ASK 1 host:1")
	if n := testing.AllocsPerRun(100, func() { _ = v.HasErrorCode("ASK") }); n != 0 {
		t.Errorf("HasErrorCode allocated %.0f times", n)
	}
	if !NullArray().IsNull() || Int(0).IsNull() {
		t.Error("IsNull wrong")
	}
}

func TestEqual(t *testing.T) {
	nan := math.NaN()
	same := [][2]Value{
		{NullValue(), NullArray()},
		{NullBulk(), NullArray()},
		{Bulk(nil), Bulk([]byte{})},
		{ArrayOf(), Value{Kind: KindArray}},
		{Double(nan), Double(nan)},
		{Double(0), Double(math.Copysign(0, -1))},
		{Int(3), Value{Kind: KindInteger, Int: 3, Str: []byte("ignored")}},
		{Value{}, Value{}},
		{MapOf(Int(1), Int(2)).WithAttrs(Int(3), Int(4)), MapOf(Int(1), Int(2)).WithAttrs(Int(3), Int(4))},
	}
	for _, p := range same {
		if !Equal(p[0], p[1]) || !Equal(p[1], p[0]) {
			t.Errorf("Equal(%v, %v) = false", p[0], p[1])
		}
	}
	different := [][2]Value{
		{SimpleString("a"), BulkString("a")},
		{ErrorValue("a"), BulkErrorValue("a")},
		{SimpleString("a"), SimpleString("b")},
		{Int(1), Int(2)},
		{Double(1), Double(nan)},
		{Bool(true), Bool(false)},
		{BigNumber("1"), BigNumber("01")},
		{Verbatim("txt", "a"), Verbatim("mkd", "a")},
		{Verbatim("txt", "a"), Verbatim("txt", "b")},
		{ArrayOf(Int(1)), ArrayOf(Int(1), Int(2))},
		{ArrayOf(Int(1)), SetOf(Int(1))},
		{ArrayOf(Int(1)), ArrayOf(Int(2))},
		{MapOf(Int(1), Int(2)), MapOf(Int(2), Int(1))},
		{PushOf(), ArrayOf()},
		{Int(1), Int(1).WithAttrs(Int(1), Int(1))},
		{Int(1).WithAttrs(Int(1), Int(2)), Int(1).WithAttrs(Int(1), Int(3))},
		{NullValue(), Value{}},
	}
	for _, p := range different {
		if Equal(p[0], p[1]) || Equal(p[1], p[0]) {
			t.Errorf("Equal(%v, %v) = true", p[0], p[1])
		}
	}
}

func TestClone(t *testing.T) {
	payload := []byte("abc")
	v := ArrayOf(Bulk(payload), MapOf(SimpleString("k"), Verbatim("txt", "v")).WithAttrs(Int(1), BigNumber("12")), NullArray(), Double(2.5))
	c := v.Clone()
	if !strictEqual(c, v) {
		t.Fatalf("clone %v differs from %v", c, v)
	}
	payload[0] = 'X'
	v.elems[1].elems[0] = Int(9)
	if !Equal(c.Elem(0), BulkString("abc")) || !Equal(c.Elem(1).Elem(0), SimpleString("k")) {
		t.Errorf("clone shares memory with the original: %v", c)
	}
	if c.mem != nil {
		t.Error("clone carries parse storage")
	}
	// A clone of a scalar allocates nothing; of a tree, two blocks.
	s := Int(5)
	if n := testing.AllocsPerRun(10, func() { _ = s.Clone() }); n != 0 {
		t.Errorf("Clone of an integer allocated %.0f times", n)
	}
	if n := testing.AllocsPerRun(10, func() { _ = v.Clone() }); n != 2 {
		t.Errorf("Clone of a tree allocated %.0f times, want 2", n)
	}
}

func TestString(t *testing.T) {
	cases := []struct {
		v    Value
		want string
	}{
		{SimpleString("OK"), `simple:"OK"`},
		{ErrorValue("ERR x"), `error:"ERR x"`},
		{BulkErrorValue("E"), `bulkerror:"E"`},
		{BulkString("a\nb"), `"a\nb"`},
		{Int(-3), `int:-3`},
		{Double(1.5), `double:1.5`},
		{Double(math.Inf(-1)), `double:-inf`},
		{Bool(true), `true`},
		{NullArray(), `null`},
		{BigNumber("12"), `big:"12"`},
		{Verbatim("txt", "hi"), `verbatim:"txt":"hi"`},
		{ArrayOf(Int(1), BulkString("a")), `[int:1 "a"]`},
		{SetOf(Int(1)), `set{int:1}`},
		{PushOf(Int(1)), `push[int:1]`},
		{MapOf(BulkString("k"), NullValue(), Int(1), Int(2)), `map{"k": null, int:1: int:2}`},
		{MapOf(BulkString("k")), `map{"k": <missing>}`},
		{Value{Kind: KindAttribute, elems: []Value{Int(1), Int(2)}}, `attribute{int:1: int:2}`},
		{Int(1).WithAttrs(BulkString("ttl"), Int(3)), `attrs{"ttl": int:3} int:1`},
		{Value{}, `invalid(Invalid)`},
		{Value{Kind: 77}, `invalid(Kind(77))`},
		{BulkString(strings.Repeat("x", 70)), `"` + strings.Repeat("x", 64) + `"...(+6 bytes)`},
	}
	for _, tc := range cases {
		if got := tc.v.String(); got != tc.want {
			t.Errorf("String() = %s, want %s", got, tc.want)
		}
	}
	long := make([]Value, 20)
	for i := range long {
		long[i] = Int(int64(i))
	}
	if got := ArrayOf(long...).String(); !strings.HasSuffix(got, "int:15 ...(+4 more)]") {
		t.Errorf("long array rendered as %s", got)
	}
	// A cyclic value (which the rest of the package does not support)
	// must still render without recursing forever.
	cyc := make([]Value, 1)
	cyc[0] = Value{Kind: KindArray, elems: cyc}
	if got := cyc[0].String(); !strings.Contains(got, "...") || len(got) > 100 {
		t.Errorf("cyclic value rendered as %s", got)
	}
	// Deterministic.
	v := MapOf(Double(math.NaN()), SetOf(Bool(false)))
	if v.String() != v.String() {
		t.Error("String is not deterministic")
	}
}

func TestConstructors(t *testing.T) {
	if v := BulkStrings("a", "b"); !Equal(v, ArrayOf(BulkString("a"), BulkString("b"))) {
		t.Errorf("BulkStrings = %v", v)
	}
	if v := Verbatim("markdown", "x"); string(v.Format[:]) != "mar" {
		t.Errorf("Verbatim format = %q", v.Format)
	}
	b := []byte("shared")
	if v := Bulk(b); &v.Str[0] != &b[0] {
		t.Error("Bulk copied its argument")
	}
	elems := []Value{Int(1)}
	if v := ArrayOf(elems...); &v.elems[0] != &elems[0] {
		t.Error("ArrayOf copied its argument")
	}
	orig := Int(1)
	with := orig.WithAttrs(Int(2), Int(3))
	if orig.attrs != nil || with.Attrs().Len() != 2 {
		t.Error("WithAttrs modified its receiver or lost attributes")
	}
	if NullValue().NullForm != NullFormRESP3 || NullBulk().NullForm != NullFormBulk || NullArray().NullForm != NullFormArray {
		t.Error("null constructors record the wrong form")
	}
}
