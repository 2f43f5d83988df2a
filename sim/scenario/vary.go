package scenario

import (
	"errors"
	"hash/fnv"
	"math"
	"reflect"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/respire-go/respire/sim/stream"
)

// VaryEntry draws one numeric field of the scenario from a range for each seed: the field's
// dotted YAML path ("network.latency", "client.connections", "workload.rate",
// "client.reconnect_policy.initial_delay"; a list element by its index, "actions[0].at") and
// its range, written in the field's own syntax ("200us..2ms", "1..8", "100/s..400/s", "0.5..2").
type VaryEntry struct {
	// Field is the field's dotted YAML path.
	Field string
	// Range is the range as written.
	Range string
	// Line is the entry's YAML line, for errors (0 when built in Go).
	Line int
}

// Vary lists the varied fields (scenario key vary), in document order. In YAML it is a
// mapping from field path to range.
type Vary []VaryEntry

// UnmarshalYAML implements yaml.Unmarshaler.
func (v *Vary) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.MappingNode {
		return badValue(n, "want a mapping from field paths to ranges, such as {network.latency: 200us..2ms}")
	}
	out := make(Vary, 0, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		if val.Kind != yaml.ScalarNode {
			return badValue(val, "want a range such as 1..8")
		}
		out = append(out, VaryEntry{Field: k.Value, Range: val.Value, Line: k.Line})
	}
	*v = out
	return nil
}

// MarshalYAML implements yaml.Marshaler.
func (v Vary) MarshalYAML() (any, error) {
	n := &yaml.Node{Kind: yaml.MappingNode}
	for _, e := range v {
		n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: e.Field},
			&yaml.Node{Kind: yaml.ScalarNode, Value: e.Range})
	}
	return n, nil
}

// varyErr is an error of entry e, naming it and its line.
func varyErr(e *VaryEntry, msg string) error {
	return &Error{Field: "vary." + e.Field, Line: e.Line, Msg: msg}
}

// maxVaryIndex bounds a list index in a vary path (actions[3]): no scenario list is longer
// than the fault timeline's bound.
const maxVaryIndex = MaxFaults

// field returns the settable field of sc at the dotted YAML path, or an error. A path element
// may index a list, once or more: "actions[0].at", "faults[2].kill.restart_after".
func (sc *Scenario) field(e *VaryEntry) (reflect.Value, error) {
	v := reflect.ValueOf(sc).Elem()
	for _, part := range strings.Split(e.Field, ".") {
		name, indexes, err := splitIndexes(part)
		if err != nil {
			return reflect.Value{}, varyErr(e, err.Error())
		}
		for v.Kind() == reflect.Pointer {
			if v.IsNil() {
				return reflect.Value{}, varyErr(e, "is not set in this scenario (set its section first)")
			}
			v = v.Elem()
		}
		if v.Kind() != reflect.Struct {
			return reflect.Value{}, varyErr(e, "is not a field of the scenario")
		}
		found := false
		t := v.Type()
		for i := range t.NumField() {
			tag, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ",")
			if tag == name {
				v, found = v.Field(i), true
				break
			}
		}
		if !found {
			return reflect.Value{}, varyErr(e, "is not a field of the scenario")
		}
		for _, i := range indexes {
			for v.Kind() == reflect.Pointer && !v.IsNil() {
				v = v.Elem()
			}
			if v.Kind() != reflect.Slice {
				return reflect.Value{}, varyErr(e, name+" is not a list: it takes no index")
			}
			if i >= v.Len() {
				return reflect.Value{}, varyErr(e, name+"["+strconv.Itoa(i)+"] is out of range: "+name+" has "+
					strconv.Itoa(v.Len())+" elements in this scenario")
			}
			v = v.Index(i)
		}
	}
	for v.Kind() == reflect.Pointer { // an optional field: vary sets the value it holds
		if v.IsNil() {
			return reflect.Value{}, varyErr(e, "is not set in this scenario (set it first)")
		}
		v = v.Elem()
	}
	switch {
	case v.Kind() == reflect.Int, v.Kind() == reflect.Int64, v.Kind() == reflect.Float64:
		return v, nil
	case v.Type() == timeRangeType, v.Type() == intRangeType:
		// A field that takes a range itself (a fault's at, a delay's extra): vary fixes it.
		return v, nil
	}
	return reflect.Value{}, varyErr(e, "is not a number or a duration: only numeric fields vary")
}

var (
	timeRangeType = reflect.TypeOf(TimeRange{})
	intRangeType  = reflect.TypeOf(IntRange{})
)

// splitIndexes splits one element of a vary path into its field name and the list indexes
// after it: "actions[0]" is "actions" and [0].
func splitIndexes(part string) (string, []int, error) {
	name, rest, ok := strings.Cut(part, "[")
	if !ok {
		if strings.Contains(part, "]") {
			return "", nil, errors.New("has a ] without its [ in " + strconv.Quote(part))
		}
		return part, nil, nil
	}
	if name == "" {
		return "", nil, errors.New("has an index without a field name in " + strconv.Quote(part))
	}
	var out []int
	rest = "[" + rest
	for rest != "" {
		body, after, ok := strings.Cut(rest[1:], "]")
		if rest[0] != '[' || !ok {
			return "", nil, errors.New("has an unclosed or misplaced index in " + strconv.Quote(part) + ": want name[0]")
		}
		i, err := strconv.Atoi(body)
		if err != nil || i < 0 || i >= maxVaryIndex || body != strconv.Itoa(i) {
			return "", nil, errors.New("has an invalid index " + strconv.Quote(body) + " in " + strconv.Quote(part) +
				": want 0 to " + strconv.Itoa(maxVaryIndex-1))
		}
		out = append(out, i)
		rest = after
	}
	return name, out, nil
}

// bounds parses e's range for field f into its two ends, as values of f's type.
func (e *VaryEntry) bounds(f reflect.Value) (lo, hi reflect.Value, err error) {
	a, b, ok := strings.Cut(e.Range, "..")
	if !ok {
		return lo, hi, varyErr(e, "want a range a..b, not "+strconv.Quote(e.Range))
	}
	parse := func(s string) (reflect.Value, error) {
		s = strings.TrimSpace(s)
		out := reflect.New(f.Type()).Elem()
		switch {
		case f.Type() == reflect.TypeOf(time.Duration(0)):
			d, ok := parseDuration(s)
			if !ok {
				return out, varyErr(e, "invalid duration "+strconv.Quote(s))
			}
			out.SetInt(int64(d))
		case f.Type() == timeRangeType:
			d, ok := parseDuration(s)
			if !ok {
				return out, varyErr(e, "invalid duration "+strconv.Quote(s))
			}
			out.Set(reflect.ValueOf(At(d)))
		case f.Type() == intRangeType:
			n, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				return out, varyErr(e, "invalid integer "+strconv.Quote(s))
			}
			out.Set(reflect.ValueOf(IntRange{Min: n, Max: n}))
		case f.Type() == reflect.TypeOf(Rate(0)):
			var r Rate
			if err := r.UnmarshalYAML(&yaml.Node{Kind: yaml.ScalarNode, Value: s, Line: e.Line}); err != nil {
				return out, varyErr(e, "invalid rate "+strconv.Quote(s))
			}
			out.SetFloat(float64(r))
		case f.Kind() == reflect.Float64:
			x, err := strconv.ParseFloat(s, 64)
			if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
				return out, varyErr(e, "invalid number "+strconv.Quote(s))
			}
			out.SetFloat(x)
		default:
			n, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				return out, varyErr(e, "invalid integer "+strconv.Quote(s))
			}
			out.SetInt(n)
		}
		return out, nil
	}
	if lo, err = parse(a); err != nil {
		return
	}
	if hi, err = parse(b); err != nil {
		return
	}
	if less(hi, lo) {
		return lo, hi, varyErr(e, "range "+strconv.Quote(e.Range)+" ends before it starts")
	}
	return lo, hi, nil
}

func less(a, b reflect.Value) bool {
	switch {
	case a.Kind() == reflect.Float64:
		return a.Float() < b.Float()
	case a.Kind() == reflect.Struct: // a fixed TimeRange or IntRange: its Min
		return a.Field(0).Int() < b.Field(0).Int()
	}
	return a.Int() < b.Int()
}

// validateVary checks every vary entry: a numeric field of the scenario, a valid range, and a
// scenario that stays valid with the field at either end of it.
func (sc *Scenario) validateVary() error {
	seen := map[string]bool{}
	for i := range sc.Vary {
		e := &sc.Vary[i]
		if seen[e.Field] {
			return varyErr(e, "varied twice")
		}
		seen[e.Field] = true
		f, err := sc.field(e)
		if err != nil {
			return err
		}
		lo, hi, err := e.bounds(f)
		if err != nil {
			return err
		}
		for _, end := range []reflect.Value{lo, hi} {
			c := sc.Clone()
			c.Vary = nil
			cf, _ := c.field(e)
			cf.Set(end)
			if err := c.Validate(); err != nil {
				return varyErr(e, "at "+describe(end)+": "+err.Error())
			}
		}
	}
	return nil
}

func describe(v reflect.Value) string {
	switch {
	case v.Type() == timeRangeType:
		return v.Interface().(TimeRange).String()
	case v.Type() == intRangeType:
		return strconv.FormatInt(v.Field(0).Int(), 10)
	case v.Type() == reflect.TypeOf(time.Duration(0)):
		return time.Duration(v.Int()).String()
	case v.Kind() == reflect.Float64:
		return strconv.FormatFloat(v.Float(), 'g', -1, 64)
	}
	return strconv.FormatInt(v.Int(), 10)
}

// resolveVary draws every varied field for seed, each from its own stream (named by its
// path, so entries do not shift one another's draws), and clears Vary.
func (sc *Scenario) resolveVary(seed uint64) {
	for i := range sc.Vary {
		e := &sc.Vary[i]
		f, err := sc.field(e)
		if err != nil {
			continue // Validate refused it
		}
		lo, hi, err := e.bounds(f)
		if err != nil {
			continue
		}
		h := fnv.New64a()
		h.Write([]byte(e.Field))
		u := stream.Unit(stream.New(seed, stream.Vary, h.Sum64()))
		switch {
		case f.Type() == timeRangeType:
			f.Set(reflect.ValueOf(At(TimeRange{Min: lo.Interface().(TimeRange).Min, Max: hi.Interface().(TimeRange).Min}.resolve(u).Value())))
		case f.Type() == intRangeType:
			n := IntRange{Min: lo.Interface().(IntRange).Min, Max: hi.Interface().(IntRange).Min}.resolve(u).Value()
			f.Set(reflect.ValueOf(IntRange{Min: n, Max: n}))
		case f.Type() == reflect.TypeOf(time.Duration(0)):
			f.SetInt(int64(TimeRange{Min: time.Duration(lo.Int()), Max: time.Duration(hi.Int())}.resolve(u).Value()))
		case f.Kind() == reflect.Float64:
			f.SetFloat(lo.Float() + u*(hi.Float()-lo.Float()))
		default:
			f.SetInt(IntRange{Min: lo.Int(), Max: hi.Int()}.resolve(u).Value())
		}
	}
	sc.Vary = nil
}
