package resp

import (
	"bytes"
	"iter"
	"math"
	"slices"
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
//	KindArray, KindSet, KindPush       elements: Len, Elem, All
//	KindMap                            elements, flattened: key, value, key, value, ...
//
// Attrs returns the RESP3 attributes that arrived immediately before the
// value, flattened the same way as a map. Fields not listed for a Kind are
// left zero by Parse and ignored by Equal and AppendValue.
//
// The elements of an aggregate are read with Len, Elem and All, whether
// the value was built with the constructors (ArrayOf, MapOf, ...) or
// parsed. A parsed aggregate keeps its elements in the compact storage
// described at Parse and decodes each one when it is read, so a reply
// costs about its wire size however many elements it has.
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

	// elems holds the children of an aggregate built by a constructor.
	elems []Value
	// attrs holds the attributes given to WithAttrs, flattened.
	attrs []Value
	// ent is the tape entry (see tape.go) of a parsed value that has
	// elements or attributes: an attribute entry, if any, then the value's
	// own entry. The elements and attributes are decoded from it.
	ent []byte
	// mem is the storage Parse and Reader.Read decode into. Only a Value
	// that was their destination has one; elements never do.
	mem *store
}

// store is the reusable backing memory of a parsed Value: the tape of the
// whole value, which every ent and every Str of the tree points into.
type store struct {
	tape []byte
}

// reserve makes sure the tape can hold n bytes. Growth at least doubles
// so that slowly growing replies reallocate only logarithmically often.
func (m *store) reserve(n int) {
	if cap(m.tape) < n {
		m.tape = make([]byte, 0, max(n, 2*cap(m.tape)))
	}
}

// Reset makes *v the zero Value, ready to be a destination of Parse or
// Reader.Read again. It keeps the storage *v owns for reuse when that
// storage holds at most keep bytes, and drops it otherwise, so that a
// recycled Value does not pin the memory of one large reply. Values that
// share *v's storage (copies of it and its elements) become invalid.
func (v *Value) Reset(keep int) {
	m := v.mem
	*v = Value{}
	if m != nil && cap(m.tape) <= keep {
		v.mem = m
	}
}

// StorageSize returns the capacity in bytes of the storage *v owns as a
// destination of Parse or Reader.Read: about the wire size of the largest
// value it held since its storage was last dropped (see Reset). It is 0
// for a Value that owns none.
func (v *Value) StorageSize() int {
	if v.mem == nil {
		return 0
	}
	return cap(v.mem.tape)
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
	return Value{Kind: KindArray, elems: elems}
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

// ArrayOf returns a KindArray value whose elements are elems itself, not
// a copy.
func ArrayOf(elems ...Value) Value {
	return Value{Kind: KindArray, elems: elems}
}

// SetOf returns a KindSet value whose elements are elems itself.
func SetOf(elems ...Value) Value {
	return Value{Kind: KindSet, elems: elems}
}

// PushOf returns a KindPush value whose elements are elems itself, for
// example PushOf(BulkString("message"), BulkString("ch"), BulkString("hi")).
func PushOf(elems ...Value) Value {
	return Value{Kind: KindPush, elems: elems}
}

// MapOf returns a KindMap value whose elements are kv itself: key, value,
// key, value, ... An odd count is completed with a null value when
// encoded.
func MapOf(kv ...Value) Value {
	return Value{Kind: KindMap, elems: kv}
}

// WithAttrs returns a copy of v carrying the RESP3 attributes kv (key,
// value, key, value, ...) itself, replacing any it had.
func (v Value) WithAttrs(kv ...Value) Value {
	v.attrs = kv
	if len(v.ent) > 0 && v.ent[0] == tagAttrs && v.Kind != KindAttribute {
		// Drop the parsed attributes; keep the value's own entry.
		v.ent = v.ent[attrsEnd(v.ent, 0):]
	}
	return v
}

// Len returns the number of elements of an aggregate value (for a map or
// an attribute value, keys and values both count), and 0 for other kinds.
// It does not allocate.
func (v Value) Len() int {
	if !v.Kind.IsAggregate() {
		return 0
	}
	if v.ent == nil {
		return len(v.elems)
	}
	a, ok := v.aggregate()
	if !ok {
		return 0
	}
	return a.n
}

// Elem returns element i of an aggregate value: Elem(0) through
// Elem(Len()-1). It panics if i is out of that range. A parsed element is
// decoded from its parent's storage in a few steps whatever i is; it
// shares that storage (see Parse). Use All to visit every element.
func (v Value) Elem(i int) Value {
	if !v.Kind.IsAggregate() {
		panic("resp: Elem of a " + v.Kind.String() + " value")
	}
	if v.ent == nil {
		return v.elems[i]
	}
	a, ok := v.aggregate()
	if !ok || i < 0 || i >= a.n {
		panic("resp: Elem(" + strconv.Itoa(i) + ") out of range [0, " + strconv.Itoa(a.n) + ")")
	}
	var e Value
	decodeAt(v.ent, a.elemAt(v.ent, i), &e)
	return e
}

// All returns an iterator over the elements of an aggregate value, in
// order, with their index: for i, e := range v.All() { ... }. It yields
// nothing for other kinds.
func (v Value) All() iter.Seq2[int, Value] {
	return func(yield func(int, Value) bool) {
		it := v.elements()
		var tmp Value
		for i := 0; ; i++ {
			e := it.next(&tmp)
			if e == nil || !yield(i, *e) {
				return
			}
		}
	}
}

// AppendElems appends the elements of an aggregate value to dst, in order, and returns the
// extended slice; for other kinds it returns dst unchanged. Parsed elements share v's storage,
// as Elem's do. It walks the elements once, where a call of Elem per element locates each
// anew: to read a short aggregate such as a RESP3 pair, pass a small array's slice, which
// spares the allocation. Every element becomes a whole Value, far larger than its place in
// the parsed storage, so check Len first when the reply's shape is not yet known:
//
//	var buf [2]resp.Value
//	if v.Len() == 2 {
//		pair := v.AppendElems(buf[:0])
//		...
//	}
func (v *Value) AppendElems(dst []Value) []Value {
	it := v.elements()
	dst = slices.Grow(dst, it.left)
	for it.left > 0 {
		dst = dst[:len(dst)+1]
		if e := it.next(&dst[len(dst)-1]); e != &dst[len(dst)-1] {
			dst[len(dst)-1] = *e
		}
	}
	return dst
}

// Attrs returns the RESP3 attributes attached to v as a KindAttribute
// value whose elements are the flattened key/value pairs (read them with
// Len, Elem and All), or the zero Value, whose Len is 0, when v has none.
func (v Value) Attrs() Value {
	if len(v.attrs) > 0 {
		return Value{Kind: KindAttribute, elems: v.attrs}
	}
	if v.hasParsedAttrs() {
		end := attrsEnd(v.ent, 0)
		return Value{Kind: KindAttribute, ent: v.ent[:end:end]}
	}
	return Value{}
}

// attrLen returns the number of attribute entries of v.
func (v *Value) attrLen() int {
	if len(v.attrs) > 0 {
		return len(v.attrs)
	}
	if v.hasParsedAttrs() {
		return u32(v.ent, 1)
	}
	return 0
}

// hasParsedAttrs reports whether ent begins with a non-empty attribute
// entry belonging to v.
func (v *Value) hasParsedAttrs() bool {
	return len(v.ent) > 0 && v.ent[0] == tagAttrs && v.Kind != KindAttribute && u32(v.ent, 1) > 0
}

// aggregate describes the aggregate entry of a parsed value: its own
// entry, after any attributes. It reports false when ent holds no
// aggregate (a Kind changed by hand).
func (v *Value) aggregate() (aggregate, bool) {
	t := v.ent
	p := 0
	if t[0] == tagAttrs && v.Kind != KindAttribute {
		p = attrsEnd(t, 0)
	}
	if p >= len(t) || !isAggregateTag(t[p]) {
		return aggregate{}, false
	}
	return aggregateAt(t, p), true
}

// elements is an iterator over the elements of an aggregate, built or
// parsed, that allocates nothing.
type elements struct {
	built []Value
	t     []byte
	p     int
	left  int
}

func (v *Value) elements() elements {
	if !v.Kind.IsAggregate() {
		return elements{}
	}
	if v.ent == nil {
		return elements{built: v.elems, left: len(v.elems)}
	}
	a, ok := v.aggregate()
	if !ok {
		return elements{}
	}
	return elements{t: v.ent, p: a.body, left: a.n}
}

// next returns the next element, or nil at the end. A built element is
// returned in place; a parsed one is decoded into *tmp.
func (it *elements) next(tmp *Value) *Value {
	if it.left == 0 {
		return nil
	}
	it.left--
	if it.t == nil {
		e := &it.built[0]
		it.built = it.built[1:]
		return e
	}
	it.p = decodeAt(it.t, it.p, tmp)
	return tmp
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
// the same payload for that Kind (see Value), and pairwise Equal elements
// and attributes in the same order. Floats compare with ==, except that
// NaN equals NaN. NullForm is ignored, so every null equals every other
// null, and no attributes equal empty attributes. A parsed value and a
// built one compare by content.
func Equal(a, b Value) bool {
	return equal(&a, &b)
}

func equal(a, b *Value) bool {
	if a.Kind != b.Kind || a.attrLen() != b.attrLen() {
		return false
	}
	if a.attrLen() > 0 {
		x, y := a.Attrs(), b.Attrs()
		if !equalElements(&x, &y) {
			return false
		}
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
		return equalElements(a, b)
	}
	return true
}

func equalElements(a, b *Value) bool {
	if a.Len() != b.Len() {
		return false
	}
	x, y := a.elements(), b.elements()
	var tx, ty Value
	for {
		ex, ey := x.next(&tx), y.next(&ty)
		if ex == nil || ey == nil {
			return ex == nil && ey == nil
		}
		if !equal(ex, ey) {
			return false
		}
	}
}

// Clone returns a deep copy of v that shares no memory with v or with any
// buffer: it stays valid however v, its storage, or the slices it was
// built from are reused later. Clone allocates at most two blocks (one for
// the nested Values built with constructors, one for all bytes) regardless
// of the tree's size; a clone of a parsed value keeps the compact form, so
// it costs about the value's wire size.
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
	*n += len(v.Str) + len(v.ent)
	*nodes += len(v.elems) + len(v.attrs)
	for i := range v.elems {
		countTree(&v.elems[i], nodes, n)
	}
	for i := range v.attrs {
		countTree(&v.attrs[i], nodes, n)
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
	dst.Str = c.bytes(src.Str)
	dst.ent = c.bytes(src.ent)
	dst.elems = c.copySlice(src.elems)
	dst.attrs = c.copySlice(src.attrs)
}

func (c *cloner) bytes(src []byte) []byte {
	if src == nil {
		return nil
	}
	k := len(src)
	out := c.arena[:k:k]
	copy(out, src)
	c.arena = c.arena[k:]
	return out
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

func appendDebugList(dst []byte, open, close string, v *Value, pairs bool, depth int) []byte {
	dst = append(dst, open...)
	n := v.Len()
	if depth >= debugMaxDepth {
		if n > 0 {
			dst = append(dst, "..."...)
		}
		return append(dst, close...)
	}
	it := v.elements()
	var tmp Value
	for i := 0; ; i++ {
		e := it.next(&tmp)
		if e == nil {
			break
		}
		if i == debugMaxElems {
			dst = append(dst, " ...(+"...)
			dst = strconv.AppendInt(dst, int64(n-i), 10)
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
		dst = appendDebug(dst, e, depth+1)
	}
	if pairs && n%2 == 1 && n <= debugMaxElems {
		dst = append(dst, ": <missing>"...)
	}
	return append(dst, close...)
}

func appendDebug(dst []byte, v *Value, depth int) []byte {
	if v.attrLen() > 0 {
		a := v.Attrs()
		dst = appendDebugList(dst, "attrs{", "} ", &a, true, depth)
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
		dst = appendDebugList(dst, "[", "]", v, false, depth)
	case KindSet:
		dst = appendDebugList(dst, "set{", "}", v, false, depth)
	case KindPush:
		dst = appendDebugList(dst, "push[", "]", v, false, depth)
	case KindMap:
		dst = appendDebugList(dst, "map{", "}", v, true, depth)
	case KindAttribute:
		dst = appendDebugList(dst, "attribute{", "}", v, true, depth)
	default:
		dst = append(dst, "invalid("...)
		dst = append(dst, v.Kind.String()...)
		dst = append(dst, ')')
	}
	return dst
}
