package sim

import (
	"errors"
	"slices"
	"time"

	"github.com/respire-go/respire/sim/record"
)

// DefaultSegmentOps is the number of workload operations after which a run with a sink
// (RunOptions.Sink) closes its records' segment at the next quiescent cut, when
// RunOptions.SegmentOps is zero.
const DefaultSegmentOps = 8192

// MaxSegmentOps bounds RunOptions.SegmentOps.
const MaxSegmentOps = 1 << 20

// JournalWindow is the number of engine steps a run keeps at most when its sink takes the
// journal (record.JournalSink): once that many are recorded, they are handed over and dropped.
const JournalWindow = 4096

// ErrSegmentOps reports a RunOptions.SegmentOps or JournalSteps below zero or above
// MaxSegmentOps.
var ErrSegmentOps = errors.New("sim: RunOptions.SegmentOps and JournalSteps must be from 0 to 1048576 (MaxSegmentOps)")

// segmenter hands a run's operation records to the sink in closed segments (record.Sink): the
// run's memory is then bounded by a segment (SegmentOps operations, plus what happens until the
// next quiescent cut) instead of growing with the run.
type segmenter struct {
	w    *world
	sink record.Sink
	ops  int
	// unapplied are the commands written whose node has not applied them yet, with the
	// connection they were last written to and where their frame starts in its stream.
	unapplied map[uint64]written
	// journal is the sink when it takes the engine steps too (record.JournalSink), or nil;
	// window is the number of steps kept before they are handed over.
	journal record.JournalSink
	window  int
	// watches count the applies of the segments handed over (applyWatch).
	watches []*applyWatch
	// unpaired are the dedicated commands written whose reply the client has not paired yet,
	// with the connection they were written to: a cut waits for them (their writes, applies
	// and replies then fall in one segment), or for the client's side of their connection to
	// close (no reply can be paired any more).
	unpaired map[uint64]*simConn
}

// applyWatch counts the commands with an id that a node applied from a time on, across the
// segments handed over (the runner's own use of the apply log: a Sentinel split's rejoin traces
// how many commands the diverged node applied).
type applyWatch struct {
	node string
	from time.Duration
	// handed counts those in segments already handed over.
	handed int
}

// add counts the applies of applies that the watch covers.
func (a *applyWatch) add(applies []record.Apply) int {
	n := 0
	for i := range applies {
		if x := &applies[i]; x.Node == a.node && x.CmdID != 0 && x.At >= a.from {
			n++
		}
	}
	return n
}

// watchApplies starts counting the commands with an id that node applies from from on.
func (w *world) watchApplies(node string, from time.Duration) *applyWatch {
	a := &applyWatch{node: node, from: from}
	if w.seg != nil {
		w.seg.watches = append(w.seg.watches, a)
	}
	return a
}

// appliesSince returns the count of a watch and ends it.
func (w *world) appliesSince(a *applyWatch) int {
	if w.seg != nil {
		if i := slices.Index(w.seg.watches, a); i >= 0 {
			w.seg.watches = slices.Delete(w.seg.watches, i, i+1)
		}
	}
	return a.handed + a.add(w.res.Applies)
}

// newSegmenter returns the run's segmenter, or nil when the run keeps all its records (no
// sink, or one that does not accept the scenario). Every kind of run can be segmented: the
// records segmented are the callers' and the dedicated commands' writes, applies and replies (a
// cut waits until no dedicated command is unpaired on an open connection); the pub/sub
// records, the dedicated operations, the dials and the fault windows are kept whole. In a
// Sentinel run, the split-brain losses of a segment's applies are found from the failovers
// started before them (check.SplitLosses), which every segment's fault windows hold.
// A run with batchers (workload.batches) keeps all its records: the batch records are not
// segmented.
func newSegmenter(w *world, opts RunOptions) *segmenter {
	if opts.Sink == nil || w.sc.Workload.Batches != nil || !opts.Sink.Accepts(w.sc) {
		return nil
	}
	n := opts.SegmentOps
	if n <= 0 {
		n = DefaultSegmentOps
	}
	s := &segmenter{w: w, sink: opts.Sink, ops: n, unapplied: map[uint64]written{}}
	if j, ok := opts.Sink.(record.JournalSink); ok && j.TakesJournal() {
		s.journal, s.window = j, opts.JournalSteps
		if s.window <= 0 {
			s.window = JournalWindow
		}
	}
	return s
}

// stepped hands the journal over once it holds JournalWindow steps, when the sink takes it.
func (s *segmenter) stepped() {
	if s.journal != nil && len(s.w.res.Steps) >= s.window {
		s.handJournal()
	}
}

// handJournal hands the steps recorded so far to the sink and drops them.
func (s *segmenter) handJournal() {
	res := s.w.res
	if len(res.Steps) == 0 {
		return
	}
	s.journal.Steps(res.StepBase, res.Steps, res.Clients)
	res.StepBase += len(res.Steps)
	clear(res.Steps)
	res.Steps = res.Steps[:0]
}

// written is a command written and not applied yet: the connection it was written to, and the
// stream offset its frame starts at on the way to the node.
type written struct {
	c     *simConn
	start uint64
}

// written notes that command id was written to c, its frame starting at stream offset start.
func (s *segmenter) written(id uint64, c *simConn, start uint64) {
	s.unapplied[id] = written{c: c, start: start}
	if id >= record.DedicatedIDBase {
		if s.unpaired == nil {
			s.unpaired = map[uint64]*simConn{}
		}
		s.unpaired[id] = c
	}
}

// paired notes that the client paired a reply with command id.
func (s *segmenter) paired(id uint64) {
	if id >= record.DedicatedIDBase {
		delete(s.unpaired, id)
	}
}

// applied notes that a node applied command id.
func (s *segmenter) applied(id uint64) { delete(s.unapplied, id) }

// quiet reports whether the run is at a quiescent cut (record.Sink): no operation open, and
// every written command applied or beyond its node's reach. An operation whose caller timed
// out while its command is held for good on the way to its node (heldForGood) is not open in
// this sense: nothing about it can be recorded any more but a late completion.
func (s *segmenter) quiet() bool {
	if !s.w.wl.QuietBut(s.held) {
		return false
	}
	for id, c := range s.unpaired {
		if !c.clientClosed {
			return false
		}
		delete(s.unpaired, id)
	}
	for id, wr := range s.unapplied {
		c := wr.c
		if !c.srv.Open() || c.finished {
			delete(s.unapplied, id)
			continue
		}
		if !s.w.heldForGood(c, wr.start) {
			return false
		}
		// Kept: the command stays beyond reach, and held reads it at the next cuts.
	}
	return true
}

// held reports whether command id was written and can never reach its node (heldForGood).
func (s *segmenter) held(id uint64) bool {
	wr, ok := s.unapplied[id]
	return ok && wr.c.srv.Open() && !wr.c.finished && s.w.heldForGood(wr.c, wr.start)
}

// heldForGood reports whether the bytes of c's stream to the node from offset start can never
// reach the node in this run: none of them has arrived, and a black-hole that lasts past the
// end of the run holds that direction of c. The node can then never apply (nor answer) a
// command whose frame starts there (cluster-incident-19h: commands written to a node
// black-holed for good), so a cut need not wait for it.
func (w *world) heldForGood(c *simConn, start uint64) bool {
	if c.up.base+uint64(c.up.ready) > start {
		return false // the frame's first bytes arrived: the node may apply it
	}
	for _, fs := range w.active {
		if fs.kind == "blackhole" && fs.matches(c) && fs.f.Blackhole.Holds(true) &&
			(!fs.stops || fs.stopAt > w.sc.Duration) {
			return true
		}
	}
	return false
}

// maybeCut closes the segment when it holds enough operations and the run is quiescent.
func (s *segmenter) maybeCut() {
	res := s.w.res
	if len(res.Ops) < s.ops || !s.quiet() {
		return
	}
	now := s.w.k.now
	seg := &record.Result{Scenario: res.Scenario, Seed: res.Seed, OpBase: res.OpBase, Start: res.Start, End: now,
		Segments: res.Segments, Ops: res.Ops, Applies: res.Applies, Sends: res.Sends, Served: res.Served,
		Paired: res.Paired, Duplicates: res.Duplicates, Dials: res.Dials}
	seg.Faults, seg.HealedAt = s.w.faultWindows(now)
	seg.Healed = true
	for _, fs := range s.w.faults {
		seg.Healed = seg.Healed && fs.ended
	}
	for _, a := range s.watches {
		a.handed += a.add(res.Applies)
	}
	size := len(res.Ops) + len(res.Ops)/4
	res.OpBase += len(res.Ops)
	res.Start = now
	res.Segments++
	res.Ops = make([]record.Op, 0, size)
	res.Applies = make([]record.Apply, 0, size)
	res.Sends = make([]record.Send, 0, size)
	res.Served = make([]record.ReplyRecord, 0, size)
	res.Paired = make([]record.ReplyRecord, 0, size)
	res.Duplicates = nil
	s.w.wl.Forget()
	if s.journal != nil {
		// The steps up to the cut go first: a checker may judge the segment against them.
		s.handJournal()
	}
	s.sink.Segment(seg)
}
