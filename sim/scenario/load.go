package scenario

import (
	"bytes"
	"errors"
	"os"
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Error reports an invalid scenario: the field's dotted path ("client.reconnect_policy.
// max_delay", "faults[2].at"), the YAML line when known, and what is wrong.
type Error struct {
	// Field is the dotted path of the offending field, or "" when the document itself is bad.
	Field string
	// Line is the 1-based YAML line, or 0 when unknown (scenarios built in Go).
	Line int
	// Msg says what is wrong.
	Msg string
}

// Error implements error.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("sim: scenario: ")
	if e.Field != "" {
		b.WriteString(e.Field)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	if e.Line > 0 {
		b.WriteString(" (line ")
		b.WriteString(strconv.Itoa(e.Line))
		b.WriteString(")")
	}
	return b.String()
}

func fieldErr(field, msg string) error { return &Error{Field: field, Msg: msg} }

// Load reads and parses the scenario file at path (see Parse).
func Load(path string) (*Scenario, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	sc, err := Parse(data)
	if err != nil {
		return nil, errors.Join(errors.New("sim: "+path), err)
	}
	return sc, nil
}

// Parse decodes a scenario strictly (unknown fields are errors), fills in the defaults
// and validates it. Errors are *Error values naming the field.
func Parse(data []byte) (*Scenario, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, &Error{Msg: "invalid YAML: " + strings.TrimPrefix(err.Error(), "yaml: ")}
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	sc := new(Scenario)
	if err := dec.Decode(sc); err != nil {
		return nil, explainDecodeError(&root, err)
	}
	sc.applyDefaults()
	if err := sc.Validate(); err != nil {
		var se *Error
		if errors.As(err, &se) && se.Line == 0 && se.Field != "" {
			se.Line = lineOf(&root, se.Field)
		}
		return nil, err
	}
	return sc, nil
}

// lineOf returns the line of the YAML node at the dotted path field ("faults[2].kill.node"), or
// of its deepest ancestor present in the document (a defaulted field has no node of its own),
// or 0.
func lineOf(root *yaml.Node, field string) int {
	n := root
	if n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	line := 0
	for _, part := range strings.Split(field, ".") {
		name, rest, _ := strings.Cut(part, "[")
		if name != "" {
			next := mappingValue(n, name)
			if next == nil {
				return line
			}
			n, line = next, next.Line
		}
		for rest != "" {
			idx, after, _ := strings.Cut(rest, "]")
			i, err := strconv.Atoi(idx)
			if err != nil || n.Kind != yaml.SequenceNode || i < 0 || i >= len(n.Content) {
				return line
			}
			n, line = n.Content[i], n.Content[i].Line
			rest = strings.TrimPrefix(after, "[")
		}
	}
	return line
}

// mappingValue returns the value of key in mapping n, or nil.
func mappingValue(n *yaml.Node, key string) *yaml.Node {
	if n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

// Marshal writes sc as YAML that Parse reads back to an equal scenario.
func Marshal(sc *Scenario) ([]byte, error) {
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(sc); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

var (
	reUnknownField = regexp.MustCompile(`^line (\d+): field (\S+) not found in type (\S+)$`)
	reCannot       = regexp.MustCompile("^line (\\d+): cannot unmarshal (\\S+) `([^`]*)` into (\\S+)$")
	reLine         = regexp.MustCompile(`^line (\d+): (.*)$`)
)

// explainDecodeError turns yaml's errors into ScenarioErrors naming the field.
func explainDecodeError(root *yaml.Node, err error) error {
	var ve *valueError
	if errors.As(err, &ve) {
		path, _ := pathOf(root, "", func(_, v *yaml.Node) bool { return v.Line == ve.line && v.Column == ve.column })
		return &Error{Field: path, Line: ve.line, Msg: ve.msg}
	}
	var te *yaml.TypeError
	if !errors.As(err, &te) || len(te.Errors) == 0 {
		return &Error{Msg: strings.TrimPrefix(err.Error(), "yaml: ")}
	}
	var errs []error
	for _, text := range te.Errors {
		errs = append(errs, explainTypeError(root, text))
	}
	if len(errs) == 1 {
		return errs[0]
	}
	return errors.Join(errs...)
}

func explainTypeError(root *yaml.Node, text string) error {
	if m := reUnknownField.FindStringSubmatch(text); m != nil {
		line, _ := strconv.Atoi(m[1])
		path, _ := pathOf(root, "", func(k, _ *yaml.Node) bool { return k != nil && k.Line == line && k.Value == m[2] })
		msg := "unknown field"
		if m[3] == "scenario.Fault" {
			msg = "unknown fault kind (want one of " + strings.Join(FaultKinds, ", ") + ")"
		}
		if m[3] == "scenario.ClientAction" {
			msg = "unknown client action (want one of " + strings.Join(ActionKinds, ", ") + ")"
		}
		return &Error{Field: path, Line: line, Msg: msg}
	}
	if m := reCannot.FindStringSubmatch(text); m != nil {
		line, _ := strconv.Atoi(m[1])
		path, _ := pathOf(root, "", func(_, v *yaml.Node) bool {
			return v.Kind == yaml.ScalarNode && v.Line == line && v.Value == m[3]
		})
		msg := "invalid value " + strconv.Quote(m[3]) + ": want " + typeWord(m[4])
		return &Error{Field: path, Line: line, Msg: msg}
	}
	if m := reLine.FindStringSubmatch(text); m != nil {
		line, _ := strconv.Atoi(m[1])
		return &Error{Line: line, Msg: m[2]}
	}
	return &Error{Msg: text}
}

// typeWord describes a Go type for a scenario author.
func typeWord(goType string) string {
	switch goType {
	case "time.Duration":
		return "a duration with a unit, such as 500ms or 1m30s"
	case "int", "int64", "uint64":
		return "an integer"
	case "float64":
		return "a number"
	case "bool":
		return "true or false"
	case "string":
		return "a string"
	}
	if strings.HasPrefix(goType, "[]") {
		return "a list"
	}
	return "a " + strings.TrimPrefix(goType, "scenario.") + " mapping"
}

// pathOf returns the dotted path of the first node of the document, in document order, that
// match accepts; match gets the node's mapping key (nil for a list element) and the node.
func pathOf(n *yaml.Node, path string, match func(key, value *yaml.Node) bool) (string, bool) {
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			if p, ok := pathOf(c, path, match); ok {
				return p, true
			}
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			p := k.Value
			if path != "" {
				p = path + "." + k.Value
			}
			if match(k, v) {
				return p, true
			}
			if p, ok := pathOf(v, p, match); ok {
				return p, true
			}
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			p := path + "[" + strconv.Itoa(i) + "]"
			if match(nil, c) {
				return p, true
			}
			if p, ok := pathOf(c, p, match); ok {
				return p, true
			}
		}
	}
	return "", false
}
