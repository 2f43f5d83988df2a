package check

import (
	"sort"
	"time"

	"github.com/respire-go/respire/sim/record"
	"github.com/respire-go/respire/sim/scenario"
)

// Stream judges a run from its records as the run produces them (record.Sink): give it to
// sim.RunOptions.Sink, then call Judge with the Result the run returns. A run the stream
// accepts hands its operation records over in closed segments and drops them, so that its
// memory is bounded by a segment instead of its length; each checker keeps only what it needs
// across segments:
//
//   - no-replay keeps the ids written and applied so far, as bit sets;
//   - outcomes, honest, pairing and handshake-first judge each segment on its own (every record
//     about an operation of a segment is in it);
//   - linearizable checks each key's history one segment at a time, starting from the states the
//     key may have been left in by the previous one (linear_stream.go);
//   - liveness keeps the operations it may still have to judge until the time it judges from is
//     known, then counts;
//   - expect.outcomes and expect.during count (during: per window, the operations called in it);
//   - lifetime judges each segment's writes against the drains of the journal handed over
//     before the segment (it needs the journal: a stream that does not take it refuses the run);
//   - replica-writes judges each segment's writes against the handshakes of the journal and the
//     dials up to the cut (replica_stream.go; it needs the journal too);
//   - dedicated-no-resend and pool keep the dedicated commands' writes and judge at the end
//     (dedicated_stream.go).
//
// The other checkers read records that are not segmented (engine steps, dials, fault windows)
// and judge the whole run at the end. Those that read the engine steps alone take them in
// batches as the run records them (record.JournalSink, journal_stream.go), keeping their own
// state, so that the run keeps a window of its journal; a run selecting one without a fold keeps
// its whole journal. A scenario that selects a checker with no segmented form is not
// accepted: its run keeps every record, and Judge is then check.Judge.
//
// A Stream judges one run; it is not safe for concurrent use.
type Stream struct {
	sc       *scenario.Scenario
	checkers []Checker
	parts    []segmented // parts[i] streams checkers[i], or is nil (a whole-run checker)
	found    [][]Violation
	failing  *record.Result
	// folds[i] takes the engine steps for checkers[i] (journal_stream.go), or is nil; folds
	// is nil when the stream does not take the journal.
	folds       []stepFold
	keepJournal bool
	// stepsTaken counts the steps handed over so far.
	stepsTaken int
}

// segmented is a checker judging a run one closed segment at a time.
type segmented interface {
	// segment consumes one closed segment and returns its violations.
	segment(seg *record.Result) []Violation
	// finish judges the records left at the end of the run (r) and returns the violations.
	finish(r *record.Result) []Violation
}

// NewStream returns a stream for one run.
func NewStream() *Stream { return &Stream{} }

// wholeRun are the checkers that read no segmented record (operations, applies, sends, replies,
// duplicates): they judge the run's Result at the end.
var wholeRun = map[string]bool{
	CheckPolicy: true, CheckReplay: true, CheckRentBudget: true, CheckRentPermanent: true,
	CheckDedicatedNoResend: true, CheckPool: true, CheckPubSubSubscriptions: true, CheckPubSubGaps: true,
	CheckPubSubExhaustion: true, CheckPubSubPolicy: true, CheckExpectEvents: true, CheckExpectDedicated: true,
	CheckExpectPubSub: true, CheckDials: true, CheckRetired: true, CheckExpectDialRate: true,
	CheckExpectConnect: true, CheckScenario: true,
}

// Accepts implements record.Sink: it accepts a scenario whose selected checkers all judge in
// segments or read no segmented record.
func (s *Stream) Accepts(sc *scenario.Scenario) bool {
	checkers := Checkers(&record.Result{Scenario: sc})
	parts := make([]segmented, len(checkers))
	for i, c := range checkers {
		switch c.Name() {
		case CheckNoReplay:
			parts[i] = &noReplayStream{}
		case CheckOutcomes, CheckHonest, CheckPairing, CheckHandshakeFirst:
			parts[i] = perSegment{c}
		case CheckLinearizable:
			parts[i] = newLinearStream()
		case CheckLiveness:
			parts[i] = newLivenessStream(sc)
		case CheckExpectOutcomes:
			parts[i] = &outcomesStream{}
		case CheckExpectDuring:
			parts[i] = newDuringStream(sc)
		case CheckLifetime:
			parts[i] = lifetimeStream{c.(Lifetime).fold(&record.Result{Scenario: sc})}
		case CheckReplicaWrites:
			parts[i] = newReplicaWritesStream()
		case CheckDedicatedNoResend, CheckPool:
			parts[i] = &dedicatedSendsStream{c: c}
		default:
			if !wholeRun[c.Name()] {
				return false
			}
		}
	}
	s.sc, s.checkers, s.parts, s.found = sc, checkers, parts, make([][]Violation, len(checkers))
	s.acceptJournal(sc)
	for i, p := range parts {
		if d, ok := p.(*dedicatedSendsStream); ok && s.folds != nil {
			d.fold, _ = s.folds[i].(*machineFold)
		}
	}
	for _, p := range parts {
		if _, ok := p.(stepFold); ok && !s.TakesJournal() {
			// A checker judging segments against the journal needs the journal as it comes.
			*s = Stream{keepJournal: s.keepJournal}
			return false
		}
	}
	return true
}

// Segment implements record.Sink.
func (s *Stream) Segment(seg *record.Result) {
	failed := false
	for i, p := range s.parts {
		if p == nil {
			continue
		}
		found := p.segment(seg)
		failed = failed || len(found) > 0
		s.found[i] = append(s.found[i], found...)
	}
	if failed && s.failing == nil {
		s.failing = seg
	}
}

// Failing returns the first segment in which a checker found a violation (the failing window
// of a report), or nil.
func (s *Stream) Failing() *record.Result { return s.failing }

// Judge judges the run whose Result r the run returned, with what the segments handed over
// before it showed.
func (s *Stream) Judge(r *record.Result) *Verdict {
	if s.checkers == nil || (r.Segments == 0 && s.stepsTaken == 0) {
		return Judge(r)
	}
	return judge(r, s.checkers, func(i int, c Checker) []Violation {
		if s.parts[i] != nil {
			return append(s.found[i], s.parts[i].finish(r)...)
		}
		if s.folds != nil && s.folds[i] != nil && s.stepsTaken > 0 {
			f := s.folds[i]
			for k := range r.Steps {
				f.step(r.StepBase+k, &r.Steps[k], r.Clients)
			}
			return f.result(r)
		}
		if s.parts[i] == nil {
			return c.Check(r)
		}
		return append(s.found[i], s.parts[i].finish(r)...)
	})
}

// perSegment streams a checker whose findings over a run are the union of its findings over
// the run's closed segments.
type perSegment struct{ c Checker }

func (p perSegment) segment(seg *record.Result) []Violation { return p.c.Check(seg) }
func (p perSegment) finish(r *record.Result) []Violation    { return p.c.Check(r) }

// outcomesStream counts operations by outcome for expect.outcomes.
type outcomesStream struct{ c outcomeCounts }

func (o *outcomesStream) segment(seg *record.Result) []Violation { o.c.add(seg.Ops); return nil }
func (o *outcomesStream) finish(r *record.Result) []Violation {
	o.c.add(r.Ops)
	return o.c.judge(r)
}

// noReplayStream is no-replay over segments: each segment is checked on its own, and a command
// written or applied in a segment that an earlier segment already wrote or applied is a
// violation (a command is written again only while its operation is open, which no cut allows).
type noReplayStream struct {
	sent, applied idSet
}

func (n *noReplayStream) segment(seg *record.Result) []Violation {
	out := NoReplay{}.Check(seg)
	for _, s := range seg.Sends {
		if n.sent.has(s.CmdID) {
			out = append(out, violation(CheckNoReplay, s.At, "command "+u(s.CmdID)+" written again on conn "+
				u(uint64(s.Conn))+" after an earlier segment wrote it, with no reply proving it did not run"))
		}
	}
	for _, a := range seg.Applies {
		if a.CmdID != 0 && n.applied.has(a.CmdID) {
			out = append(out, violation(CheckNoReplay, a.At, "command "+u(a.CmdID)+" applied twice (first in an earlier segment)"))
		}
	}
	for _, s := range seg.Sends {
		n.sent.add(s.CmdID)
	}
	for _, a := range seg.Applies {
		if a.CmdID != 0 {
			n.applied.add(a.CmdID)
		}
	}
	return out
}

func (n *noReplayStream) finish(r *record.Result) []Violation { return n.segment(r) }

// idSet is a set of command ids: one bit per id, in 64-bit words. Workload ids are dense (1, 2,
// 3...), so a run of a million commands costs about 16,000 words.
type idSet struct{ words map[uint64]uint64 }

func (s *idSet) has(id uint64) bool { return s.words[id>>6]&(1<<(id&63)) != 0 }

func (s *idSet) add(id uint64) {
	if s.words == nil {
		s.words = map[uint64]uint64{}
	}
	s.words[id>>6] |= 1 << (id & 63)
}

// livenessStream is liveness over segments. Until the time it judges from is known (an explicit
// expect.liveness.after, or the heal once every fault has ended), it keeps the operations called
// at or after the earliest that time can be; then it counts, keeping only the operations of the
// run's last Within, whose judgement depends on when the run ends.
type livenessStream struct {
	c          Liveness // After: the time judged from, once known
	known      bool
	demandSeen bool
	duration   time.Duration
	kept       []record.Op // while !known: operations that may be judged
	tail       []record.Op // the operations of the run's last Within
	judged     int
	firstOK    time.Duration
	out        []Violation
}

func newLivenessStream(sc *scenario.Scenario) *livenessStream {
	l := sc.Expect.Liveness
	s := &livenessStream{c: Liveness{After: l.After, Within: l.Within, FromDemand: l.From == scenario.LivenessFromDemand,
		Closed: closedWindows(sc)}, duration: sc.Duration, firstOK: -1}
	s.known = l.After != 0
	return s
}

func (s *livenessStream) segment(seg *record.Result) []Violation {
	if !s.known {
		if !seg.Healed {
			// The heal is at or after seg.HealedAt: earlier operations are never judged.
			s.kept = trimmedOps(s.kept, seg.Ops, seg.HealedAt)
			return nil
		}
		s.c.After, s.known = seg.HealedAt, true
		kept := s.kept
		s.kept = nil
		s.fold(kept)
	}
	s.fold(seg.Ops)
	return nil
}

// trimmedOps appends to dst the operations of ops called at or after from, without their keys,
// values and replies.
func trimmedOps(dst, ops []record.Op, from time.Duration) []record.Op {
	i := 0
	for i < len(dst) && dst[i].Call < from {
		i++
	}
	dst = append(dst[:0], dst[i:]...)
	for j := range ops {
		if ops[j].Call >= from {
			op := ops[j]
			op.Keys, op.Values, op.Reply = nil, nil, nil
			dst = append(dst, op)
		}
	}
	return dst
}

// fold judges operations in call order, as Liveness.Check does, once After is known; the
// operations of the run's last Within wait in tail.
func (s *livenessStream) fold(ops []record.Op) {
	for i := range ops {
		op := &ops[i]
		if op.Call < s.c.After || s.c.exempt(op) {
			continue
		}
		if op.Call > s.duration-s.c.Within {
			o := *op
			o.Keys, o.Values, o.Reply = nil, nil, nil
			s.tail = append(s.tail, o)
			continue
		}
		s.judge(op)
	}
}

func (s *livenessStream) judge(op *record.Op) {
	if s.c.FromDemand && !s.demandSeen {
		s.demandSeen, s.c.After = true, op.Call
	}
	s.judged++
	if op.Outcome == record.OpOK && op.ServerError == "" && (s.firstOK < 0 || op.Return < s.firstOK) {
		s.firstOK = op.Return
	}
	if op.Call >= s.c.After+s.c.Within && (op.Outcome != record.OpOK || op.ServerError != "") {
		s.out = append(s.out, livenessViolation(op, s.c.After))
	}
}

func (s *livenessStream) finish(r *record.Result) []Violation {
	if !s.known {
		if s.c.After == 0 {
			s.c.After = r.HealedAt
		}
		s.known = true
		kept := s.kept
		s.kept = nil
		s.fold(kept)
	}
	s.fold(r.Ops)
	for i := range s.tail {
		if op := &s.tail[i]; r.End <= 0 || op.Call <= r.End-s.c.Within {
			s.judge(op)
		}
	}
	if s.c.FromDemand && !s.demandSeen {
		return nil // nothing asked of the client after the heal
	}
	return append(s.out, s.c.verdict(s.judged, s.firstOK)...)
}

// Window returns the records a report of the run shows: r itself, or, when a segment handed
// over before the end had a violation, r with that segment's operation records instead of the
// last ones (the failing window; the engine steps, dials and faults are the whole run's).
func (s *Stream) Window(r *record.Result) *record.Result {
	f := s.failing
	if f == nil {
		return r
	}
	w := *r
	w.Ops, w.Applies, w.Sends, w.Served, w.Paired, w.Duplicates = f.Ops, f.Applies, f.Sends, f.Served, f.Paired, f.Duplicates
	w.OpBase, w.Start, w.Segments = f.OpBase, f.Start, f.Segments
	return &w
}

// IllegalKeys returns the keys whose history is not linearizable, sorted: those the stream
// found when the run was segmented, IllegalKeys(r) otherwise.
func (s *Stream) IllegalKeys(r *record.Result) []string {
	if r.Segments == 0 {
		return IllegalKeys(r)
	}
	var out []string
	for _, p := range s.parts {
		if l, ok := p.(*linearStream); ok {
			for k, h := range l.keys {
				if h.failed {
					out = append(out, k)
				}
			}
		}
	}
	sort.Strings(out)
	return out
}
