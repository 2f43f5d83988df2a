package check

import (
	"hash/fnv"
	"html"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/respire-go/respire/sim/record"
)

// LinearizabilityTimeout bounds one porcupine check. A check that times out is reported as a
// violation, never as a pass.
const LinearizabilityTimeout = 30 * time.Second

// Linearizable checks per-key linearizability of the workload with porcupine (DESIGN checker
// 10). Definite failures and server error replies took no effect and are left out. An operation
// with an unknown outcome is, from the client's point of view, open-ended: it may take effect any
// time until the end of the run, or never. The simulator knows which: the nodes' apply logs say
// whether and when each command was executed. A simulated node executes a command atomically at
// its apply time, so that instant is the command's true linearization point. The checker pins
// each unknown operation there (an applied one becomes the point [apply, apply]; one never applied
// took no effect and is left out). This keeps the search tractable after long outages (dozens of
// interchangeable unknown INCRs would otherwise be permuted combinatorially) without weakening
// what is checked: every read and every acknowledged operation keeps the window its caller
// observed and is checked against every possible order. Runs without apply records (synthetic
// histories) fall back to branching between applied and not applied up to the end of the run.
type Linearizable struct{}

// Name implements Checker.
func (Linearizable) Name() string { return CheckLinearizable }

// Check implements Checker.
func (Linearizable) Check(r *record.Result) []Violation {
	ops := linearOps(r)
	if len(ops) == 0 {
		return nil
	}
	res, info := porcupine.CheckOperationsVerbose(registerModel, ops, LinearizabilityTimeout)
	switch res {
	case porcupine.Ok:
		return nil
	case porcupine.Unknown:
		return []Violation{violation(CheckLinearizable, r.End, undecided())}
	}
	var out []Violation
	parts := partitionByKey(ops)
	partials := info.PartialLinearizationsOperations()
	for _, i := range illegalParts(parts) {
		if i < len(partials) {
			out = append(out, firstIllegal(parts[i], partials[i], r))
		}
	}
	if len(out) == 0 {
		out = append(out, violation(CheckLinearizable, r.End, "history is not linearizable for key(s) "+illegalKeys(ops)))
	}
	return out
}

// FirstIllegal describes where one key's history stops being linearizable: the operation that
// no order of the longest linearizable part of the history explains. It is the operation, among
// those left out of porcupine's longest partial linearization, that returned first. The
// violation's time is that operation's return; its message names the key, the operation's id,
// caller, call and return times, and the key's state after the longest linearization.
func firstIllegal(part []porcupine.Operation, partials [][]porcupine.Operation, r *record.Result) Violation {
	key := part[0].Input.(linIn).key
	var longest []porcupine.Operation
	for _, p := range partials {
		if len(p) > len(longest) {
			longest = p
		}
	}
	in := map[porcupine.Operation]bool{}
	state := register{}
	for _, op := range longest {
		in[op] = true
		if next, ok := apply(state, op.Input.(linIn)); ok && !op.Output.(linOut).unknown {
			state = next
		}
	}
	var culprit *porcupine.Operation
	for i := range part {
		op := &part[i]
		if !in[*op] && (culprit == nil || op.Return < culprit.Return) {
			culprit = op
		}
	}
	if culprit == nil {
		return violation(CheckLinearizable, r.End, "history is not linearizable for key "+key)
	}
	id, _ := culprit.Metadata.(uint64)
	call, ret := time.Duration(culprit.Call/tickScale), time.Duration(culprit.Return/tickScale)
	desc := registerModel.DescribeOperation(culprit.Input, culprit.Output)
	after := "nil"
	if state.exists {
		after = strconv.Quote(state.str)
	}
	return violation(CheckLinearizable, ret, "key "+key+": op "+u(id)+" "+desc+" (caller "+strconv.Itoa(culprit.ClientId)+
		", called "+call.String()+", returned "+ret.String()+") fits no order of the key's history: the longest linearizable part has "+
		strconv.Itoa(len(longest))+" of "+strconv.Itoa(len(part))+" operations, ending with the key at "+after)
}

// WriteLinearizability writes porcupine's HTML visualization of the run's per-key histories.
func WriteLinearizability(r *record.Result, w io.Writer) error {
	_, info := porcupine.CheckOperationsVerbose(registerModel, linearOps(r), LinearizabilityTimeout)
	return porcupine.Visualize(registerModel, info, w)
}

// IllegalKeys returns the keys whose history is not linearizable, sorted: those porcupine proves
// so within LinearizabilityTimeout for them all (illegalParts).
func IllegalKeys(r *record.Result) []string {
	var bad []string
	parts := partitionByKey(linearOps(r))
	for _, i := range illegalParts(parts) {
		bad = append(bad, parts[i][0].Input.(linIn).key)
	}
	return bad
}

// WriteLinearizabilityKey writes porcupine's HTML visualization of key's history alone, titled
// for the key and scrolled to its first error once it has rendered (porcupine's own "jump to
// first error").
func WriteLinearizabilityKey(r *record.Result, key string, w io.Writer) error {
	var ops []porcupine.Operation
	for _, op := range linearOps(r) {
		if op.Input.(linIn).key == key {
			ops = append(ops, op)
		}
	}
	_, info := porcupine.CheckOperationsVerbose(registerModel, ops, LinearizabilityTimeout)
	var buf strings.Builder
	if err := porcupine.Visualize(registerModel, info, &buf); err != nil {
		return err
	}
	page := strings.Replace(buf.String(), "<title>Porcupine</title>",
		"<title>respire-sim: history of key "+html.EscapeString(key)+"</title>", 1)
	page = strings.Replace(page, "</body>", `<script>
window.addEventListener('load', () => {
  // Open at the error at once: porcupine's jump scrolls smoothly, an animation that a page
  // just opened has no use for.
  const scroll = Element.prototype.scrollIntoView
  Element.prototype.scrollIntoView = function (options) {
    return scroll.call(this, Object.assign({}, options, {behavior: 'auto'}))
  }
  const jump = document.querySelector('#jump-link')
  if (jump && !jump.classList.contains('inactive')) jump.dispatchEvent(new MouseEvent('click', {bubbles: true}))
})
</script>
</body>`, 1)
	_, err := io.WriteString(w, page)
	return err
}

// illegalKeys names the keys whose partition alone is not linearizable.
func illegalKeys(ops []porcupine.Operation) string {
	var bad []string
	parts := partitionByKey(ops)
	for _, i := range illegalParts(parts) {
		bad = append(bad, parts[i][0].Input.(linIn).key)
	}
	sort.Strings(bad)
	return strings.Join(bad, ", ")
}

// linIn is one per-key operation's input.
type linIn struct {
	kind byte // 'g' get, 's' set, 'd' del, 'i' incr
	key  string
	val  string
}

// linOut is one per-key operation's observed output.
type linOut struct {
	// unknown: no reply was observed.
	unknown bool
	// applied: the operation is known to have taken effect (ground truth, or a multi-key DEL
	// that replied), though its per-key output is unknown.
	applied bool
	datum   record.Datum
}

// register is the model state of one key. Counters hold their decimal text.
type register struct {
	exists bool
	str    string
}

// tickScale spreads each virtual nanosecond over tickScale porcupine ticks, so that commands a
// node applied at the same virtual instant keep their apply-log order (the node executes them one
// after another). A client-observed call maps to the instant's first tick and a return to its
// last, so observed windows still cover everything that happened at their edges.
const tickScale = 1024

func callTick(t time.Duration) int64 { return int64(t) * tickScale }

func returnTick(t time.Duration) int64 { return int64(t)*tickScale + tickScale - 1 }

// linearOps turns the workload into per-key porcupine operations, with the lost datasets.
func linearOps(r *record.Result) []porcupine.Operation {
	ops := workloadOps(r, len(r.Applies) > 0)
	return append(ops, dataLosses(r, ops)...)
}

// workloadOps turns the workload into per-key porcupine operations; groundTruth says r's apply
// logs tell which unknown operations took effect, and when.
func workloadOps(r *record.Result, groundTruth bool) []porcupine.Operation {
	var ops []porcupine.Operation
	end := returnTick(r.End + 1)
	// appliedTick is each command's position in the apply log, as a tick: its apply instant
	// plus its rank among the commands applied at that instant.
	appliedTick := map[uint64]int64{}
	var last time.Duration = -1
	rank := int64(0)
	for _, a := range r.Applies {
		if a.At != last {
			last, rank = a.At, 0
		}
		if _, seen := appliedTick[a.CmdID]; !seen && a.CmdID != 0 {
			appliedTick[a.CmdID] = callTick(a.At) + min(rank, tickScale-2)
		}
		rank++
	}
	diverged := map[uint64]bool{} // what an old primary applied on its discarded copy (sentinel.go)
	for _, id := range SplitLosses(r) {
		diverged[id] = true
	}
	stale := staleReads(r) // replica reads served from a stale copy (linear_stale.go)
	for _, op := range r.Ops {
		if op.Outcome == record.OpFailed || (op.Outcome == record.OpOK && op.ServerError != "") || diverged[op.ID] {
			continue
		}
		unknown := op.Outcome != record.OpOK
		applied := false
		ret := returnTick(op.Return)
		if unknown {
			ret = end
			if groundTruth {
				at, ok := appliedTick[op.ID]
				if !ok || op.Name == "GET" || op.Name == "MGET" {
					continue // never executed, or a read whose reply nobody saw: no effect
				}
				applied, ret = true, at
			}
		}
		call := callTick(op.Call)
		if s, ok := stale[op.ID]; ok {
			call = callTick(s.from) // a stale replica read: explained by a state since its link went down
			if s.pinned {
				ret = returnTick(s.from) // by the state at that instant alone
			}
		}
		if applied {
			call = ret // pinned at its apply time
		}
		add := func(in linIn, out linOut) {
			ops = append(ops, porcupine.Operation{ClientId: op.Caller, Input: in, Output: out,
				Call: call, Return: ret, Metadata: op.ID})
		}
		reply := func(i int) linOut {
			if unknown || i >= len(op.Reply) {
				return linOut{unknown: true, applied: applied}
			}
			return linOut{datum: op.Reply[i]}
		}
		switch op.Name {
		case "GET":
			add(linIn{kind: 'g', key: op.Keys[0]}, reply(0))
		case "MGET":
			for i, k := range op.Keys {
				add(linIn{kind: 'g', key: k}, reply(i))
			}
		case "SET", "MSET":
			for i, k := range op.Keys {
				add(linIn{kind: 's', key: k, val: op.Values[i]}, linOut{unknown: unknown, applied: applied})
			}
		case "DEL":
			for i, k := range op.Keys {
				out := reply(i)
				if len(op.Keys) > 1 {
					out = linOut{unknown: true, applied: applied || !unknown} // a total count cannot be split per key
				}
				add(linIn{kind: 'd', key: k}, out)
			}
		case "INCR":
			add(linIn{kind: 'i', key: op.Keys[0]}, reply(0))
		}
	}
	return ops
}

// dataLossClient is the porcupine client of the deletions that stand for lost datasets.
const dataLossClient = 1 << 20

// dataLosses returns, for each kill with lose_data that took place, a deletion of every key of
// ops at the kill's instant, after the commands the node applied at that instant: the dataset
// the node lost. Porcupine then judges reads after the restart against an empty dataset.
func dataLosses(r *record.Result, ops []porcupine.Operation) []porcupine.Operation {
	if r.Scenario == nil {
		return nil
	}
	var keys []string
	seen := map[string]bool{}
	var out []porcupine.Operation
	for _, at := range lossTicks(r) {
		if keys == nil {
			for _, op := range ops {
				if key := op.Input.(linIn).key; !seen[key] {
					seen[key] = true
					keys = append(keys, key)
				}
			}
			sort.Strings(keys)
		}
		for _, key := range keys {
			out = append(out, lossOp(key, at))
		}
	}
	return out
}

// lossTicks returns the ticks of the kills with lose_data that took place in r's records (from
// r.Start until r.End), in scenario order.
func lossTicks(r *record.Result) []int64 {
	if r.Scenario == nil {
		return nil
	}
	var out []int64
	for i := range r.Scenario.Faults {
		k := r.Scenario.Faults[i].Kill
		if k == nil || !k.LoseData || i >= len(r.Faults) || r.Faults[i].From >= r.End || r.Faults[i].From < r.Start {
			continue
		}
		out = append(out, returnTick(r.Faults[i].From))
	}
	return out
}

// lossOp is the deletion of key that stands for a lost dataset at tick at.
func lossOp(key string, at int64) porcupine.Operation {
	return porcupine.Operation{ClientId: dataLossClient, Input: linIn{kind: 'd', key: key},
		Output: linOut{unknown: true, applied: true}, Call: at, Return: at}
}

func partitionByKey(ops []porcupine.Operation) [][]porcupine.Operation {
	byKey := map[string][]porcupine.Operation{}
	for _, op := range ops {
		k := op.Input.(linIn).key
		byKey[k] = append(byKey[k], op)
	}
	keys := make([]string, 0, len(byKey))
	for k := range byKey {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([][]porcupine.Operation, 0, len(keys))
	for _, k := range keys {
		out = append(out, byKey[k])
	}
	return out
}

// registerModel is a nondeterministic model of one Redis key under GET, SET, DEL and INCR.
var registerModel = registerNondet.ToModel()

// registerNondet is registerModel before its conversion: the key starts missing.
var registerNondet = &porcupine.NondeterministicModel{
	Partition: partitionByKey,
	Init:      func() []interface{} { return []interface{}{register{}} },
	Step: func(state, input, output interface{}) []interface{} {
		s, in, out := state.(register), input.(linIn), output.(linOut)
		applied, ok := apply(s, in)
		if out.unknown {
			switch {
			case !ok || applied == s:
				return []interface{}{s}
			case out.applied:
				return []interface{}{applied}
			}
			return []interface{}{s, applied}
		}
		switch in.kind {
		case 'g':
			if out.datum.Null != !s.exists || (s.exists && out.datum.Str != s.str) {
				return nil
			}
		case 'd':
			want := int64(0)
			if s.exists {
				want = 1
			}
			if out.datum.Int != want {
				return nil
			}
		case 'i':
			if !ok || !out.datum.IsInt || strconv.FormatInt(out.datum.Int, 10) != applied.str {
				return nil
			}
		}
		return []interface{}{applied}
	},
	Equal: func(a, b interface{}) bool { return a.(register) == b.(register) },
	Hash: func(state interface{}) uint64 {
		s := state.(register)
		h := fnv.New64a()
		if s.exists {
			h.Write([]byte{1})
		}
		h.Write([]byte(s.str))
		return h.Sum64()
	},
	DescribeOperation: func(input, output interface{}) string {
		in, out := input.(linIn), output.(linOut)
		res := "?"
		if !out.unknown {
			switch {
			case out.datum.Null:
				res = "nil"
			case out.datum.IsInt:
				res = strconv.FormatInt(out.datum.Int, 10)
			default:
				res = strconv.Quote(out.datum.Str)
			}
		}
		switch in.kind {
		case 'g':
			return "get(" + in.key + ") -> " + res
		case 's':
			return "set(" + in.key + ", " + in.val + ")" + map[bool]string{true: " ?", false: ""}[out.unknown]
		case 'd':
			return "del(" + in.key + ") -> " + res
		default:
			return "incr(" + in.key + ") -> " + res
		}
	},
	DescribeState: func(state interface{}) string {
		s := state.(register)
		if !s.exists {
			return "nil"
		}
		return strconv.Quote(s.str)
	},
}

// apply returns the state after in takes effect, and false if it cannot (INCR on a non-integer).
func apply(s register, in linIn) (register, bool) {
	switch in.kind {
	case 's':
		return register{exists: true, str: in.val}, true
	case 'd':
		return register{}, true
	case 'i':
		n := int64(0)
		if s.exists {
			v, err := strconv.ParseInt(s.str, 10, 64)
			if err != nil {
				return s, false
			}
			n = v
		}
		return register{exists: true, str: strconv.FormatInt(n+1, 10)}, true
	}
	return s, true
}
