package resp

import (
	"bytes"
	"math"
	"strconv"
)

// Value is one RESP value: a reply, an element of a reply, or a command
// argument. Which fields are meaningful depends on Kind:
//
//	KindSimpleString, KindSimpleError,
//	KindBulkString, KindBulkError      Str
//	KindBigNumber                      Str (decimal digits, optional leading '-')
//	KindVerbatimString                 Format and Str (the text after "fmt:")
//	KindInteger                        Int
//	KindDouble                         Float
//	KindBoolean                        Bool
//	KindNull                           NullForm
//	KindArray, KindSet, KindPush       Elems
//	KindMap                            Elems, flattened: key, value, key, value, ...
//
// Attrs holds the RESP3 attributes that arrived immediately before the
// value, flattened the same way as a map; it is nil when there were none.
// Fields not listed for a Kind are left zero by Parse and ignored by
// Equal and AppendValue.
//
// A Value filled by Parse or Reader.Read refers to storage owned by that
// Value; see Parse for the exact aliasing rules. A Value built with the
// constructors in this package refers to the caller's slices instead.
// Values must be acyclic: an aggregate must not contain itself.
type Value struct {
	// Kind is the RESP type of the value.
	Kind Kind
	// NullForm records the wire form of a KindNull value.
	NullForm NullForm
	// Bool is the payload of a KindBoolean value.
	Bool bool
	// Format is the three-byte format of a KindVerbatimString value, such
	// as "txt" or "mkd".
	Format [3]byte
	// Int is the payload of a KindInteger value.
	Int int64
	// Float is the payload of a KindDouble value; it may be ±Inf or NaN.
	Float float64
	// Str is the payload of string-like kinds (see the table above).
	Str []byte
	// Elems holds the children of aggregate kinds.
	Elems []Value
	// Attrs holds the RESP3 attributes attached to this value, as
	// flattened key/value pairs.
	Attrs []Value

	// mem is the storage Parse copies payloads and children into. Only a
	// Value that was the destination of Parse has one; children never do.
	mem *store
}

// store is the reusable backing memory of a parsed Value: one pool of
// child Values that every Elems and Attrs slice of the tree is carved
// from, and one byte arena that every Str slice is carved from.
type store struct {
	nodes []Value
	arena []byte
	used  int // pool slots written by the last fill
}

// reserve makes sure the pool and arena can hold nodes Values and n bytes.
// Growth at least doubles so that slowly growing replies reallocate only
// logarithmically often.
func (m *store) reserve(nodes, n int) {
	if cap(m.nodes) < nodes {
		m.nodes = make([]Value, max(nodes, 2*cap(m.nodes)))
		m.used = 0
	}
	if cap(m.arena) < n {
		m.arena = make([]byte, max(n, 2*cap(m.arena)))
	}
	m.nodes = m.nodes[:cap(m.nodes)]
	m.arena = m.arena[:cap(m.arena)]
}

// SimpleString returns a KindSimpleString value. CR and LF cannot be sent
// in a simple string; AppendValue replaces them with spaces.
func SimpleString(s string) Value {
	return Value{Kind: KindSimpleString, Str: []byte(s)}
}

// ErrorValue returns a KindSimpleError value with message msg, for example
// "ERR unknown command" or "MOVED 3999 127.0.0.1:6381". CR and LF are
// replaced with spaces when encoded.
func ErrorValue(msg string) Value {
	return Value{Kind: KindSimpleError, Str: []byte(msg)}
}

// BulkErrorValue returns a KindBulkError value with message msg.
func BulkErrorValue(msg string) Value {
	return Value{Kind: KindBulkError, Str: []byte(msg)}
}

// Bulk returns a KindBulkString value whose Str is b itself (not a copy).
// A nil b is an empty bulk string, not a null; use NullBulk for that.
func Bulk(b []byte) Value {
	return Value{Kind: KindBulkString, Str: b}
}

// BulkString returns a KindBulkString value holding a copy of s.
func BulkString(s string) Value {
	return Value{Kind: KindBulkString, Str: []byte(s)}
}

// BulkStrings returns a KindArray of bulk strings, one per element of ss.
func BulkStrings(ss ...string) Value {
	elems := make([]Value, len(ss))
	for i, s := range ss {
		elems[i] = BulkString(s)
	}
	return Value{Kind: KindArray, Elems: elems}
}

// Int returns a KindInteger value.
func Int(n int64) Value {
	return Value{Kind: KindInteger, Int: n}
}

// Double returns a KindDouble value.
func Double(f float64) Value {
	return Value{Kind: KindDouble, Float: f}
}

// Bool returns a KindBoolean value.
func Bool(b bool) Value {
	return Value{Kind: KindBoolean, Bool: b}
}

// BigNumber returns a KindBigNumber value with decimal text s, which
// should be digits with an optional leading '-'; AppendValue writes it
// unchecked.
func BigNumber(s string) Value {
	return Value{Kind: KindBigNumber, Str: []byte(s)}
}

// Verbatim returns a KindVerbatimString value. format should be exactly
// three bytes such as "txt"; a longer one is truncated and a shorter one
// padded with spaces.
func Verbatim(format, text string) Value {
	v := Value{Kind: KindVerbatimString, Str: []byte(text), Format: [3]byte{' ', ' ', ' '}}
	copy(v.Format[:], format)
	return v
}

// NullValue returns the RESP3 null, written as "_" in RESP3 and as the
// null bulk string "$-1" in RESP2.
func NullValue() Value {
	return Value{Kind: KindNull, NullForm: NullFormRESP3}
}

// NullBulk returns a null that was (or is to be) sent as the RESP2 null
// bulk string "$-1". It is written as "_" in RESP3.
func NullBulk() Value {
	return Value{Kind: KindNull, NullForm: NullFormBulk}
}

// NullArray returns a null that was (or is to be) sent as the RESP2 null
// array "*-1". It is written as "_" in RESP3.
func NullArray() Value {
	return Value{Kind: KindNull, NullForm: NullFormArray}
}

// ArrayOf returns a KindArray value whose Elems is elems itself.
func ArrayOf(elems ...Value) Value {
	return Value{Kind: KindArray, Elems: elems}
}

// SetOf returns a KindSet value whose Elems is elems itself.
func SetOf(elems ...Value) Value {
	return Value{Kind: KindSet, Elems: elems}
}

// PushOf returns a KindPush value whose Elems is elems itself, for
// example PushOf(BulkString("message"), BulkString("ch"), BulkString("hi")).
func PushOf(elems ...Value) Value {
	return Value{Kind: KindPush, Elems: elems}
}

// MapOf returns a KindMap value whose Elems is kv itself: key, value,
// key, value, ... An odd count is completed with a null value when
// encoded.
func MapOf(kv ...Value) Value {
	return Value{Kind: KindMap, Elems: kv}
}

// WithAttrs returns a copy of v carrying the RESP3 attributes kv (key,
// value, key, value, ...), replacing any it had.
func (v Value) WithAttrs(kv ...Value) Value {
	v.Attrs = kv
	return v
}

// IsNull reports whether v is a null of any form.
func (v Value) IsNull() bool { return v.Kind == KindNull }

// IsError reports whether v is a simple error or a bulk error.
func (v Value) IsError() bool {
	return v.Kind == KindSimpleError || v.Kind == KindBulkError
}

// ErrorMessage returns the full text of an error value, such as
// "WRONGPASS invalid username-password pair", or "" if v is not an error.
// (It is not called Error so that Value does not satisfy the error
// interface by accident.)
func (v Value) ErrorMessage() string {
	if !v.IsError() {
		return ""
	}
	return string(v.Str)
}

// ErrorCode returns the first word of an error value, the error code by
// Redis convention: "ERR", "WRONGTYPE", "MOVED", "LOADING", ... It returns
// "" if v is not an error.
func (v Value) ErrorCode() string {
	if !v.IsError() {
		return ""
	}
	return string(errorCode(v.Str))
}

// HasErrorCode reports whether v is an error whose code (see ErrorCode)
// is exactly code. It does not allocate.
func (v Value) HasErrorCode(code string) bool {
	return v.IsError() && string(errorCode(v.Str)) == code
}

func errorCode(msg []byte) []byte {
	if i := bytes.IndexByte(msg, ' '); i >= 0 {
		return msg[:i]
	}
	return msg
}

// Equal reports whether a and b represent the same value: the same Kind,
// the same payload for that Kind (see Value), and pairwise Equal Elems and
// Attrs in the same order. Floats compare with ==, except that NaN equals
// NaN. NullForm is ignored, so every null equals every other null, and a
// nil slice equals an empty one.
func Equal(a, b Value) bool {
	return equal(&a, &b)
}

func equal(a, b *Value) bool {
	if a.Kind != b.Kind || !equalSlice(a.Attrs, b.Attrs) {
		return false
	}
	switch a.Kind {
	case KindSimpleString, KindSimpleError, KindBulkString, KindBulkError, KindBigNumber:
		return bytes.Equal(a.Str, b.Str)
	case KindVerbatimString:
		return a.Format == b.Format && bytes.Equal(a.Str, b.Str)
	case KindInteger:
		return a.Int == b.Int
	case KindDouble:
		return a.Float == b.Float || (math.IsNaN(a.Float) && math.IsNaN(b.Float))
	case KindBoolean:
		return a.Bool == b.Bool
	case KindArray, KindMap, KindSet, KindPush, KindAttribute:
		return equalSlice(a.Elems, b.Elems)
	}
	return true
}

func equalSlice(a, b []Value) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !equal(&a[i], &b[i]) {
			return false
		}
	}
	return true
}

// Clone returns a deep copy of v that shares no memory with v or with any
// buffer: it stays valid however v, its storage, or the slices it was
// built from are reused later. Clone allocates at most two blocks (one for
// all nested Values, one for all bytes) regardless of the tree's size.
func (v Value) Clone() Value {
	var nodes, n int
	countTree(&v, &nodes, &n)
	c := cloner{}
	if nodes > 0 {
		c.nodes = make([]Value, nodes)
	}
	if n > 0 {
		c.arena = make([]byte, n)
	}
	var out Value
	c.copyValue(&out, &v)
	return out
}

func countTree(v *Value, nodes, n *int) {
	*n += len(v.Str)
	*nodes += len(v.Elems) + len(v.Attrs)
	for i := range v.Elems {
		countTree(&v.Elems[i], nodes, n)
	}
	for i := range v.Attrs {
		countTree(&v.Attrs[i], nodes, n)
	}
}

type cloner struct {
	nodes []Value
	arena []byte
}

func (c *cloner) copyValue(dst, src *Value) {
	*dst = Value{
		Kind:     src.Kind,
		NullForm: src.NullForm,
		Bool:     src.Bool,
		Format:   src.Format,
		Int:      src.Int,
		Float:    src.Float,
	}
	if src.Str != nil {
		k := len(src.Str)
		dst.Str = c.arena[:k:k]
		copy(dst.Str, src.Str)
		c.arena = c.arena[k:]
	}
	dst.Elems = c.copySlice(src.Elems)
	dst.Attrs = c.copySlice(src.Attrs)
}

func (c *cloner) copySlice(src []Value) []Value {
	if src == nil {
		return nil
	}
	k := len(src)
	out := c.nodes[:k:k]
	c.nodes = c.nodes[k:]
	for i := range src {
		c.copyValue(&out[i], &src[i])
	}
	return out
}

// Limits on the debug rendering of String.
const (
	debugMaxStr   = 64
	debugMaxElems = 16
	debugMaxDepth = 8
)

// String returns a short, deterministic, human-readable rendering of v
// for logs and test failures, for example
//
//	["SET" int:1 map{"k": null} attrs{"ttl": int:3} double:1.5]
//
// Long strings, long aggregates and deep nesting are elided, and String
// never panics, whatever the fields hold.
func (v Value) String() string {
	return string(appendDebug(nil, &v, 0))
}

func appendDebugStr(dst []byte, s []byte) []byte {
	if len(s) <= debugMaxStr {
		return strconv.AppendQuote(dst, string(s))
	}
	dst = strconv.AppendQuote(dst, string(s[:debugMaxStr]))
	dst = append(dst, "...(+"...)
	dst = strconv.AppendInt(dst, int64(len(s)-debugMaxStr), 10)
	return append(dst, " bytes)"...)
}

func appendDebugList(dst []byte, open, close string, elems []Value, pairs bool, depth int) []byte {
	dst = append(dst, open...)
	if depth >= debugMaxDepth {
		if len(elems) > 0 {
			dst = append(dst, "..."...)
		}
		return append(dst, close...)
	}
	for i := range elems {
		if i == debugMaxElems {
			dst = append(dst, " ...(+"...)
			dst = strconv.AppendInt(dst, int64(len(elems)-i), 10)
			dst = append(dst, " more)"...)
			break
		}
		if i > 0 {
			if pairs && i%2 == 1 {
				dst = append(dst, ": "...)
			} else if pairs {
				dst = append(dst, ", "...)
			} else {
				dst = append(dst, ' ')
			}
		}
		dst = appendDebug(dst, &elems[i], depth+1)
	}
	if pairs && len(elems)%2 == 1 && len(elems) <= debugMaxElems {
		dst = append(dst, ": <missing>"...)
	}
	return append(dst, close...)
}

func appendDebug(dst []byte, v *Value, depth int) []byte {
	if len(v.Attrs) > 0 {
		dst = appendDebugList(dst, "attrs{", "} ", v.Attrs, true, depth)
	}
	switch v.Kind {
	case KindSimpleString:
		dst = append(dst, "simple:"...)
		dst = appendDebugStr(dst, v.Str)
	case KindSimpleError:
		dst = append(dst, "error:"...)
		dst = appendDebugStr(dst, v.Str)
	case KindBulkError:
		dst = append(dst, "bulkerror:"...)
		dst = appendDebugStr(dst, v.Str)
	case KindBulkString:
		dst = appendDebugStr(dst, v.Str)
	case KindBigNumber:
		dst = append(dst, "big:"...)
		dst = appendDebugStr(dst, v.Str)
	case KindVerbatimString:
		dst = append(dst, "verbatim:"...)
		dst = appendDebugStr(dst, v.Format[:])
		dst = append(dst, ':')
		dst = appendDebugStr(dst, v.Str)
	case KindInteger:
		dst = append(dst, "int:"...)
		dst = strconv.AppendInt(dst, v.Int, 10)
	case KindDouble:
		dst = append(dst, "double:"...)
		dst = appendDouble(dst, v.Float)
	case KindBoolean:
		dst = strconv.AppendBool(dst, v.Bool)
	case KindNull:
		dst = append(dst, "null"...)
	case KindArray:
		dst = appendDebugList(dst, "[", "]", v.Elems, false, depth)
	case KindSet:
		dst = appendDebugList(dst, "set{", "}", v.Elems, false, depth)
	case KindPush:
		dst = appendDebugList(dst, "push[", "]", v.Elems, false, depth)
	case KindMap:
		dst = appendDebugList(dst, "map{", "}", v.Elems, true, depth)
	case KindAttribute:
		dst = appendDebugList(dst, "attribute{", "}", v.Elems, true, depth)
	default:
		dst = append(dst, "invalid("...)
		dst = append(dst, v.Kind.String()...)
		dst = append(dst, ')')
	}
	return dst
}
