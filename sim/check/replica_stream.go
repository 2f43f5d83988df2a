package check

import (
	"strings"
	"time"

	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/sim/record"
)

// replicaWritesStream is replica-writes over segments and the journal (Stream): it takes the
// steps as the run hands them over, noting when each connection's handshake first finished,
// and the dials as each segment brings them (a segment holds the run's dials up to its cut),
// and judges each segment's writes. The runner hands the journal over before each segment, so
// a write's connection is known by then unless its handshake finishes after the cut (a
// command written before its handshake): such a write waits in pending until it is.
//
// The roles are those of the segment's fault windows: the failovers started before its cut,
// which decide the role of every node over a connection's dial and handshake before the cut as
// the whole run's do.
type replicaWritesStream struct {
	ready map[fsm.ConnID]time.Duration
	dials map[fsm.ConnID]record.Dial
	// seen is the number of the run's dials taken into dials.
	seen    int
	pending []replicaWrite
}

// replicaWrite is a write whose connection could not be judged yet.
type replicaWrite struct {
	send record.Send
	name string
}

func newReplicaWritesStream() *replicaWritesStream {
	return &replicaWritesStream{ready: map[fsm.ConnID]time.Duration{}, dials: map[fsm.ConnID]record.Dial{}}
}

func (s *replicaWritesStream) step(_ int, st *record.Step, _ []record.ClientGen) {
	if ev := &st.Event; ev.Kind == fsm.HandshakeDone {
		if _, ok := s.ready[ev.Conn]; !ok {
			s.ready[ev.Conn] = ev.At
		}
	}
}

func (s *replicaWritesStream) result(r *record.Result) []Violation { return s.finish(r) }

func (s *replicaWritesStream) segment(seg *record.Result) []Violation { return s.judge(seg, false) }

func (s *replicaWritesStream) finish(r *record.Result) []Violation {
	for i := range r.Steps {
		s.step(r.StepBase+i, &r.Steps[i], r.Clients)
	}
	return s.judge(r, true)
}

// judge takes r's new dials and judges the pending writes and r's; last says the run ended,
// so that a connection never ready is judged as the whole-run check judges it (not at all).
func (s *replicaWritesStream) judge(r *record.Result, last bool) []Violation {
	roles := primaryWindows(r)
	if roles == nil {
		return nil
	}
	for ; s.seen < len(r.Dials); s.seen++ {
		if d := r.Dials[s.seen]; d.Machine != fsm.MachineSentinel && d.Machine != fsm.MachineSentinelMonitor {
			s.dials[d.Conn] = d
		}
	}
	var out []Violation
	pending := s.pending
	s.pending = nil
	for _, w := range pending {
		out = s.write(out, roles, w, r, last)
	}
	for _, snd := range r.Sends {
		i := int(snd.CmdID) - r.OpBase - 1
		if i < 0 || i >= len(r.Ops) || !writeCommands[r.Ops[i].Name] {
			continue
		}
		out = s.write(out, roles, replicaWrite{send: snd, name: r.Ops[i].Name}, r, last)
	}
	return out
}

// write judges one write, or keeps it pending while its connection's dial or handshake is not
// known before r's end.
func (s *replicaWritesStream) write(out []Violation, roles roleWindows, w replicaWrite, r *record.Result, last bool) []Violation {
	d, dialed := s.dials[w.send.Conn]
	at, ok := s.ready[w.send.Conn]
	if !dialed || !ok || (!last && at >= r.End) {
		if !last {
			s.pending = append(s.pending, w)
		}
		return out
	}
	node := d.Endpoint
	if i := strings.LastIndexByte(node, ':'); i >= 0 {
		node = node[:i]
	}
	if !roles.known(node) || roles.primaryDuring(node, d.At, at) {
		return out
	}
	return append(out, violation(CheckReplicaWrites, w.send.At, "op "+u(w.send.CmdID)+" "+w.name+" written on conn "+
		u(uint64(w.send.Conn))+", which the client opened to "+node+" while it was a replica"))
}
