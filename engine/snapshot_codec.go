package engine

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"slices"
	"strconv"
	"unsafe"

	"github.com/cockroachdb/errors"
	"github.com/respire-go/respire/fsm"
)

// The state codec writes the machines' state as JSON and reads it back, so that a capture can
// carry a snapshot (snapshot.go). It walks the values by reflection, unexported fields included,
// so that it captures every field a machine has today or gains later: a hand-written codec
// would silently miss a new field, and the snapshot property test would be the only guard.
//
// The format follows the Go values:
//
//   - a struct is an object of its fields by name; scalar fields at their zero value and nil
//     references are left out;
//   - a slice or an array is an array (a nil slice is null); a map is an array of [key, value]
//     pairs sorted by the key's encoding, so that the output is deterministic;
//   - an error is {"error": its text}: machines keep errors only to report them, and decoding
//     gives back a *CapturedError with the same text;
//   - pointers keep their sharing. A value that a pointer elsewhere refers to is labelled where
//     it is written ({"#": id, "=": value}), and every pointer to it is a reference
//     ({"@": id}). A pointer to a value that lives inside another (a machine's allocator, shared
//     with its attempts) is always a reference; a value that only pointers reach (a machine, a
//     policy) is written, labelled, at the first pointer to it.
//
// Funcs, channels and interfaces other than error are refused: the machines hold none.

// CapturedError is an error read back from a capture or a snapshot: only its text survives. The
// machines keep errors only to report them, so their behaviour does not depend on the type.
type CapturedError struct {
	// Message is the original error's text.
	Message string
}

// Error returns the recorded text.
func (e *CapturedError) Error() string { return e.Message }

var (
	capturedErrorType = reflect.TypeFor[*CapturedError]()
	topicType         = reflect.TypeFor[fsm.Topic]()
)

// locKey names a location: an address and the type stored there.
type locKey struct {
	addr uintptr
	typ  reflect.Type
}

// stateEncoder is one encoding of a value graph.
type stateEncoder struct {
	buf []byte
	// topic renames topic names (a capture's pseudonyms), and errText rewrites error texts
	// (to replace the names they quote); nil keeps them.
	topic, errText func(string) string
	// pointed holds the targets of non-nil pointers; inPlace the locations reached as fields or
	// elements; heap the targets already scanned.
	pointed, inPlace, heap map[locKey]bool
	// written holds the pointer-only targets already written.
	written map[locKey]bool
	ids     map[locKey]int
	err     error
}

// encodeState appends the JSON of the value root points to to dst.
func encodeState(dst []byte, root any, topic, errText func(string) string) ([]byte, error) {
	v := reflect.ValueOf(root)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		return dst, errors.New("respire: snapshot: the root must be a non-nil pointer")
	}
	e := &stateEncoder{buf: dst, topic: topic, errText: errText, pointed: map[locKey]bool{}, inPlace: map[locKey]bool{},
		heap: map[locKey]bool{}, written: map[locKey]bool{}, ids: map[locKey]int{}}
	e.scan(v.Elem(), true)
	e.encode(v.Elem(), true)
	return e.buf, e.err
}

// field returns field i of the addressable struct v, usable even when unexported.
func field(v reflect.Value, i int) reflect.Value {
	f := v.Field(i)
	return reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem()
}

// addressable returns an addressable copy of v (a map's key or value).
func addressable(v reflect.Value) reflect.Value {
	c := reflect.New(v.Type()).Elem()
	c.Set(v)
	return c
}

// scan records the pointer targets and the in-place locations of the graph under v.
func (e *stateEncoder) scan(v reflect.Value, inPlace bool) {
	if inPlace && v.CanAddr() {
		e.inPlace[locKey{v.UnsafeAddr(), v.Type()}] = true
	}
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return
		}
		k := locKey{v.Pointer(), v.Type().Elem()}
		e.pointed[k] = true
		if !e.heap[k] {
			e.heap[k] = true
			e.scan(v.Elem(), false)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			e.scan(field(v, i), true)
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			e.scan(v.Index(i), true)
		}
	case reflect.Map:
		it := v.MapRange()
		for it.Next() {
			e.scan(addressable(it.Value()), false)
		}
	}
}

func (e *stateEncoder) id(k locKey) int {
	n, ok := e.ids[k]
	if !ok {
		n = len(e.ids) + 1
		e.ids[k] = n
	}
	return n
}

func (e *stateEncoder) fail(err error) {
	if e.err == nil {
		e.err = err
	}
}

// encode writes v, labelled when a pointer refers to it in place.
func (e *stateEncoder) encode(v reflect.Value, inPlace bool) {
	if inPlace && v.CanAddr() && v.Kind() != reflect.Pointer {
		k := locKey{v.UnsafeAddr(), v.Type()}
		if e.pointed[k] {
			e.buf = strconv.AppendInt(append(e.buf, `{"#":`...), int64(e.id(k)), 10)
			e.buf = append(e.buf, `,"=":`...)
			e.value(v)
			e.buf = append(e.buf, '}')
			return
		}
	}
	e.value(v)
}

func (e *stateEncoder) value(v reflect.Value) {
	switch v.Kind() {
	case reflect.Bool:
		e.buf = strconv.AppendBool(e.buf, v.Bool())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		e.buf = strconv.AppendInt(e.buf, v.Int(), 10)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		e.buf = strconv.AppendUint(e.buf, v.Uint(), 10)
	case reflect.Float32, reflect.Float64:
		f := v.Float()
		if math.IsNaN(f) || math.IsInf(f, 0) {
			e.buf = strconv.AppendQuote(e.buf, strconv.FormatFloat(f, 'g', -1, 64))
			return
		}
		e.buf = strconv.AppendFloat(e.buf, f, 'g', -1, 64)
	case reflect.String:
		e.str(v.String())
	case reflect.Pointer:
		e.pointer(v)
	case reflect.Struct:
		e.structure(v)
	case reflect.Slice:
		if v.IsNil() {
			e.buf = append(e.buf, "null"...)
			return
		}
		e.list(v)
	case reflect.Array:
		e.list(v)
	case reflect.Map:
		e.mapping(v)
	case reflect.Interface:
		if v.IsNil() {
			e.buf = append(e.buf, "null"...)
			return
		}
		err, ok := v.Interface().(error)
		if !ok {
			e.fail(errors.Newf("respire: snapshot: cannot encode a %s", v.Type()))
			e.buf = append(e.buf, "null"...)
			return
		}
		e.buf = append(e.buf, `{"error":`...)
		msg := err.Error()
		if e.errText != nil {
			msg = e.errText(msg)
		}
		e.str(msg)
		e.buf = append(e.buf, '}')
	default:
		e.fail(errors.Newf("respire: snapshot: cannot encode a %s", v.Type()))
		e.buf = append(e.buf, "null"...)
	}
}

func (e *stateEncoder) str(s string) {
	b, _ := json.Marshal(s)
	e.buf = append(e.buf, b...)
}

func (e *stateEncoder) pointer(v reflect.Value) {
	if v.IsNil() {
		e.buf = append(e.buf, "null"...)
		return
	}
	k := locKey{v.Pointer(), v.Type().Elem()}
	if e.inPlace[k] || e.written[k] {
		e.buf = strconv.AppendInt(append(e.buf, `{"@":`...), int64(e.id(k)), 10)
		e.buf = append(e.buf, '}')
		return
	}
	e.written[k] = true
	e.buf = strconv.AppendInt(append(e.buf, `{"#":`...), int64(e.id(k)), 10)
	e.buf = append(e.buf, `,"=":`...)
	e.value(v.Elem())
	e.buf = append(e.buf, '}')
}

// skippable reports whether field f may be left out: a scalar at its zero value or a nil
// reference that nothing points to.
func (e *stateEncoder) skippable(f reflect.Value) bool {
	switch f.Kind() {
	case reflect.Struct, reflect.Array:
		return false
	}
	if !f.IsZero() {
		return false
	}
	return !e.pointed[locKey{f.UnsafeAddr(), f.Type()}]
}

func (e *stateEncoder) structure(v reflect.Value) {
	if v.Type() == topicType && e.topic != nil {
		t := v.Interface().(fsm.Topic)
		t.Name = e.topic(t.Name)
		v = addressable(reflect.ValueOf(t))
	}
	e.buf = append(e.buf, '{')
	first := true
	t := v.Type()
	for i := range v.NumField() {
		f := field(v, i)
		if e.skippable(f) {
			continue
		}
		if !first {
			e.buf = append(e.buf, ',')
		}
		first = false
		e.str(t.Field(i).Name)
		e.buf = append(e.buf, ':')
		e.encode(f, true)
	}
	e.buf = append(e.buf, '}')
}

func (e *stateEncoder) list(v reflect.Value) {
	e.buf = append(e.buf, '[')
	for i := range v.Len() {
		if i > 0 {
			e.buf = append(e.buf, ',')
		}
		e.encode(v.Index(i), true)
	}
	e.buf = append(e.buf, ']')
}

func (e *stateEncoder) mapping(v reflect.Value) {
	if v.IsNil() {
		e.buf = append(e.buf, "null"...)
		return
	}
	type entry struct {
		key []byte
		val reflect.Value
	}
	entries := make([]entry, 0, v.Len())
	it := v.MapRange()
	for it.Next() {
		// Keys hold no pointers (the machines key maps by identifiers and endpoints), so a
		// separate encoder writes them without labels.
		ke := &stateEncoder{topic: e.topic, errText: e.errText, pointed: map[locKey]bool{}, inPlace: map[locKey]bool{},
			heap: map[locKey]bool{}, written: map[locKey]bool{}, ids: map[locKey]int{}}
		ke.value(addressable(it.Key()))
		if ke.err != nil {
			e.fail(ke.err)
		}
		entries = append(entries, entry{key: ke.buf, val: addressable(it.Value())})
	}
	slices.SortFunc(entries, func(a, b entry) int { return bytes.Compare(a.key, b.key) })
	e.buf = append(e.buf, '[')
	for i, en := range entries {
		if i > 0 {
			e.buf = append(e.buf, ',')
		}
		e.buf = append(append(e.buf, '['), en.key...)
		e.buf = append(e.buf, ',')
		e.encode(en.val, false)
		e.buf = append(e.buf, ']')
	}
	e.buf = append(e.buf, ']')
}

// stateDecoder is one decoding of a value graph.
type stateDecoder struct {
	locs    map[int]reflect.Value
	fixups  []fixup
	inserts []insert
}

// fixup is a pointer to set once every labelled value is known.
type fixup struct {
	ptr reflect.Value
	id  int
}

// insert is a map entry to store once its value's pointers are set.
type insert struct {
	m, k, v reflect.Value
}

// decodeState reads data, written by encodeState, into the zero value root points to.
func decodeState(data []byte, root any) error {
	v := reflect.ValueOf(root)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		return errors.New("respire: snapshot: the root must be a non-nil pointer")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var node any
	if err := dec.Decode(&node); err != nil {
		return errors.Wrap(err, "respire: snapshot: invalid JSON")
	}
	d := &stateDecoder{locs: map[int]reflect.Value{}}
	if err := d.decode(v.Elem(), node); err != nil {
		return err
	}
	for _, f := range d.fixups {
		target, ok := d.locs[f.id]
		if !ok {
			return errors.Newf("respire: snapshot: reference %d names no value", f.id)
		}
		if target.Type() != f.ptr.Type().Elem() {
			return errors.Newf("respire: snapshot: reference %d names a %s, not a %s", f.id, target.Type(), f.ptr.Type().Elem())
		}
		f.ptr.Set(target.Addr())
	}
	for _, in := range d.inserts {
		in.m.SetMapIndex(in.k, in.v)
	}
	return nil
}

func label(node any) (id int, inner any, ok bool) {
	obj, isObj := node.(map[string]any)
	if !isObj {
		return 0, nil, false
	}
	n, isNum := obj["#"].(json.Number)
	if !isNum {
		return 0, nil, false
	}
	i, err := n.Int64()
	if err != nil {
		return 0, nil, false
	}
	return int(i), obj["="], true
}

func (d *stateDecoder) decode(v reflect.Value, node any) error {
	if v.Kind() != reflect.Pointer {
		if id, inner, ok := label(node); ok {
			d.locs[id] = v
			node = inner
		}
	}
	if node == nil {
		return nil
	}
	bad := func() error {
		return errors.Newf("respire: snapshot: a %s cannot be read from %T", v.Type(), node)
	}
	switch v.Kind() {
	case reflect.Bool:
		b, ok := node.(bool)
		if !ok {
			return bad()
		}
		v.SetBool(b)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, ok := node.(json.Number)
		if !ok {
			return bad()
		}
		i, err := strconv.ParseInt(string(n), 10, 64)
		if err != nil || v.OverflowInt(i) {
			return bad()
		}
		v.SetInt(i)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		n, ok := node.(json.Number)
		if !ok {
			return bad()
		}
		u, err := strconv.ParseUint(string(n), 10, 64)
		if err != nil || v.OverflowUint(u) {
			return bad()
		}
		v.SetUint(u)
	case reflect.Float32, reflect.Float64:
		var s string
		switch n := node.(type) {
		case json.Number:
			s = string(n)
		case string:
			s = n
		default:
			return bad()
		}
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return bad()
		}
		v.SetFloat(f)
	case reflect.String:
		s, ok := node.(string)
		if !ok {
			return bad()
		}
		v.SetString(s)
	case reflect.Pointer:
		return d.pointer(v, node)
	case reflect.Struct:
		return d.structure(v, node)
	case reflect.Slice:
		arr, ok := node.([]any)
		if !ok {
			return bad()
		}
		v.Set(reflect.MakeSlice(v.Type(), len(arr), len(arr)))
		for i := range arr {
			if err := d.decode(v.Index(i), arr[i]); err != nil {
				return err
			}
		}
	case reflect.Array:
		arr, ok := node.([]any)
		if !ok || len(arr) != v.Len() {
			return bad()
		}
		for i := range arr {
			if err := d.decode(v.Index(i), arr[i]); err != nil {
				return err
			}
		}
	case reflect.Map:
		return d.mapping(v, node)
	case reflect.Interface:
		obj, ok := node.(map[string]any)
		if !ok {
			return bad()
		}
		msg, ok := obj["error"].(string)
		if !ok || !capturedErrorType.Implements(v.Type()) {
			return bad()
		}
		v.Set(reflect.ValueOf(error(&CapturedError{Message: msg})))
	default:
		return bad()
	}
	return nil
}

func (d *stateDecoder) pointer(v reflect.Value, node any) error {
	obj, ok := node.(map[string]any)
	if !ok {
		return errors.Newf("respire: snapshot: a %s cannot be read from %T", v.Type(), node)
	}
	if ref, ok := obj["@"].(json.Number); ok {
		id, err := ref.Int64()
		if err != nil {
			return errors.Newf("respire: snapshot: invalid reference %q", string(ref))
		}
		d.fixups = append(d.fixups, fixup{ptr: v, id: int(id)})
		return nil
	}
	id, inner, ok := label(node)
	if !ok {
		return errors.Newf("respire: snapshot: a %s needs a reference or a labelled value", v.Type())
	}
	target := reflect.New(v.Type().Elem())
	d.locs[id] = target.Elem()
	v.Set(target)
	return d.decode(target.Elem(), inner)
}

func (d *stateDecoder) structure(v reflect.Value, node any) error {
	obj, ok := node.(map[string]any)
	if !ok {
		return errors.Newf("respire: snapshot: a %s cannot be read from %T", v.Type(), node)
	}
	t := v.Type()
	names := make([]string, 0, len(obj))
	for name := range obj {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		sf, ok := t.FieldByName(name)
		if !ok || len(sf.Index) != 1 {
			return errors.Newf("respire: snapshot: a %s has no field %q", t, name)
		}
		if err := d.decode(field(v, sf.Index[0]), obj[name]); err != nil {
			return err
		}
	}
	return nil
}

func (d *stateDecoder) mapping(v reflect.Value, node any) error {
	arr, ok := node.([]any)
	if !ok {
		return errors.Newf("respire: snapshot: a %s cannot be read from %T", v.Type(), node)
	}
	v.Set(reflect.MakeMapWithSize(v.Type(), len(arr)))
	for _, p := range arr {
		pair, ok := p.([]any)
		if !ok || len(pair) != 2 {
			return errors.Newf("respire: snapshot: a %s entry must be a [key, value] pair", v.Type())
		}
		k := reflect.New(v.Type().Key()).Elem()
		if err := d.decode(k, pair[0]); err != nil {
			return err
		}
		val := reflect.New(v.Type().Elem()).Elem()
		if err := d.decode(val, pair[1]); err != nil {
			return err
		}
		d.inserts = append(d.inserts, insert{m: v, k: k, v: val})
	}
	return nil
}
