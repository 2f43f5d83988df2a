package sim

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/sim/record"
)

const sec = time.Second

// steps returns the recorded steps of kind whose event time lies in [from, to).
func steps(res *record.Result, kind fsm.EventKind, from, to time.Duration) []record.Step {
	var out []record.Step
	for _, s := range res.Steps {
		if s.Event.Kind == kind && s.Event.At >= from && s.Event.At < to {
			out = append(out, s)
		}
	}
	return out
}

// effects returns the effects of kind produced by steps in [from, to).
func effects(res *record.Result, kind fsm.EffectKind, from, to time.Duration) []fsm.Effect {
	var out []fsm.Effect
	for _, s := range res.Steps {
		if s.Event.At < from || s.Event.At >= to {
			continue
		}
		for _, f := range s.Effects {
			if f.Kind == kind {
				out = append(out, f)
			}
		}
	}
	return out
}

// ops returns the operations called in [from, to).
func ops(res *record.Result, from, to time.Duration) []record.Op {
	var out []record.Op
	for _, op := range res.Ops {
		if op.Call >= from && op.Call < to {
			out = append(out, op)
		}
	}
	return out
}

func countOutcome(list []record.Op, o record.OpOutcome) int {
	n := 0
	for _, op := range list {
		if op.Outcome == o {
			n++
		}
	}
	return n
}

// connSlots maps each connection to its slot, from the Dial effects.
func connSlots(res *record.Result) map[fsm.ConnID]int {
	m := map[fsm.ConnID]int{}
	for _, f := range effects(res, fsm.Dial, 0, res.End+1) {
		m[f.Conn] = f.Slot
	}
	return m
}

func errText(ev fsm.Event) string {
	if ev.Err == nil {
		return ""
	}
	return ev.Err.Error()
}

// checkNodeModel replays the apply log against a model of the dataset and checks every
// acknowledged reply against it: the node's semantics, persistence across restarts, and FIFO
// reply pairing all show here.
func checkNodeModel(t *testing.T, res *record.Result) {
	t.Helper()
	bad, checked := nodeModelMismatches(res)
	if len(bad) > 0 {
		t.Fatal(strings.Join(bad, "\n"))
	}
	if checked == 0 {
		t.Fatal("no acknowledged operation to check")
	}
}

// nodeModelMismatches returns the acknowledged operations whose reply differs from the model
// replayed over the apply log, and how many replies it compared.
func nodeModelMismatches(res *record.Result) (bad []string, checked int) {
	byID := map[uint64]*record.Op{}
	for i := range res.Ops {
		byID[res.Ops[i].ID] = &res.Ops[i]
	}
	data := map[string]string{}
	for _, a := range res.Applies {
		op := byID[a.CmdID]
		if op == nil {
			bad = append(bad, "apply of unknown command id "+strconv.FormatUint(a.CmdID, 10))
			continue
		}
		if op.Name != a.Name {
			bad = append(bad, "apply "+strconv.FormatUint(a.CmdID, 10)+" is "+a.Name+", the op is "+op.Name)
			continue
		}
		var want []record.Datum
		switch op.Name {
		case "GET":
			want = []record.Datum{lookupDatum(data, op.Keys[0])}
		case "MGET":
			for _, k := range op.Keys {
				want = append(want, lookupDatum(data, k))
			}
		case "SET":
			data[op.Keys[0]] = op.Values[0]
			want = []record.Datum{{Str: "OK"}}
		case "MSET":
			for i, k := range op.Keys {
				data[k] = op.Values[i]
			}
			want = []record.Datum{{Str: "OK"}}
		case "DEL":
			n := int64(0)
			for _, k := range op.Keys {
				if _, ok := data[k]; ok {
					n++
					delete(data, k)
				}
			}
			want = []record.Datum{{Int: n, IsInt: true}}
		case "INCR":
			v, _ := strconv.ParseInt(data[op.Keys[0]], 10, 64)
			v++
			data[op.Keys[0]] = strconv.FormatInt(v, 10)
			want = []record.Datum{{Int: v, IsInt: true}}
		}
		if op.Outcome != record.OpOK || op.ServerError != "" {
			continue
		}
		checked++
		same := len(op.Reply) == len(want)
		for i := 0; same && i < len(want); i++ {
			same = op.Reply[i] == want[i]
		}
		if !same {
			bad = append(bad, fmtMismatch(op, want))
		}
	}
	return bad, checked
}

func fmtMismatch(op *record.Op, want []record.Datum) string {
	return "op " + strconv.FormatUint(op.ID, 10) + " " + op.Name + " " + strings.Join(op.Keys, ",") +
		": reply " + fmtData(op.Reply) + ", model " + fmtData(want)
}

func fmtData(ds []record.Datum) string {
	var parts []string
	for _, d := range ds {
		switch {
		case d.Null:
			parts = append(parts, "nil")
		case d.IsInt:
			parts = append(parts, strconv.FormatInt(d.Int, 10))
		default:
			parts = append(parts, strconv.Quote(d.Str))
		}
	}
	return "[" + strings.Join(parts, " ") + "]"
}

func lookupDatum(data map[string]string, k string) record.Datum {
	if v, ok := data[k]; ok {
		return record.Datum{Str: v}
	}
	return record.Datum{Null: true}
}

// TestNodeModel: for every scenario without plants, acknowledged replies match the apply log (an
// error reply, such as a Cluster's CLUSTERDOWN after the redirect budget, applied nothing).
func TestNodeModel(t *testing.T) {
	for _, path := range testdataScenarios(t) {
		sc := shortened(t, path, 30)
		if len(sc.Plant) > 0 {
			continue
		}
		t.Run(sc.Name, func(t *testing.T) {
			res := run(t, sc, sc.Seed, false)
			checkNodeModel(t, res)
			seen := map[uint64]bool{}
			for _, a := range res.Applies {
				if seen[a.CmdID] {
					t.Fatalf("command %d applied twice", a.CmdID)
				}
				seen[a.CmdID] = true
				if !a.AfterHandshake {
					t.Fatalf("command %d applied before its handshake", a.CmdID)
				}
			}
			if len(res.Duplicates) != 0 {
				t.Fatalf("commands completed twice: %+v", res.Duplicates)
			}
			for _, op := range res.Ops {
				if op.Outcome == record.OpPending {
					t.Fatalf("op %+v pending", op)
				}
				if op.Outcome == record.OpFailed && seen[op.ID] {
					t.Fatalf("op %d failed definitely but was applied", op.ID)
				}
				if op.Outcome == record.OpOK && op.ServerError == "" && !seen[op.ID] {
					t.Fatalf("op %d acknowledged but not applied", op.ID)
				}
			}
		})
	}
}

// TestFaultRefuseSlot: slot 2's connection is dropped and its replacements refused; with two
// attempts allowed it exhausts after delays 50ms and 100ms while the other slots keep serving.
func TestFaultRefuseSlot(t *testing.T) {
	sc := mustLoad(t, "testdata/slot_exhaustion.yaml")
	res := run(t, sc, sc.Seed, false)
	slots := connSlots(res)
	lost := steps(res, fsm.ConnLost, 10*sec, 11*sec)
	if len(lost) != 1 || slots[lost[0].Event.Conn] != 2 {
		t.Fatalf("want slot 2's connection lost once at 10s, got %+v", lost)
	}
	failed := steps(res, fsm.DialFailed, 10*sec, res.End+1)
	if len(failed) != 2 {
		t.Fatalf("want 2 refused replacements, got %d", len(failed))
	}
	for _, s := range failed {
		if slots[s.Event.Conn] != 2 || !strings.Contains(errText(s.Event), "connection refused") || s.Event.Class != fsm.Transient {
			t.Fatalf("unexpected dial failure %s", s.Event.String())
		}
	}
	var attempts []int
	for _, d := range effects(res, fsm.Dial, 10*sec, res.End+1) {
		if d.Slot != 2 {
			t.Fatalf("dial of slot %d after the drop", d.Slot)
		}
		attempts = append(attempts, d.Attempt)
	}
	var delays []time.Duration
	for _, a := range effects(res, fsm.ArmTimer, 10*sec, res.End+1) {
		delays = append(delays, a.After)
	}
	if len(attempts) != 2 || attempts[0] != 1 || attempts[1] != 2 {
		t.Fatalf("attempts %v, want [1 2]", attempts)
	}
	if len(delays) != 2 || delays[0] != 50*time.Millisecond || delays[1] != 100*time.Millisecond {
		t.Fatalf("delays %v, want [50ms 100ms]", delays)
	}
	exhausted := 0
	for _, e := range effects(res, fsm.Emit, 10*sec, res.End+1) {
		if e.Lifecycle.Exhausted && e.Lifecycle.Slot == 2 {
			exhausted++
		}
	}
	if exhausted != 1 {
		t.Fatalf("slot 2 exhausted %d times, want once", exhausted)
	}
	late := ops(res, 11*sec, res.End)
	if len(late) < 1000 || countOutcome(late, record.OpOK) != len(late) {
		t.Fatalf("healthy slots must serve every operation after the drop: %d ops, %d ok", len(late), countOutcome(late, record.OpOK))
	}
	if res.Faults[0] != (record.Window{From: 10 * sec, To: res.End}) || res.Faults[1] != (record.Window{From: 10 * sec, To: 10 * sec}) {
		t.Fatalf("fault windows %+v", res.Faults)
	}
}

// TestFaultAcceptThenDrop: during the window every new connection becomes ready and is dropped
// 100ms later; each loss starts a new episode at attempt 1; afterwards connections stay up.
func TestFaultAcceptThenDrop(t *testing.T) {
	sc := mustLoad(t, "testdata/accept_then_drop.yaml")
	res := run(t, sc, sc.Seed, false)
	ready := map[fsm.ConnID]time.Duration{}
	for _, s := range steps(res, fsm.HandshakeDone, 0, res.End+1) {
		ready[s.Event.Conn] = s.Event.At
	}
	lost := steps(res, fsm.ConnLost, 5*sec+time.Millisecond, res.End+1)
	if len(lost) < 20 {
		t.Fatalf("only %d connections dropped during the window", len(lost))
	}
	for _, s := range lost {
		at, ok := ready[s.Event.Conn]
		if !ok {
			t.Fatalf("conn %d lost without being ready", s.Event.Conn)
		}
		if life := s.Event.At - at; life < 100*time.Millisecond || life > 102*time.Millisecond {
			t.Fatalf("conn %d lived %v, want 100ms plus a latency", s.Event.Conn, life)
		}
		if s.Event.At > 10*sec+200*time.Millisecond {
			t.Fatalf("conn %d dropped at %v, after the window", s.Event.Conn, s.Event.At)
		}
	}
	for _, d := range effects(res, fsm.Dial, 5*sec, res.End+1) {
		if d.Attempt != 1 {
			t.Fatalf("dial attempt %d: a peer that accepts then drops starts every episode at attempt 1", d.Attempt)
		}
	}
	if late := ops(res, 11*sec, res.End); countOutcome(late, record.OpOK) != len(late) || len(late) == 0 {
		t.Fatal("operations after the window must succeed")
	}
}

// TestFaultDropAfterBytes: the connection is cut mid-stream once the byte budget is spent,
// leaving written commands with unknown outcomes.
func TestFaultDropAfterBytes(t *testing.T) {
	sc := mustLoad(t, "testdata/drop_after_bytes.yaml")
	res := run(t, sc, sc.Seed, true)
	cut := ""
	for _, l := range res.Trace {
		if strings.Contains(l, "reason=drop-after-bytes") {
			cut = l
		}
	}
	if cut == "" {
		t.Fatal("no drop-after-bytes cut in the trace")
	}
	w := res.Faults[0]
	if w.From != 3*sec || w.To <= w.From || w.To > 4*sec {
		t.Fatalf("window %+v: the fault must end when it triggers", w)
	}
	if len(steps(res, fsm.ConnLost, w.To, w.To+10*time.Millisecond)) != 1 {
		t.Fatal("the cut connection was not lost")
	}
	unknown := countOutcome(ops(res, 0, res.End), record.OpUnknown)
	if unknown == 0 {
		t.Fatal("a cut with traffic in flight must leave unknown outcomes")
	}
	for _, op := range res.Ops {
		if op.Outcome == record.OpUnknown && op.Stage != "awaiting-reply" {
			t.Fatalf("unknown op %d at stage %s", op.ID, op.Stage)
		}
	}
}

// TestFaultLoseReply: the node applies the command whose reply it loses; the caller sees an
// unknown outcome; the connection is reset.
func TestFaultLoseReply(t *testing.T) {
	sc := mustLoad(t, "testdata/lose_reply.yaml")
	res := run(t, sc, sc.Seed, false)
	applied := map[uint64]time.Duration{}
	for _, a := range res.Applies {
		applied[a.CmdID] = a.At
	}
	found := 0
	for _, op := range res.Ops {
		if op.Outcome == record.OpUnknown {
			if _, ok := applied[op.ID]; ok {
				found++
			}
		}
	}
	if found < 2 {
		t.Fatalf("want at least 2 unknown operations that were applied, got %d", found)
	}
	if lost := steps(res, fsm.ConnLost, 0, res.End+1); len(lost) != 2 {
		t.Fatalf("want 2 connections reset, got %d", len(lost))
	}
	slots := connSlots(res)
	first := steps(res, fsm.ConnLost, 2*sec, 3*sec)
	if len(first) != 1 || slots[first[0].Event.Conn] != 1 {
		t.Fatalf("the slot-targeted fault must reset slot 1's connection: %+v", first)
	}
	for i, w := range res.Faults {
		if w.To <= w.From || w.To-w.From > 100*time.Millisecond {
			t.Fatalf("fault %d window %+v must end when it triggers", i, w)
		}
	}
}

// TestFaultBlackhole: connects into a black-hole fail at the connect timeout; commands in flight
// time out with unknown outcomes; held bytes arrive when it heals; nothing is reset.
func TestFaultBlackhole(t *testing.T) {
	sc := mustLoad(t, "testdata/blackhole.yaml")
	res := run(t, sc, sc.Seed, false)
	timeouts := steps(res, fsm.DialFailed, 0, 4*sec)
	if len(timeouts) < 2 {
		t.Fatalf("want connect timeouts during the first black-hole, got %d", len(timeouts))
	}
	opens := map[fsm.ConnID]time.Duration{}
	for _, s := range res.Steps {
		for _, f := range s.Effects {
			if f.Kind == fsm.Dial {
				opens[f.Conn] = s.Event.At
			}
		}
	}
	for _, s := range timeouts {
		if !strings.Contains(errText(s.Event), "timed out after 1s") || s.Event.At-opens[s.Event.Conn] != sec {
			t.Fatalf("dial failure %s is not a connect timeout after 1s", s.Event.String())
		}
	}
	if n := len(steps(res, fsm.ConnLost, 0, res.End+1)); n != 0 {
		t.Fatalf("a black-hole resets nothing, got %d losses", n)
	}
	during := ops(res, 8*sec, 10*sec)
	if len(during) == 0 || countOutcome(during, record.OpUnknown) != len(during) {
		t.Fatalf("operations in the second black-hole must time out unknown: %+v", during)
	}
	applied := map[uint64]time.Duration{}
	for _, a := range res.Applies {
		applied[a.CmdID] = a.At
	}
	for _, op := range during {
		if op.Stage != "awaiting-reply" || op.Return-op.Call != sec {
			t.Fatalf("op %d: stage %s after %v", op.ID, op.Stage, op.Return-op.Call)
		}
		if at, ok := applied[op.ID]; !ok || at < 11*sec {
			t.Fatalf("op %d: held request must be applied after the heal (at %v, %v)", op.ID, at, ok)
		}
	}
	if len(res.Duplicates) != 0 {
		t.Fatalf("late replies must complete each command once: %+v", res.Duplicates)
	}
	if late := ops(res, 11*sec+10*time.Millisecond, res.End); countOutcome(late, record.OpOK) != len(late) {
		t.Fatal("operations after the heal must succeed")
	}
}

// TestFaultDelay: the extra latency shows in operation latencies during the window only.
func TestFaultDelay(t *testing.T) {
	sc := mustLoad(t, "testdata/delay.yaml")
	res := run(t, sc, sc.Seed, false)
	for _, op := range ops(res, 0, 4*sec) {
		if d := op.Return - op.Call; op.Return < 4*sec && d > 5*time.Millisecond {
			t.Fatalf("op %d took %v before the delay", op.ID, d)
		}
	}
	slow := ops(res, 4*sec, 5*sec+time.Second/2)
	if len(slow) == 0 {
		t.Fatal("no operation during the delay")
	}
	for _, op := range slow {
		if d := op.Return - op.Call; d < 600*time.Millisecond || op.Outcome != record.OpOK {
			t.Fatalf("op %d took %v (%s) during a 300ms one-way delay", op.ID, d, op.Outcome)
		}
	}
}

// TestFaultKillRestart: killing the node resets every connection; replacements are refused until
// the restart; then every slot reconnects and the dataset survived.
func TestFaultKillRestart(t *testing.T) {
	sc := mustLoad(t, "testdata/kill_restart.yaml")
	res := run(t, sc, sc.Seed, false)
	if lost := steps(res, fsm.ConnLost, 5*sec, 5*sec+10*time.Millisecond); len(lost) != 3 {
		t.Fatalf("want all 3 connections lost at the kill, got %d", len(lost))
	}
	refused := steps(res, fsm.DialFailed, 5*sec, 7*sec)
	if len(refused) == 0 {
		t.Fatal("no refused replacement while the node was down")
	}
	for _, s := range refused {
		if !strings.Contains(errText(s.Event), "connection refused") {
			t.Fatalf("unexpected failure %s", s.Event.String())
		}
	}
	if n := len(steps(res, fsm.DialFailed, 7*sec, res.End+1)); n != 0 {
		t.Fatalf("%d dial failures after the restart", n)
	}
	readySlots := map[int]bool{}
	slots := connSlots(res)
	for _, s := range steps(res, fsm.HandshakeDone, 7*sec, res.End+1) {
		readySlots[slots[s.Event.Conn]] = true
	}
	if len(readySlots) != 3 {
		t.Fatalf("slots reconnected after the restart: %v", readySlots)
	}
	if len(steps(res, fsm.HandshakeDone, 5*sec, 7*sec)) != 0 {
		t.Fatal("a connection became ready while the node was down")
	}
	// Persistence: the model replay spans the kill (reads after the restart see earlier writes).
	checkNodeModel(t, res)
	readAfter := false
	for _, op := range ops(res, 7*sec, res.End) {
		if op.Name == "GET" && op.Outcome == record.OpOK && len(op.Reply) == 1 && !op.Reply[0].Null {
			readAfter = true
		}
	}
	if !readAfter {
		t.Fatal("no read after the restart returned data written before")
	}
}

// TestFaultHandshakeLoading: a LOADING reply to HELLO fails the attempt as transient; the slot
// reconnects once the node has loaded.
func TestFaultHandshakeLoading(t *testing.T) {
	sc := mustLoad(t, "testdata/handshake_loading.yaml")
	res := run(t, sc, sc.Seed, false)
	failed := steps(res, fsm.DialFailed, 3*sec, 5*sec)
	if len(failed) == 0 {
		t.Fatal("no rejected handshake during the window")
	}
	for _, s := range failed {
		if s.Event.Class != fsm.Transient || !strings.Contains(errText(s.Event), "LOADING") {
			t.Fatalf("want a transient LOADING failure, got %s", s.Event.String())
		}
	}
	if len(steps(res, fsm.HandshakeDone, 5*sec, res.End+1)) != 1 {
		t.Fatal("the slot must reconnect once after the window")
	}
}

// TestFaultHandshakeWrongpass: WRONGPASS fails the attempt as permanent; with a three-attempt
// policy the slot exhausts for good.
func TestFaultHandshakeWrongpass(t *testing.T) {
	sc := mustLoad(t, "testdata/handshake_wrongpass.yaml")
	res := run(t, sc, sc.Seed, false)
	failed := steps(res, fsm.DialFailed, 3*sec, res.End+1)
	if len(failed) != 3 {
		t.Fatalf("want 3 rejected attempts, got %d", len(failed))
	}
	for _, s := range failed {
		if s.Event.Class != fsm.Permanent || !strings.Contains(errText(s.Event), "WRONGPASS") {
			t.Fatalf("want a permanent WRONGPASS failure, got %s", s.Event.String())
		}
	}
	if len(steps(res, fsm.HandshakeDone, 3*sec, res.End+1)) != 0 {
		t.Fatal("an exhausted slot must not reconnect")
	}
	if before := ops(res, 0, 3*sec); countOutcome(before, record.OpOK) != len(before) {
		t.Fatal("authenticated operations before the fault must succeed")
	}
}

// TestFaultPause: a paused node accepts bytes but answers nothing until it resumes; queued
// requests are then applied; nothing is reset.
func TestFaultPause(t *testing.T) {
	sc := mustLoad(t, "testdata/pause.yaml")
	res := run(t, sc, sc.Seed, false)
	if n := len(steps(res, fsm.ConnLost, 0, res.End+1)); n != 0 {
		t.Fatalf("a pause resets nothing, got %d losses", n)
	}
	for _, a := range res.Applies {
		if a.At > 4*sec+time.Millisecond && a.At < 6*sec {
			t.Fatalf("command %d applied at %v while the node was paused", a.CmdID, a.At)
		}
	}
	atResume := 0
	for _, a := range res.Applies {
		if a.At == 6*sec {
			atResume++
		}
	}
	during := ops(res, 4*sec+time.Millisecond, 6*sec)
	if atResume < len(during) || len(during) == 0 {
		t.Fatalf("%d requests applied at the resume, %d issued during the pause", atResume, len(during))
	}
	if countOutcome(during, record.OpUnknown) == 0 {
		t.Fatal("requests older than the command timeout must time out unknown")
	}
	checkNodeModel(t, res)
}
