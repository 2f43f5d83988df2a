package check

import (
	"slices"
	"sort"
	"strconv"

	"github.com/anishathalye/porcupine"

	"github.com/respire-go/respire/sim/record"
)

// linearStream checks linearizability one segment at a time (Stream). A cut is quiescent: every
// operation of a segment returned before the next segment's first was called, so a key's history
// is linearizable if and only if each segment's part of it is, starting from one of the states
// the previous part may have left the key in. After a part checks, the stream computes those
// states and forgets the part: the last write of any linearization is a write that no other write
// of the part follows in real time, so only those writes' results are candidates, and each
// candidate is kept if the part followed by a read of it (after everything) is still
// linearizable. When a candidate's result is not known (an INCR whose reply was lost), the part
// is carried into the next segment instead, so that the next part decides.
type linearStream struct {
	keys map[string]*keyHistory
}

// keyHistory is what the stream keeps of one key.
type keyHistory struct {
	// init are the states the key may be in at the start of the next part (nil: missing).
	init []register
	// carried is a part whose end state was left open, to be checked again with the next.
	carried []porcupine.Operation
	// failed: a violation was reported for the key; its later parts are not checked.
	failed bool
}

func newLinearStream() *linearStream { return &linearStream{keys: map[string]*keyHistory{}} }

// probeClient is the porcupine client of the reads that probe a part's end states.
const probeClient = dataLossClient + 1

func (l *linearStream) segment(seg *record.Result) []Violation { return l.check(seg, false) }

func (l *linearStream) finish(r *record.Result) []Violation { return l.check(r, true) }

// check checks the part of each key's history in r; last says no part follows.
func (l *linearStream) check(r *record.Result, last bool) []Violation {
	byKey := map[string][]porcupine.Operation{}
	for _, op := range workloadOps(r, true) {
		k := op.Input.(linIn).key
		byKey[k] = append(byKey[k], op)
	}
	for k := range byKey {
		if l.keys[k] == nil {
			l.keys[k] = &keyHistory{}
		}
	}
	losses := lossTicks(r)
	keys := make([]string, 0, len(l.keys))
	for k := range l.keys {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var out []Violation
	for _, k := range keys {
		h := l.keys[k]
		if h.failed {
			continue
		}
		part := append(h.carried, byKey[k]...)
		for _, at := range losses {
			part = append(part, lossOp(k, at))
		}
		if len(part) == 0 {
			continue
		}
		if v, ok := h.check(part, r, last); !ok {
			out = append(out, v)
		}
	}
	return out
}

// check checks part from the key's states and, unless last, moves them past it. It returns the
// violation when part is not linearizable.
func (h *keyHistory) check(part []porcupine.Operation, r *record.Result, last bool) (Violation, bool) {
	model := h.model()
	res, info := porcupine.CheckOperationsVerbose(model, part, LinearizabilityTimeout)
	switch res {
	case porcupine.Unknown:
		h.failed = true
		return violation(CheckLinearizable, r.End, "key "+part[0].Input.(linIn).key+": "+undecided()), false
	case porcupine.Illegal:
		h.failed = true
		var partials [][]porcupine.Operation
		if all := info.PartialLinearizationsOperations(); len(all) > 0 {
			partials = all[0]
		}
		return firstIllegal(part, partials, r), false
	}
	if last {
		return Violation{}, true
	}
	if states, ok := endStates(model, h.init, part); ok {
		h.init, h.carried = states, nil
	} else {
		h.carried = part
	}
	return Violation{}, true
}

// model is the register model starting from the key's states.
func (h *keyHistory) model() porcupine.Model {
	if h.init == nil {
		return registerModel
	}
	m := *registerNondet
	init := make([]interface{}, len(h.init))
	for i, s := range h.init {
		init[i] = s
	}
	m.Init = func() []interface{} { return init }
	return m.ToModel()
}

// endStates returns the states a linearizable part may leave its key in, or false when a
// candidate's result is unknown.
func endStates(model porcupine.Model, init []register, part []porcupine.Operation) ([]register, bool) {
	var candidates []register
	first, second := int64(-1), int64(-1) // the latest two calls among the writes
	latest := 0                           // how many writes have the latest call
	for _, op := range part {
		if op.Input.(linIn).kind == 'g' {
			continue
		}
		switch {
		case op.Call > first:
			second, first, latest = first, op.Call, 1
		case op.Call == first:
			latest++
		case op.Call > second:
			second = op.Call
		}
	}
	if first < 0 {
		candidates = init // a part of reads leaves the key as it found it
		if candidates == nil {
			candidates = []register{{}}
		}
	}
	for _, op := range part {
		in := op.Input.(linIn)
		if in.kind == 'g' {
			continue
		}
		other := first // the latest call among the other writes
		if op.Call == first && latest == 1 {
			other = second
		}
		if op.Return < other {
			continue // another write follows it: it cannot be the last
		}
		switch in.kind {
		case 's':
			candidates = append(candidates, register{exists: true, str: in.val})
		case 'd':
			candidates = append(candidates, register{})
		case 'i':
			out := op.Output.(linOut)
			if out.unknown || !out.datum.IsInt {
				return nil, false
			}
			candidates = append(candidates, register{exists: true, str: strconv.FormatInt(out.datum.Int, 10)})
		}
	}
	slices.SortFunc(candidates, func(a, b register) int {
		switch {
		case a == b:
			return 0
		case !a.exists && b.exists, a.exists == b.exists && a.str < b.str:
			return -1
		}
		return 1
	})
	candidates = slices.Compact(candidates)
	if len(candidates) == 1 {
		return candidates, true // the part is linearizable: its one candidate is its end
	}
	end := int64(0)
	for _, op := range part {
		end = max(end, op.Return)
	}
	var states []register
	probed := append(part[:len(part):len(part)], porcupine.Operation{})
	for _, c := range candidates {
		probed[len(part)] = porcupine.Operation{ClientId: probeClient, Input: linIn{kind: 'g', key: part[0].Input.(linIn).key},
			Output: linOut{datum: record.Datum{Null: !c.exists, Str: c.str}}, Call: end + 1, Return: end + 2}
		if porcupine.CheckOperations(model, probed) {
			states = append(states, c)
		}
	}
	return states, len(states) > 0
}
