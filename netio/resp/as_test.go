package resp

import (
	"errors"
	"math"
	"reflect"
	"testing"
)

// parsed returns the value parsed from wire, as a reply reaches the client.
func parsed(t *testing.T, wire string) Value {
	t.Helper()
	var v Value
	if _, err := Parse([]byte(wire), &v, nil); err != nil {
		t.Fatalf("%q: %v", wire, err)
	}
	return v
}

// TestAsReadsBothProtocols: each As method reads the RESP2 and the RESP3 form of the same
// data to the same Go value, on built and parsed values alike.
func TestAsReadsBothProtocols(t *testing.T) {
	for _, tc := range []struct {
		name   string
		values []Value
		read   func(Value) (any, error)
		want   any
	}{
		{"int", []Value{Int(42), BulkString("42"), SimpleString("42"), Double(42), BigNumber("42")},
			func(v Value) (any, error) { return v.AsInt64() }, int64(42)},
		{"float", []Value{Double(1.5), BulkString("1.5")}, func(v Value) (any, error) { return v.AsFloat64() }, 1.5},
		{"inf", []Value{Double(math.Inf(1)), BulkString("inf")}, func(v Value) (any, error) { return v.AsFloat64() }, math.Inf(1)},
		{"string", []Value{BulkString("x"), SimpleString("x"), Verbatim("txt", "x")}, func(v Value) (any, error) { return v.AsString() }, "x"},
		{"number as string", []Value{Int(7), BulkString("7"), Double(7)}, func(v Value) (any, error) { return v.AsString() }, "7"},
		{"bool", []Value{Bool(true), Int(1)}, func(v Value) (any, error) { return v.AsBool() }, true},
		{"bytes", []Value{BulkString("ab")}, func(v Value) (any, error) { return v.AsBytes() }, []byte("ab")},
		{"strings", []Value{BulkStrings("a", "b"), SetOf(BulkString("a"), SimpleString("b")), parsed(t, "*2\r\n$1\r\na\r\n$1\r\nb\r\n")},
			func(v Value) (any, error) { return v.AsStrings() }, []string{"a", "b"}},
		{"ints", []Value{ArrayOf(Int(1), BulkString("2")), parsed(t, "*2\r\n:1\r\n:2\r\n")}, func(v Value) (any, error) { return v.AsInt64s() }, []int64{1, 2}},
		{"string map", []Value{MapOf(BulkString("f"), BulkString("v")), BulkStrings("f", "v"), parsed(t, "%1\r\n$1\r\nf\r\n$1\r\nv\r\n"),
			parsed(t, "*2\r\n$1\r\nf\r\n$1\r\nv\r\n")}, func(v Value) (any, error) { return v.AsStringMap() }, map[string]string{"f": "v"}},
		{"map", []Value{MapOf(BulkString("n"), Int(1)), ArrayOf(BulkString("n"), Int(1)), parsed(t, "%1\r\n+n\r\n:1\r\n")},
			func(v Value) (any, error) {
				m, err := v.AsMap()
				if err != nil {
					return nil, err
				}
				return m["n"].AsInt64()
			}, int64(1)},
	} {
		for i, v := range tc.values {
			got, err := tc.read(v)
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Errorf("%s #%d (%s): %#v %v, want %#v", tc.name, i, v.Kind, got, err, tc.want)
			}
		}
	}
}

// TestAsWrongShape: the wrong shape fails with a *KindError that names both shapes and never
// the value; a null matches ErrNull.
func TestAsWrongShape(t *testing.T) {
	secret := "user-value-123"
	for _, tc := range []struct {
		name string
		err  error
		null bool
	}{
		{"int from text", func() error { _, err := BulkString(secret).AsInt64(); return err }(), false},
		{"int from array", func() error { _, err := BulkStrings("1").AsInt64(); return err }(), false},
		{"int from fraction", func() error { _, err := Double(1.5).AsInt64(); return err }(), false},
		{"float from text", func() error { _, err := BulkString(secret).AsFloat64(); return err }(), false},
		{"string from null", func() error { _, err := NullBulk().AsString(); return err }(), true},
		{"string from map", func() error { _, err := MapOf().AsString(); return err }(), false},
		{"bool from 2", func() error { _, err := Int(2).AsBool(); return err }(), false},
		{"strings from string", func() error { _, err := BulkString(secret).AsStrings(); return err }(), false},
		{"strings with a nested array", func() error { _, err := ArrayOf(BulkStrings("x")).AsStrings(); return err }(), false},
		{"map from odd array", func() error { _, err := BulkStrings(secret).AsMap(); return err }(), false},
		{"map from integer", func() error { _, err := Int(1).AsStringMap(); return err }(), false},
		{"map with a nested key", func() error { _, err := MapOf(BulkStrings("k"), Int(1)).AsMap(); return err }(), false},
		{"ints with text", func() error { _, err := BulkStrings(secret).AsInt64s(); return err }(), false},
		{"values from integer", func() error { _, err := Int(3).AsValues(); return err }(), false},
	} {
		var ke *KindError
		if !errors.As(tc.err, &ke) {
			t.Errorf("%s: %v, want a *KindError", tc.name, tc.err)
			continue
		}
		if errors.Is(tc.err, ErrNull) != tc.null {
			t.Errorf("%s: errors.Is(ErrNull) = %v", tc.name, !tc.null)
		}
		if msg := tc.err.Error(); len(msg) < 10 || msg[:9] != "respire: " || contains(msg, secret) {
			t.Errorf("%s: %q", tc.name, msg)
		}
	}
	if v, err := NullArray().AsStrings(); err != nil || v != nil {
		t.Errorf("a null list is an empty one: %v %v", v, err)
	}
	if v, err := ArrayOf(NullBulk(), BulkString("x")).AsStrings(); err != nil || !reflect.DeepEqual(v, []string{"", "x"}) {
		t.Errorf("a null element is empty: %v %v", v, err)
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}
