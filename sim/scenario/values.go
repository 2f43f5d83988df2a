package scenario

import (
	"math"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// valueError is a malformed scalar found while decoding; the loader adds the field's path.
type valueError struct {
	line, column int
	msg          string
}

// Error implements error.
func (e *valueError) Error() string { return "line " + strconv.Itoa(e.line) + ": " + e.msg }

func badValue(n *yaml.Node, msg string) error {
	return &valueError{line: n.Line, column: n.Column, msg: msg}
}

// parseDuration parses a Go duration, also accepting a bare "0".
func parseDuration(s string) (time.Duration, bool) {
	s = strings.TrimSpace(s)
	if s == "0" {
		return 0, true
	}
	d, err := time.ParseDuration(s)
	return d, err == nil
}

// TimeRange is a virtual time or duration, or a range of them written "a..b" (inclusive) that
// Resolve fixes from the seed. A fixed value has Min == Max and is written as one duration.
type TimeRange struct {
	// Min is the range's lower bound (the value itself when fixed).
	Min time.Duration
	// Max is the range's upper bound, inclusive (equal to Min when fixed).
	Max time.Duration
}

// At returns a fixed TimeRange.
func At(d time.Duration) TimeRange { return TimeRange{Min: d, Max: d} }

// Value returns the fixed value (Min); meaningful after Resolve.
func (r TimeRange) Value() time.Duration { return r.Min }

// Fixed reports whether the range is a single value.
func (r TimeRange) Fixed() bool { return r.Min == r.Max }

// String returns "5s" or "5s..9s".
func (r TimeRange) String() string {
	if r.Fixed() {
		return r.Min.String()
	}
	return r.Min.String() + ".." + r.Max.String()
}

// UnmarshalYAML implements yaml.Unmarshaler.
func (r *TimeRange) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return badValue(n, "want a duration or a range such as 5s..9s")
	}
	lo, hi, isRange := strings.Cut(n.Value, "..")
	min, ok := parseDuration(lo)
	if !ok {
		return badValue(n, "invalid duration "+strconv.Quote(lo)+" (want a Go duration such as 1m30s or a range such as 5s..9s)")
	}
	max := min
	if isRange {
		if max, ok = parseDuration(hi); !ok {
			return badValue(n, "invalid duration "+strconv.Quote(hi)+" in range "+strconv.Quote(n.Value))
		}
		if max < min {
			return badValue(n, "range "+strconv.Quote(n.Value)+" ends before it starts")
		}
	}
	*r = TimeRange{Min: min, Max: max}
	return nil
}

// MarshalYAML implements yaml.Marshaler.
func (r TimeRange) MarshalYAML() (any, error) { return r.String(), nil }

// resolve fixes the range with a draw u in [0, 1), at microsecond granularity.
func (r TimeRange) resolve(u float64) TimeRange {
	if r.Fixed() {
		return r
	}
	span := int64(r.Max-r.Min) / int64(time.Microsecond)
	v := r.Min + time.Duration(int64(u*float64(span+1)))*time.Microsecond
	if v > r.Max {
		v = r.Max
	}
	return At(v)
}

// IntRange is a count, or a range of counts "a..b" (inclusive) that Resolve fixes from the seed.
type IntRange struct {
	// Min is the range's lower bound (the value itself when fixed).
	Min int64
	// Max is the range's upper bound, inclusive (equal to Min when fixed).
	Max int64
}

// Value returns the fixed value (Min); meaningful after Resolve.
func (r IntRange) Value() int64 { return r.Min }

// String returns "100" or "100..200".
func (r IntRange) String() string {
	if r.Min == r.Max {
		return strconv.FormatInt(r.Min, 10)
	}
	return strconv.FormatInt(r.Min, 10) + ".." + strconv.FormatInt(r.Max, 10)
}

// UnmarshalYAML implements yaml.Unmarshaler.
func (r *IntRange) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return badValue(n, "want an integer or a range such as 100..200")
	}
	lo, hi, isRange := strings.Cut(n.Value, "..")
	min, err := strconv.ParseInt(strings.TrimSpace(lo), 10, 64)
	if err != nil {
		return badValue(n, "invalid integer "+strconv.Quote(lo))
	}
	max := min
	if isRange {
		if max, err = strconv.ParseInt(strings.TrimSpace(hi), 10, 64); err != nil {
			return badValue(n, "invalid integer "+strconv.Quote(hi)+" in range "+strconv.Quote(n.Value))
		}
		if max < min {
			return badValue(n, "range "+strconv.Quote(n.Value)+" ends before it starts")
		}
	}
	*r = IntRange{Min: min, Max: max}
	return nil
}

// MarshalYAML implements yaml.Marshaler: a plain integer when fixed.
func (r IntRange) MarshalYAML() (any, error) {
	if r.Min == r.Max {
		return r.Min, nil
	}
	return r.String(), nil
}

func (r IntRange) resolve(u float64) IntRange {
	if r.Min == r.Max {
		return r
	}
	v := r.Min + int64(u*float64(r.Max-r.Min+1))
	if v > r.Max {
		v = r.Max
	}
	return IntRange{Min: v, Max: v}
}

// Rate is a rate in operations per second. In YAML it is written "200/s", "600/m" or a plain
// number (per second).
type Rate float64

// UnmarshalYAML implements yaml.Unmarshaler.
func (r *Rate) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return badValue(n, "want a rate such as 200/s")
	}
	text := strings.TrimSpace(n.Value)
	num, unit, hasUnit := strings.Cut(text, "/")
	per := 1.0
	if hasUnit {
		switch strings.TrimSpace(unit) {
		case "s":
		case "m":
			per = 60
		case "h":
			per = 3600
		default:
			return badValue(n, "invalid rate "+strconv.Quote(text)+": unit must be /s, /m or /h")
		}
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return badValue(n, "invalid rate "+strconv.Quote(text)+" (want a number of operations such as 200/s)")
	}
	if v < 0 {
		return badValue(n, "invalid rate "+strconv.Quote(text)+": must not be negative")
	}
	*r = Rate(v / per)
	return nil
}

// MarshalYAML implements yaml.Marshaler.
func (r Rate) MarshalYAML() (any, error) {
	return strconv.FormatFloat(float64(r), 'g', -1, 64) + "/s", nil
}

// Invariants selects invariant checkers: All, or the named ones. In YAML: "all" or a list.
type Invariants struct {
	// All selects every invariant checker ("all").
	All bool
	// Names lists the selected checkers when All is false.
	Names []string
}

// IsZero reports whether nothing is selected (for omitempty).
func (v Invariants) IsZero() bool { return !v.All && len(v.Names) == 0 }

// Includes reports whether the checker named name is selected.
func (v Invariants) Includes(name string) bool {
	if v.All {
		return true
	}
	for _, n := range v.Names {
		if n == name {
			return true
		}
	}
	return false
}

// UnmarshalYAML implements yaml.Unmarshaler.
func (v *Invariants) UnmarshalYAML(n *yaml.Node) error {
	switch n.Kind {
	case yaml.ScalarNode:
		if n.Value == "all" {
			*v = Invariants{All: true}
			return nil
		}
		return badValue(n, "want \"all\" or a list of checker names")
	case yaml.SequenceNode:
		names := make([]string, 0, len(n.Content))
		for _, c := range n.Content {
			if c.Kind != yaml.ScalarNode || c.Value == "" {
				return badValue(c, "want a checker name")
			}
			names = append(names, c.Value)
		}
		*v = Invariants{Names: names}
		return nil
	}
	return badValue(n, "want \"all\" or a list of checker names")
}

// MarshalYAML implements yaml.Marshaler.
func (v Invariants) MarshalYAML() (any, error) {
	if v.All {
		return "all", nil
	}
	return v.Names, nil
}
