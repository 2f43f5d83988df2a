package sim

import (
	"bytes"
	"errors"
	"os"
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/respire-go/respire/sim/stream"
)

// ScenarioError reports an invalid scenario: the field's dotted path ("client.reconnect_policy.
// max_delay", "faults[2].at"), the YAML line when known, and what is wrong.
type ScenarioError struct {
	// Field is the dotted path of the offending field, or "" when the document itself is bad.
	Field string
	// Line is the 1-based YAML line, or 0 when unknown (scenarios built in Go).
	Line int
	// Msg says what is wrong.
	Msg string
}

// Error implements error.
func (e *ScenarioError) Error() string {
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

func fieldErr(field, msg string) error { return &ScenarioError{Field: field, Msg: msg} }

// LoadScenario reads and parses the scenario file at path (see ParseScenario).
func LoadScenario(path string) (*Scenario, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	sc, err := ParseScenario(data)
	if err != nil {
		return nil, errors.Join(errors.New("sim: "+path), err)
	}
	return sc, nil
}

// ParseScenario decodes a scenario strictly (unknown fields are errors), fills in the defaults
// and validates it. Errors are *ScenarioError values naming the field.
func ParseScenario(data []byte) (*Scenario, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, &ScenarioError{Msg: "invalid YAML: " + strings.TrimPrefix(err.Error(), "yaml: ")}
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	sc := new(Scenario)
	if err := dec.Decode(sc); err != nil {
		return nil, explainDecodeError(&root, err)
	}
	sc.applyDefaults()
	if err := sc.Validate(); err != nil {
		return nil, err
	}
	return sc, nil
}

// MarshalScenario writes sc as YAML that ParseScenario reads back to an equal scenario.
func MarshalScenario(sc *Scenario) ([]byte, error) {
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
		return &ScenarioError{Field: pathAt(root, ve.line, ve.column), Line: ve.line, Msg: ve.msg}
	}
	var te *yaml.TypeError
	if !errors.As(err, &te) || len(te.Errors) == 0 {
		return &ScenarioError{Msg: strings.TrimPrefix(err.Error(), "yaml: ")}
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
		path := keyPath(root, line, m[2])
		msg := "unknown field"
		if m[3] == "sim.Fault" {
			msg = "unknown fault kind (want one of " + strings.Join(FaultKinds, ", ") + ")"
		}
		return &ScenarioError{Field: path, Line: line, Msg: msg}
	}
	if m := reCannot.FindStringSubmatch(text); m != nil {
		line, _ := strconv.Atoi(m[1])
		path := valuePath(root, line, m[3])
		msg := "invalid value " + strconv.Quote(m[3]) + ": want " + typeWord(m[4])
		return &ScenarioError{Field: path, Line: line, Msg: msg}
	}
	if m := reLine.FindStringSubmatch(text); m != nil {
		line, _ := strconv.Atoi(m[1])
		return &ScenarioError{Line: line, Msg: m[2]}
	}
	return &ScenarioError{Msg: text}
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
	return "a " + strings.TrimPrefix(goType, "sim.") + " mapping"
}

// walk visits every node of the document with its dotted path; visit returns true to stop.
func walk(n *yaml.Node, path string, visit func(key, value *yaml.Node, path string) bool) bool {
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			if walk(c, path, visit) {
				return true
			}
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			p := k.Value
			if path != "" {
				p = path + "." + k.Value
			}
			if visit(k, v, p) || walk(v, p, visit) {
				return true
			}
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			p := path + "[" + strconv.Itoa(i) + "]"
			if visit(nil, c, p) || walk(c, p, visit) {
				return true
			}
		}
	}
	return false
}

// pathAt returns the path of the value node at line:column.
func pathAt(root *yaml.Node, line, column int) string {
	found := ""
	walk(root, "", func(_, v *yaml.Node, p string) bool {
		if v.Line == line && v.Column == column {
			found = p
			return true
		}
		return false
	})
	return found
}

// keyPath returns the path of the mapping key named key on line.
func keyPath(root *yaml.Node, line int, key string) string {
	found := ""
	walk(root, "", func(k, _ *yaml.Node, p string) bool {
		if k != nil && k.Line == line && k.Value == key {
			found = p
			return true
		}
		return false
	})
	return found
}

// valuePath returns the path of the scalar with the given text on line.
func valuePath(root *yaml.Node, line int, text string) string {
	found := ""
	walk(root, "", func(_, v *yaml.Node, p string) bool {
		if v.Kind == yaml.ScalarNode && v.Line == line && v.Value == text {
			found = p
			return true
		}
		return false
	})
	return found
}

// applyDefaults fills in the documented defaults. It is idempotent.
func (sc *Scenario) applyDefaults() {
	if sc.Topology.Kind == "" {
		sc.Topology.Kind = TopologyStandalone
	}
	if len(sc.Topology.Nodes) == 0 {
		sc.Topology.Nodes = []NodeSpec{{ID: "r1"}}
	}
	if sc.Network.Latency == 0 {
		sc.Network.Latency = DefaultLatency
	}
	sc.applyClientDefaults()
	w := &sc.Workload
	if w.Callers > 0 {
		if w.Keys == 0 {
			w.Keys = 16
		}
		if w.Counters == 0 {
			w.Counters = 4
		}
		if w.Mix.total() == 0 && w.Mix == (Mix{}) {
			w.Mix = Mix{Get: 50, Set: 30, Del: 5, Incr: 10, MGet: 3, MSet: 2}
		}
		if w.Stop == 0 {
			w.Stop = sc.Duration
		}
	}
	sc.applyDedicatedDefaults()
	sc.applyPubSubDefaults()
}

// Validate reports the first invalid field of sc as a *ScenarioError. Defaults must have been
// applied (ParseScenario and Resolve do).
func (sc *Scenario) Validate() error {
	if strings.TrimSpace(sc.Name) == "" {
		return fieldErr("name", "is required")
	}
	if sc.Duration <= 0 {
		return fieldErr("duration", "must be positive")
	}
	if err := sc.validateTopology(); err != nil {
		return err
	}
	if sc.Network.Latency < 0 {
		return fieldErr("network.latency", "must not be negative")
	}
	if sc.Network.Jitter < 0 {
		return fieldErr("network.jitter", "must not be negative")
	}
	if sc.Network.SendBuffer < 0 {
		return fieldErr("network.send_buffer", "must not be negative")
	}
	if sc.Runtime.LoopLag < 0 || sc.Runtime.LoopLag > MaxLoopLag {
		return fieldErr("runtime.loop_lag", "must be between 0 and "+MaxLoopLag.String())
	}
	if err := sc.validateClient(); err != nil {
		return err
	}
	for i := range sc.Faults {
		if err := sc.validateFault(i); err != nil {
			return err
		}
	}
	if err := sc.validateWorkload(); err != nil {
		return err
	}
	if err := sc.validateDedicated(); err != nil {
		return err
	}
	if err := sc.validatePubSub(); err != nil {
		return err
	}
	if err := sc.validateExpect(); err != nil {
		return err
	}
	for i, p := range sc.Plant {
		known := false
		for _, k := range knownPlants {
			known = known || p == k
		}
		if !known {
			names := make([]string, len(knownPlants))
			for j, k := range knownPlants {
				names[j] = string(k)
			}
			return fieldErr("plant["+strconv.Itoa(i)+"]", "unknown plant "+strconv.Quote(string(p))+
				" (want one of "+strings.Join(names, ", ")+")")
		}
	}
	return nil
}

func (sc *Scenario) validateTopology() error {
	t := &sc.Topology
	if t.Kind != TopologyStandalone {
		return fieldErr("topology.kind", "unsupported kind "+strconv.Quote(t.Kind)+" (want standalone)")
	}
	if len(t.Nodes) != 1 {
		return fieldErr("topology.nodes", "a standalone topology has exactly one node")
	}
	seen := map[string]bool{}
	for i, n := range t.Nodes {
		f := "topology.nodes[" + strconv.Itoa(i) + "].id"
		if n.ID == "" || strings.ContainsAny(n.ID, " \t\r\n:") {
			return fieldErr(f, "must be a non-empty name without spaces or colons")
		}
		if seen[n.ID] {
			return fieldErr(f, "duplicate node id "+strconv.Quote(n.ID))
		}
		seen[n.ID] = true
	}
	return nil
}

func (sc *Scenario) validateTarget(field string, t *Target, slotAllowed bool) error {
	hasNode, hasSlot := t.Node != "", t.ClientSlot != nil
	switch {
	case hasNode && hasSlot:
		return fieldErr(field, "set node or client_slot, not both")
	case !hasNode && !hasSlot && slotAllowed:
		return fieldErr(field, "needs a target: node or client_slot")
	case !hasNode && !hasSlot:
		return fieldErr(field+".node", "is required")
	case hasSlot && !slotAllowed:
		return fieldErr(field+".client_slot", "this fault targets a node only")
	case hasSlot && (*t.ClientSlot < 0 || *t.ClientSlot >= sc.Client.Connections):
		return fieldErr(field+".client_slot", "must be a slot in [0, client.connections)")
	}
	if hasNode && sc.node(t.Node) < 0 {
		return fieldErr(field+".node", "unknown node "+strconv.Quote(t.Node))
	}
	return nil
}

func (sc *Scenario) node(id string) int {
	for i := range sc.Topology.Nodes {
		if sc.Topology.Nodes[i].ID == id {
			return i
		}
	}
	return -1
}

func validateSpan(field string, r *TimeRange, positive bool) error {
	if r.Min < 0 {
		return fieldErr(field, "must not be negative")
	}
	if positive && r.Min <= 0 {
		return fieldErr(field, "must be positive")
	}
	if r.Max < r.Min {
		return fieldErr(field, "range ends before it starts")
	}
	return nil
}

func (sc *Scenario) validateFault(i int) error {
	f := &sc.Faults[i]
	base := "faults[" + strconv.Itoa(i) + "]"
	kinds := f.kinds()
	if len(kinds) == 0 {
		return fieldErr(base, "needs one fault kind (one of "+strings.Join(FaultKinds, ", ")+")")
	}
	if len(kinds) > 1 {
		return fieldErr(base, "has several fault kinds ("+strings.Join(kinds, ", ")+"); use one entry each")
	}
	if err := validateSpan(base+".at", &f.At, false); err != nil {
		return err
	}
	if f.At.Max >= sc.Duration {
		return fieldErr(base+".at", "must be before the end of the run ("+sc.Duration.String()+")")
	}
	field := base + "." + kinds[0]
	optSpan := func(name string, r *TimeRange) error {
		if r == nil {
			return nil
		}
		return validateSpan(field+"."+name, r, true)
	}
	switch {
	case f.Refuse != nil:
		if err := sc.validateTarget(field, &f.Refuse.Target, true); err != nil {
			return err
		}
		return optSpan("for", f.Refuse.For)
	case f.Blackhole != nil:
		if err := sc.validateTarget(field, &f.Blackhole.Target, true); err != nil {
			return err
		}
		return optSpan("for", f.Blackhole.For)
	case f.AcceptThenDrop != nil:
		if err := sc.validateTarget(field, &f.AcceptThenDrop.Target, true); err != nil {
			return err
		}
		if err := optSpan("for", f.AcceptThenDrop.For); err != nil {
			return err
		}
		if f.AcceptThenDrop.After != nil {
			return validateSpan(field+".after", f.AcceptThenDrop.After, false)
		}
	case f.Drop != nil:
		return sc.validateTarget(field, f.Drop, true)
	case f.DropAfterBytes != nil:
		if err := sc.validateTarget(field, &f.DropAfterBytes.Target, true); err != nil {
			return err
		}
		if f.DropAfterBytes.Bytes.Min < 1 {
			return fieldErr(field+".bytes", "must be at least 1")
		}
	case f.LoseReply != nil:
		return sc.validateTarget(field, f.LoseReply, true)
	case f.Delay != nil:
		if err := sc.validateTarget(field, &f.Delay.Target, true); err != nil {
			return err
		}
		if err := optSpan("for", f.Delay.For); err != nil {
			return err
		}
		return validateSpan(field+".extra", &f.Delay.Extra, true)
	case f.Kill != nil:
		if err := sc.validateTarget(field, &Target{Node: f.Kill.Node}, false); err != nil {
			return err
		}
		return optSpan("restart_after", f.Kill.RestartAfter)
	case f.HandshakeError != nil:
		if err := sc.validateTarget(field, &Target{Node: f.HandshakeError.Node}, false); err != nil {
			return err
		}
		code, _, _ := strings.Cut(f.HandshakeError.Reply, " ")
		if code == "" || strings.ToUpper(code) != code || strings.ContainsAny(f.HandshakeError.Reply, "\r\n") {
			return fieldErr(field+".reply", "must be an error reply starting with an upper-case code, such as \"LOADING Redis is loading the dataset in memory\"")
		}
		return optSpan("for", f.HandshakeError.For)
	case f.Pause != nil:
		if err := sc.validateTarget(field, &Target{Node: f.Pause.Node}, false); err != nil {
			return err
		}
		return optSpan("for", f.Pause.For)
	case f.SubscribeError != nil:
		return sc.validateSubscribeError(field, f.SubscribeError)
	case f.Push != nil:
		return sc.validatePush(field, f.Push)
	}
	return nil
}

func (sc *Scenario) validateWorkload() error {
	w := &sc.Workload
	switch {
	case w.Callers < 0:
		return fieldErr("workload.callers", "must not be negative")
	case w.Keys < 0:
		return fieldErr("workload.keys", "must not be negative")
	case w.Counters < 0:
		return fieldErr("workload.counters", "must not be negative")
	case w.Rate < 0:
		return fieldErr("workload.rate", "must not be negative")
	case w.Start < 0:
		return fieldErr("workload.start", "must not be negative")
	}
	m := w.Mix
	for _, kv := range []struct {
		name string
		v    int
	}{{"get", m.Get}, {"set", m.Set}, {"del", m.Del}, {"incr", m.Incr}, {"mget", m.MGet}, {"mset", m.MSet}} {
		if kv.v < 0 {
			return fieldErr("workload.mix."+kv.name, "must not be negative")
		}
	}
	if w.Callers == 0 {
		return nil
	}
	switch {
	case w.Rate <= 0:
		return fieldErr("workload.rate", "must be positive when there are callers (such as 200/s)")
	case m.total() == 0:
		return fieldErr("workload.mix", "needs at least one positive weight")
	case w.Keys < 1 && m.Get+m.Set+m.Del+m.MGet+m.MSet > 0:
		return fieldErr("workload.keys", "must be at least 1")
	case w.Counters < 1 && m.Incr > 0:
		return fieldErr("workload.counters", "must be at least 1 when the mix has incr")
	case w.Stop <= w.Start:
		return fieldErr("workload.stop", "must be after workload.start")
	case w.Stop > sc.Duration:
		return fieldErr("workload.stop", "must not be after the end of the run")
	}
	return nil
}

func (sc *Scenario) validateExpect() error {
	e := &sc.Expect
	for i, ev := range e.Events {
		f := "expect.events[" + strconv.Itoa(i) + "]"
		if ev.Slot < 0 || ev.Slot >= sc.Client.Connections {
			return fieldErr(f+".slot", "must be a slot in [0, client.connections)")
		}
		if len(ev.Delays) > 0 && len(ev.Delays) != len(ev.Attempts) {
			return fieldErr(f+".delays", "must align with attempts")
		}
		for j, a := range ev.Attempts {
			if a < 1 {
				return fieldErr(f+".attempts["+strconv.Itoa(j)+"]", "must be at least 1")
			}
		}
		for j, d := range ev.Delays {
			if d < 0 {
				return fieldErr(f+".delays["+strconv.Itoa(j)+"]", "must not be negative")
			}
		}
	}
	if o := e.Outcomes; o != nil {
		for _, b := range []struct {
			name string
			b    *Bounds
		}{{"ok", o.OK}, {"failed", o.Failed}, {"unknown", o.Unknown}, {"reconnect_limit", o.ReconnectLimit}} {
			if b.b == nil {
				continue
			}
			f := "expect.outcomes." + b.name
			if b.b.Min != nil && *b.b.Min < 0 {
				return fieldErr(f+".min", "must not be negative")
			}
			if b.b.Max != nil && *b.b.Max < 0 {
				return fieldErr(f+".max", "must not be negative")
			}
			if b.b.Min != nil && b.b.Max != nil && *b.b.Max < *b.b.Min {
				return fieldErr(f+".max", "must not be below min")
			}
		}
	}
	if l := e.Liveness; l != nil {
		if l.After < 0 || l.After > sc.Duration {
			return fieldErr("expect.liveness.after", "must be within the run")
		}
		if l.Within <= 0 {
			return fieldErr("expect.liveness.within", "must be positive")
		}
	}
	for i, name := range e.Fail {
		if strings.TrimSpace(name) == "" {
			return fieldErr("expect.fail["+strconv.Itoa(i)+"]", "must name a checker")
		}
	}
	return nil
}

// Resolve returns a copy of sc for seed: defaults filled in, every range fixed with the seed's
// fault-resolution stream (one generator per fault, so faults resolve independently), Seed set to
// seed. Resolving a resolved scenario with the same seed changes nothing.
func (sc *Scenario) Resolve(seed uint64) (*Scenario, error) {
	out := sc.Clone()
	out.Seed = seed
	out.applyDefaults()
	if err := out.Validate(); err != nil {
		return nil, err
	}
	for i := range out.Faults {
		f := &out.Faults[i]
		p := stream.New(seed, stream.Faults, uint64(i))
		// Every fault draws the same fields in the same order, whether or not they are ranges.
		f.At = f.At.resolve(stream.Unit(p))
		forDraw, afterDraw, extraDraw, bytesDraw := stream.Unit(p), stream.Unit(p), stream.Unit(p), stream.Unit(p)
		fix := func(r *TimeRange, u float64) {
			if r != nil {
				*r = r.resolve(u)
			}
		}
		switch {
		case f.Refuse != nil:
			fix(f.Refuse.For, forDraw)
		case f.Blackhole != nil:
			fix(f.Blackhole.For, forDraw)
		case f.AcceptThenDrop != nil:
			fix(f.AcceptThenDrop.For, forDraw)
			fix(f.AcceptThenDrop.After, afterDraw)
		case f.DropAfterBytes != nil:
			f.DropAfterBytes.Bytes = f.DropAfterBytes.Bytes.resolve(bytesDraw)
		case f.Delay != nil:
			fix(f.Delay.For, forDraw)
			f.Delay.Extra = f.Delay.Extra.resolve(extraDraw)
		case f.Kill != nil:
			fix(f.Kill.RestartAfter, afterDraw)
		case f.HandshakeError != nil:
			fix(f.HandshakeError.For, forDraw)
		case f.Pause != nil:
			fix(f.Pause.For, forDraw)
		case f.SubscribeError != nil:
			fix(f.SubscribeError.For, forDraw)
		case f.Push != nil:
			fix(f.Push.For, forDraw)
			f.Push.Every = f.Push.Every.resolve(extraDraw)
		}
	}
	return out, nil
}

// Clone returns a deep copy of sc.
func (sc *Scenario) Clone() *Scenario {
	out := *sc
	out.Topology.Nodes = cloneSlice(sc.Topology.Nodes)
	if p := sc.Client.ReconnectPolicy; p != nil {
		cp := *p
		out.Client.ReconnectPolicy = &cp
	}
	if sc.Faults != nil {
		out.Faults = make([]Fault, len(sc.Faults))
		for i := range sc.Faults {
			out.Faults[i] = sc.Faults[i].clone()
		}
	}
	out.Plant = cloneSlice(sc.Plant)
	e := &out.Expect
	e.Invariants.Names = cloneSlice(sc.Expect.Invariants.Names)
	e.Fail = cloneSlice(sc.Expect.Fail)
	if sc.Expect.Events != nil {
		e.Events = make([]EventExpect, len(sc.Expect.Events))
		for i, ev := range sc.Expect.Events {
			ev.Attempts = cloneSlice(ev.Attempts)
			ev.Delays = cloneSlice(ev.Delays)
			ev.Exhausted = clonePtr(ev.Exhausted)
			e.Events[i] = ev
		}
	}
	if o := sc.Expect.Outcomes; o != nil {
		e.Outcomes = &OutcomeExpect{OK: o.OK.clone(), Failed: o.Failed.clone(), Unknown: o.Unknown.clone(),
			ReconnectLimit: o.ReconnectLimit.clone()}
	}
	e.Liveness = clonePtr(sc.Expect.Liveness)
	sc.cloneDedicated(&out)
	sc.clonePubSub(&out)
	return &out
}

func (b *Bounds) clone() *Bounds {
	if b == nil {
		return nil
	}
	return &Bounds{Min: clonePtr(b.Min), Max: clonePtr(b.Max)}
}

func (t Target) clone() Target {
	t.ClientSlot = clonePtr(t.ClientSlot)
	return t
}

func (f *Fault) clone() Fault {
	out := Fault{At: f.At}
	if x := f.Refuse; x != nil {
		out.Refuse = &WindowFault{Target: x.Target.clone(), For: clonePtr(x.For)}
	}
	if x := f.Blackhole; x != nil {
		out.Blackhole = &WindowFault{Target: x.Target.clone(), For: clonePtr(x.For)}
	}
	if x := f.AcceptThenDrop; x != nil {
		out.AcceptThenDrop = &AcceptThenDropFault{Target: x.Target.clone(), For: clonePtr(x.For), After: clonePtr(x.After)}
	}
	if x := f.Drop; x != nil {
		t := x.clone()
		out.Drop = &t
	}
	if x := f.DropAfterBytes; x != nil {
		out.DropAfterBytes = &DropAfterBytesFault{Target: x.Target.clone(), Bytes: x.Bytes}
	}
	if x := f.LoseReply; x != nil {
		t := x.clone()
		out.LoseReply = &t
	}
	if x := f.Delay; x != nil {
		out.Delay = &DelayFault{Target: x.Target.clone(), For: clonePtr(x.For), Extra: x.Extra}
	}
	if x := f.Kill; x != nil {
		out.Kill = &KillFault{Node: x.Node, RestartAfter: clonePtr(x.RestartAfter)}
	}
	if x := f.HandshakeError; x != nil {
		out.HandshakeError = &HandshakeErrorFault{Node: x.Node, For: clonePtr(x.For), Reply: x.Reply}
	}
	if x := f.Pause; x != nil {
		out.Pause = &PauseFault{Node: x.Node, For: clonePtr(x.For)}
	}
	out.SubscribeError = f.SubscribeError.clone()
	out.Push = f.Push.clone()
	return out
}

func cloneSlice[T any](s []T) []T {
	if s == nil {
		return nil
	}
	return append(make([]T, 0, len(s)), s...)
}

func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}
