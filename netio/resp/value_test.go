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
	first, second := v.String(), v.String()
	if first != second {
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

func TestElementAccess(t *testing.T) {
	built := MapOf(BulkString("k"), ArrayOf(Int(1), NullValue()).WithAttrs(SimpleString("a"), Int(2)))
	var parsed Value
	if _, err := Parse(AppendValue(nil, built, 3), &parsed, nil); err != nil {
		t.Fatal(err)
	}
	for name, v := range map[string]Value{"built": built, "parsed": parsed} {
		if v.Len() != 2 || !Equal(v.Elem(0), BulkString("k")) {
			t.Errorf("%s: Len %d, Elem(0) %v", name, v.Len(), v.Elem(0))
		}
		inner := v.Elem(1)
		if inner.Len() != 2 || inner.Elem(1).Kind != KindNull || inner.Attrs().Len() != 2 || !Equal(inner.Attrs().Elem(1), Int(2)) {
			t.Errorf("%s: inner %v", name, inner)
		}
		if Int(1).Len() != 0 || v.Attrs().Len() != 0 || v.Attrs().Kind != KindInvalid {
			t.Errorf("%s: scalars and values without attributes have no elements", name)
		}
		for _, i := range []int{-1, 2} {
			func() {
				defer func() {
					if recover() == nil {
						t.Errorf("%s: Elem(%d) did not panic", name, i)
					}
				}()
				v.Elem(i)
			}()
		}
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: Elem of a scalar did not panic", name)
				}
			}()
			Int(1).Elem(0)
		}()
		// WithAttrs replaces parsed attributes too.
		if got := inner.WithAttrs(Int(7), Int(8)).Attrs(); got.Len() != 2 || !Equal(got.Elem(0), Int(7)) {
			t.Errorf("%s: WithAttrs gave %v", name, got)
		}
		if got := inner.WithAttrs(); got.Attrs().Len() != 0 || !Equal(got, ArrayOf(Int(1), NullValue())) {
			t.Errorf("%s: WithAttrs() kept attributes: %v", name, got)
		}
		// All stops when the loop does.
		n := 0
		for range v.All() {
			n++
			break
		}
		if n != 1 {
			t.Errorf("%s: All went on after break", name)
		}
	}
	// A Kind changed by hand never makes the accessors read past the storage.
	odd := parsed.Elem(0)
	odd.Kind = KindArray
	if odd.Len() != 0 || odd.String() != "[]" {
		t.Errorf("a scalar relabelled as an array: %d %s", odd.Len(), odd)
	}
	odd = parsed.Elem(1).Attrs()
	odd.Kind = KindArray
	if odd.Len() != 0 {
		t.Errorf("attributes relabelled as an array: %d", odd.Len())
	}
}

func TestResetAndStorageSize(t *testing.T) {
	var v Value
	if v.StorageSize() != 0 {
		t.Fatal("a zero Value owns storage")
	}
	if _, err := Parse([]byte("$5\r\nhello\r\n"), &v, nil); err != nil {
		t.Fatal(err)
	}
	size := v.StorageSize()
	if size < 7 {
		t.Fatalf("storage of %d bytes", size)
	}
	v.Reset(size)
	if v.Kind != KindInvalid || v.Str != nil || v.StorageSize() != size {
		t.Fatalf("Reset(keep) within the bound: %v, %d", v, v.StorageSize())
	}
	v.Reset(size - 1)
	if v.StorageSize() != 0 {
		t.Fatal("Reset kept storage above the bound")
	}
	// A parsed aggregate's clone is one block of bytes, no Values.
	if _, err := Parse([]byte("*3\r\n:1\r\n:2\r\n$3\r\nabc\r\n"), &v, nil); err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(10, func() { _ = v.Clone() }); n != 1 {
		t.Errorf("Clone of a parsed array allocated %.0f times, want 1", n)
	}
}
