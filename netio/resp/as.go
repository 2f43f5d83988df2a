package resp

import (
	"errors"
	"math"
	"strconv"
)

// Decoding helpers for raw replies (scripts, Do): each reads a value as one Go type, accepting
// the forms RESP2 and RESP3 give the same data (a RESP3 double or a RESP2 numeric string for
// a number, a RESP3 map or a RESP2 flat array for a map, ...), and fails with a *KindError for
// any other shape. They never panic.

// ErrNull is wrapped by the *KindError of an As method that met a null where it needed a
// value: errors.Is(err, ErrNull) tells a missing key from a wrong shape.
var ErrNull = errors.New("respire: null reply")

// KindError reports a value of a shape an As method cannot read.
type KindError struct {
	// Want names what the method reads ("an integer", "a map", ...).
	Want string
	// Got is the kind of the value met.
	Got Kind
	// Reason, when set, says what was wrong with a value of an acceptable kind (a string that
	// is not a number, a flat array of odd length).
	Reason string
}

// Error returns "respire: want an integer, got a BulkString reply: not a number". It never
// includes the value itself, which may be user data.
func (e *KindError) Error() string {
	msg := "respire: want " + e.Want + ", got a " + e.Got.String() + " reply"
	if e.Reason != "" {
		msg += ": " + e.Reason
	}
	return msg
}

// Unwrap returns ErrNull for a null value.
func (e *KindError) Unwrap() error {
	if e.Got == KindNull {
		return ErrNull
	}
	return nil
}

func kindErr(want string, v *Value, reason string) error {
	return &KindError{Want: want, Got: v.Kind, Reason: reason}
}

// isText reports whether v carries text in Str.
func (v *Value) isText() bool {
	switch v.Kind {
	case KindSimpleString, KindBulkString, KindVerbatimString, KindBigNumber:
		return true
	}
	return false
}

// AsString returns the text of a simple, bulk or verbatim string or of a big number, or the
// decimal text of an integer, a double or a boolean (1 or 0).
func (v Value) AsString() (string, error) {
	switch {
	case v.isText():
		return string(v.Str), nil
	case v.Kind == KindInteger:
		return strconv.FormatInt(v.Int, 10), nil
	case v.Kind == KindDouble:
		return strconv.FormatFloat(v.Float, 'f', -1, 64), nil
	case v.Kind == KindBoolean:
		if v.Bool {
			return "1", nil
		}
		return "0", nil
	}
	return "", kindErr("a string", &v, "")
}

// AsBytes is AsString returning a copy of the bytes.
func (v Value) AsBytes() ([]byte, error) {
	if v.isText() {
		return append([]byte(nil), v.Str...), nil
	}
	s, err := v.AsString()
	if err != nil {
		return nil, kindErr("bytes", &v, "")
	}
	return []byte(s), nil
}

// AsInt64 returns an integer, or a string, a double or a big number holding an integer that
// fits in 64 bits (RESP2 sends many numbers as strings).
func (v Value) AsInt64() (int64, error) {
	switch {
	case v.Kind == KindInteger:
		return v.Int, nil
	case v.Kind == KindDouble:
		if v.Float == math.Trunc(v.Float) && math.Abs(v.Float) < 1<<63 {
			return int64(v.Float), nil
		}
		return 0, kindErr("an integer", &v, "not a whole number")
	case v.isText():
		n, err := strconv.ParseInt(string(v.Str), 10, 64)
		if err != nil {
			return 0, kindErr("an integer", &v, "not an integer")
		}
		return n, nil
	}
	return 0, kindErr("an integer", &v, "")
}

// AsFloat64 returns a double, an integer, or a string holding a number ("inf" and "-inf"
// included, as Redis writes infinite scores).
func (v Value) AsFloat64() (float64, error) {
	switch {
	case v.Kind == KindDouble:
		return v.Float, nil
	case v.Kind == KindInteger:
		return float64(v.Int), nil
	case v.isText():
		if f, ok := shortDouble(v.Str); ok {
			return f, nil
		}
		f, err := strconv.ParseFloat(string(v.Str), 64)
		if err != nil {
			return 0, kindErr("a number", &v, "not a number")
		}
		return f, nil
	}
	return 0, kindErr("a number", &v, "")
}

// AsBool returns a RESP3 boolean, or an integer that is 0 or 1 (RESP2's booleans).
func (v Value) AsBool() (bool, error) {
	switch v.Kind {
	case KindBoolean:
		return v.Bool, nil
	case KindInteger:
		if v.Int == 0 || v.Int == 1 {
			return v.Int == 1, nil
		}
		return false, kindErr("a boolean", &v, "an integer other than 0 and 1")
	}
	return false, kindErr("a boolean", &v, "")
}

// isList reports whether v is an array, a set or a push.
func (v *Value) isList() bool {
	return v.Kind == KindArray || v.Kind == KindSet || v.Kind == KindPush
}

// AsValues returns the elements of an array, a set or a push (nil for a null). They share v's
// storage: Clone what must outlive it.
func (v Value) AsValues() ([]Value, error) {
	if v.Kind == KindNull {
		return nil, nil
	}
	if !v.isList() {
		return nil, kindErr("a list", &v, "")
	}
	out := make([]Value, 0, v.Len())
	for _, e := range v.All() {
		out = append(out, e)
	}
	return out, nil
}

// AsStrings returns the elements of an array, a set or a push as strings (see AsString); a
// null list is nil and a null element is "".
func (v Value) AsStrings() ([]string, error) {
	if v.Kind == KindNull {
		return nil, nil
	}
	if !v.isList() {
		return nil, kindErr("a list of strings", &v, "")
	}
	out := make([]string, 0, v.Len())
	for _, e := range v.All() {
		if e.Kind == KindNull {
			out = append(out, "")
			continue
		}
		s, err := e.AsString()
		if err != nil {
			return nil, kindErr("a list of strings", &v, "an element is a "+e.Kind.String())
		}
		out = append(out, s)
	}
	return out, nil
}

// AsInt64s returns the elements of a list as integers (see AsInt64).
func (v Value) AsInt64s() ([]int64, error) {
	if v.Kind == KindNull {
		return nil, nil
	}
	if !v.isList() {
		return nil, kindErr("a list of integers", &v, "")
	}
	out := make([]int64, 0, v.Len())
	for _, e := range v.All() {
		n, err := e.AsInt64()
		if err != nil {
			return nil, kindErr("a list of integers", &v, "an element is not an integer")
		}
		out = append(out, n)
	}
	return out, nil
}

// pairs checks that v is a map, or an array of even length (a RESP2 map).
func (v *Value) pairs(want string) error {
	switch {
	case v.Kind == KindMap:
		return nil
	case v.Kind == KindArray && v.Len()%2 == 0:
		return nil
	case v.Kind == KindArray:
		return kindErr(want, v, "an array of odd length")
	}
	return kindErr(want, v, "")
}

// AsMap returns a RESP3 map, or a RESP2 flat array of key/value pairs, keyed by the keys' text
// (see AsString; a later duplicate key wins). The values share v's storage.
func (v Value) AsMap() (map[string]Value, error) {
	if err := v.pairs("a map"); err != nil {
		return nil, err
	}
	out := make(map[string]Value, v.Len()/2)
	var k string
	for i, e := range v.All() {
		if i%2 == 0 {
			s, err := e.AsString()
			if err != nil {
				return nil, kindErr("a map", &v, "a key is a "+e.Kind.String())
			}
			k = s
			continue
		}
		out[k] = e
	}
	return out, nil
}

// AsStringMap is AsMap with the values read as strings (a null value is "").
func (v Value) AsStringMap() (map[string]string, error) {
	if err := v.pairs("a map of strings"); err != nil {
		return nil, err
	}
	out := make(map[string]string, v.Len()/2)
	var k string
	for i, e := range v.All() {
		if e.Kind == KindNull && i%2 == 1 {
			out[k] = ""
			continue
		}
		s, err := e.AsString()
		if err != nil {
			return nil, kindErr("a map of strings", &v, "an element is a "+e.Kind.String())
		}
		if i%2 == 0 {
			k = s
		} else {
			out[k] = s
		}
	}
	return out, nil
}
