package check

import "github.com/respire-go/respire/sim/record"

// dedicatedSendsStream streams a dedicated checker that reads the writes of the dedicated
// commands (dedicated-no-resend, pool) over segments: it keeps those writes (the segments'
// other writes are the callers') and, at the end, judges the run with them and the steps its
// fold kept, or the run's own steps when the stream did not take the journal. The dedicated
// records themselves (Result.Dedicated) are kept for the whole run, so what it keeps grows with
// the dedicated commands, as they do.
type dedicatedSendsStream struct {
	c Checker
	// fold keeps the pool's steps when the stream takes the journal (Stream.Accepts sets it).
	fold  *machineFold
	sends []record.Send
}

func (d *dedicatedSendsStream) segment(seg *record.Result) []Violation {
	for _, s := range seg.Sends {
		if s.CmdID >= record.DedicatedIDBase {
			d.sends = append(d.sends, s)
		}
	}
	return nil
}

func (d *dedicatedSendsStream) finish(r *record.Result) []Violation {
	cp := *r
	cp.Sends = append(d.sends, r.Sends...)
	if d.fold != nil && r.StepBase > 0 {
		for i := range r.Steps {
			d.fold.step(r.StepBase+i, &r.Steps[i], r.Clients)
		}
		cp.Steps, cp.StepBase = d.fold.kept, 0
	}
	return d.c.Check(&cp)
}
