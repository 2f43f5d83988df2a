package client

import (
	"context"
	"encoding"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Hashes and structs: a struct's fields tagged `redis:"name"` map to the fields of a hash.
//
//	type Session struct {
//		User    string        `redis:"user"`
//		Visits  int64         `redis:"visits"`
//		Admin   bool          `redis:"admin,omitempty"`
//		Expires time.Time     `redis:"expires"`
//		Idle    time.Duration `redis:"idle"`
//	}
//
// Supported field types: string, []byte, bool, the integer and float types, time.Duration
// (written as "1m30s"), time.Time (RFC 3339 with nanoseconds), pointers to those (nil when
// the hash lacks the field), and any type implementing encoding.TextMarshaler and
// encoding.TextUnmarshaler. Untagged fields and fields tagged "-" are ignored; omitempty
// leaves a zero value out of HSetStruct.

// ScanError reports a hash field that could not be stored in its struct field. It names the
// fields and never holds the value, which is user data.
type ScanError struct {
	// Field is the struct field; HashField the hash field it is tagged with.
	Field, HashField string
	// Reason says what was wrong.
	Reason string
}

// Error implements error.
func (e *ScanError) Error() string {
	return "respire: hash field " + strconv.Quote(e.HashField) + " does not fit struct field " + e.Field + ": " + e.Reason
}

// structField is one tagged field of a struct type.
type structField struct {
	index     []int
	name      string // the Go field name
	hashField string
	omitEmpty bool
	typ       reflect.Type
}

var structFields sync.Map // reflect.Type -> []structField, or error

var (
	hashDurationType = reflect.TypeOf(time.Duration(0))
	hashTimeType     = reflect.TypeOf(time.Time{})
	hashBytesType    = reflect.TypeOf([]byte(nil))
	textUnmarshal    = reflect.TypeOf((*encoding.TextUnmarshaler)(nil)).Elem()
	textMarshal      = reflect.TypeOf((*encoding.TextMarshaler)(nil)).Elem()
)

// fieldsOf returns the tagged fields of struct type t.
func fieldsOf(t reflect.Type) ([]structField, error) {
	if v, ok := structFields.Load(t); ok {
		if err, isErr := v.(error); isErr {
			return nil, err
		}
		return v.([]structField), nil
	}
	var out []structField
	var err error
	for _, f := range reflect.VisibleFields(t) {
		tag, ok := f.Tag.Lookup("redis")
		if !ok || tag == "-" || !f.IsExported() {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if name == "" {
			name = f.Name
		}
		sf := structField{index: f.Index, name: f.Name, hashField: name, omitEmpty: opts == "omitempty", typ: f.Type}
		if !supported(f.Type) {
			err = configErr(t.String()+"."+f.Name, "type "+f.Type.String()+" cannot hold a hash field")
			break
		}
		out = append(out, sf)
	}
	if err != nil {
		structFields.Store(t, err)
		return nil, err
	}
	structFields.Store(t, out)
	return out, nil
}

func supported(t reflect.Type) bool {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == hashTimeType || t == hashDurationType || t == hashBytesType {
		return true
	}
	if reflect.PointerTo(t).Implements(textUnmarshal) && t.Implements(textMarshal) {
		return true
	}
	switch t.Kind() {
	case reflect.String, reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		return true
	}
	return false
}

// structOf checks that dst is a non-nil pointer to a struct and returns the struct.
func structOf(dst any, name string) (reflect.Value, error) {
	v := reflect.ValueOf(dst)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return reflect.Value{}, configErr(name, "must be a non-nil pointer to a struct")
	}
	return v.Elem(), nil
}

// ScanHash stores the fields of a hash (as HGetAll returns it) in the struct dst points to:
// each tagged struct field takes the hash field of its tag's name, converted to its type.
// Struct fields whose hash field is missing are left unchanged (pointers stay nil). A value
// that does not fit its field fails with a *ScanError, after the fields before it were set.
func ScanHash(hash map[string]string, dst any) error {
	s, err := structOf(dst, "dst")
	if err != nil {
		return err
	}
	fields, err := fieldsOf(s.Type())
	if err != nil {
		return err
	}
	for i := range fields {
		f := &fields[i]
		text, ok := hash[f.hashField]
		if !ok {
			continue
		}
		fv := s.FieldByIndex(f.index)
		if fv.Kind() == reflect.Pointer && fv.Type() != hashBytesType {
			p := reflect.New(fv.Type().Elem())
			if err := setText(p.Elem(), text); err != nil {
				return &ScanError{Field: f.name, HashField: f.hashField, Reason: err.Error()}
			}
			fv.Set(p)
			continue
		}
		if err := setText(fv, text); err != nil {
			return &ScanError{Field: f.name, HashField: f.hashField, Reason: err.Error()}
		}
	}
	return nil
}

// setText stores text in v, by v's type. Errors say what was expected, never the text.
func setText(v reflect.Value, text string) error {
	switch {
	case v.Type() == hashTimeType:
		t, err := time.Parse(time.RFC3339Nano, text)
		if err != nil {
			return errWant("an RFC 3339 time")
		}
		v.Set(reflect.ValueOf(t))
		return nil
	case v.Type() == hashDurationType:
		d, err := time.ParseDuration(text)
		if err != nil {
			return errWant("a duration")
		}
		v.SetInt(int64(d))
		return nil
	case v.Type() == hashBytesType:
		v.SetBytes([]byte(text))
		return nil
	case reflect.PointerTo(v.Type()).Implements(textUnmarshal):
		if err := v.Addr().Interface().(encoding.TextUnmarshaler).UnmarshalText([]byte(text)); err != nil {
			return errWant("text its UnmarshalText accepts")
		}
		return nil
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(text)
	case reflect.Bool:
		b, err := strconv.ParseBool(text)
		if err != nil {
			return errWant("a boolean")
		}
		v.SetBool(b)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, err := strconv.ParseInt(text, 10, v.Type().Bits())
		if err != nil {
			return errWant("an integer of " + strconv.Itoa(v.Type().Bits()) + " bits")
		}
		v.SetInt(n)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		n, err := strconv.ParseUint(text, 10, v.Type().Bits())
		if err != nil {
			return errWant("an unsigned integer of " + strconv.Itoa(v.Type().Bits()) + " bits")
		}
		v.SetUint(n)
	case reflect.Float32, reflect.Float64:
		f, err := strconv.ParseFloat(text, v.Type().Bits())
		if err != nil {
			return errWant("a number")
		}
		v.SetFloat(f)
	}
	return nil
}

type wantError string

// Error implements error.
func (e wantError) Error() string { return "the value is not " + string(e) }

func errWant(what string) error { return wantError(what) }

// hashPairs returns the tagged fields of the struct src points to (or is) as field, value,
// ... for HSET.
func hashPairs(src any) ([]string, error) {
	v := reflect.ValueOf(src)
	if v.Kind() == reflect.Pointer && !v.IsNil() {
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return nil, configErr("src", "must be a struct or a non-nil pointer to one")
	}
	fields, err := fieldsOf(v.Type())
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, 2*len(fields))
	for i := range fields {
		f := &fields[i]
		fv := v.FieldByIndex(f.index)
		if fv.Kind() == reflect.Pointer && fv.Type() != hashBytesType {
			if fv.IsNil() {
				continue
			}
			fv = fv.Elem()
		}
		if f.omitEmpty && fv.IsZero() {
			continue
		}
		out = append(out, f.hashField, fieldText(fv))
	}
	return out, nil
}

// fieldText formats a supported field value as ScanHash reads it back.
func fieldText(v reflect.Value) string {
	switch {
	case v.Type() == hashTimeType:
		return v.Interface().(time.Time).Format(time.RFC3339Nano)
	case v.Type() == hashDurationType:
		return time.Duration(v.Int()).String()
	case v.Type() == hashBytesType:
		return string(v.Bytes())
	case v.Type().Implements(textMarshal):
		b, err := v.Interface().(encoding.TextMarshaler).MarshalText()
		if err != nil {
			return ""
		}
		return string(b)
	}
	switch v.Kind() {
	case reflect.String:
		return v.String()
	case reflect.Bool:
		return strconv.FormatBool(v.Bool())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return strconv.FormatInt(v.Int(), 10)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return strconv.FormatUint(v.Uint(), 10)
	case reflect.Float32, reflect.Float64:
		return strconv.FormatFloat(v.Float(), 'g', -1, v.Type().Bits())
	}
	return ""
}

// HGetAllStruct reads the hash at key into the struct dst points to (see ScanHash). found is
// false when the key does not exist (dst is then unchanged).
func (c Commands) HGetAllStruct(ctx context.Context, key string, dst any) (found bool, err error) {
	if _, err := structOf(dst, "dst"); err != nil {
		return false, err
	}
	hash, err := c.HGetAll(ctx, key)
	if err != nil {
		return false, err
	}
	if len(hash) == 0 {
		return false, nil
	}
	return true, ScanHash(hash, dst)
}

// HSetStruct writes the tagged fields of src (a struct or a pointer to one) to the hash at key
// and returns how many fields were added.
func (c Commands) HSetStruct(ctx context.Context, key string, src any) (int64, error) {
	pairs, err := hashPairs(src)
	if err != nil {
		return 0, err
	}
	return c.HSet(ctx, key, pairs...)
}

// HSetStruct queues HSetStruct's HSET in the batch.
func (b *Batch) HSetStruct(key string, src any) *Future[int64] {
	pairs, err := hashPairs(src)
	if err != nil {
		f := &Future[int64]{}
		f.fail(err)
		if b.err == nil {
			b.err = err
		}
		return f
	}
	return b.HSet(key, pairs...)
}
