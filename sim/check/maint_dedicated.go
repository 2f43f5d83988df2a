package check

import (
	"strings"
	"time"

	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/sim/record"
)

// checkRoundTrips judges the round trips of the dedicated operations' pushes and transaction
// steps (workload.dedicated.round_trip_timeout) against the notices their connection received:
// a round trip is a step's commands, sent together at Sent; it ends when the next step is sent
// (the transaction's first step completed) or when the operation ends. One that ended by its
// timeout must end exactly at its deadline under the windows (MaintRelaxed.end, from when it was
// sent); one that completed after its own budget no later than that deadline. Round trips that
// ended otherwise (the operation's deadline, a failure, the client's close) are not judged.
func (c MaintRelaxed) checkRoundTrips(r *record.Result, notices map[fsm.ConnID][]record.MaintEvent) []Violation {
	var out []Violation
	for i := range r.Dedicated {
		op := &r.Dedicated[i]
		if (op.Kind != "PUSH" && op.Kind != "TX") || op.Outcome == "" {
			continue
		}
		for j := 0; j < len(op.Cmds); {
			k := j
			for k < len(op.Cmds) && op.Cmds[k].Sent == op.Cmds[j].Sent && op.Cmds[k].Conn == op.Cmds[j].Conn {
				k++
			}
			sent, conn := op.Cmds[j].Sent, op.Cmds[j].Conn
			var ended time.Duration
			timedOut := false
			switch {
			case k < len(op.Cmds):
				ended = op.Cmds[k].Sent // the step completed: the next one was sent
			case strings.HasPrefix(op.Err, timedOutPrefix):
				ended, timedOut = op.Return, true
			case op.Outcome == record.DedicatedOK || op.Outcome == record.DedicatedConflict || op.Outcome == record.DedicatedError:
				ended = op.Return
			default:
				j = k
				continue
			}
			j = k
			if !timedOut && ended <= sent+c.CommandTimeout {
				continue
			}
			end := c.end(notices[conn], sent)
			what := "dedicated op " + itoa(op.ID) + " " + op.Kind + " round trip sent at " + sent.String() + " on conn " + u(uint64(conn))
			switch {
			case timedOut && ended < end:
				out = append(out, violation(CheckMaintRelaxed, ended, what+" timed out after "+(ended-sent).String()+
					", before its relaxed deadline "+(end-sent).String()))
			case ended > end:
				out = append(out, violation(CheckMaintRelaxed, ended, what+" ended after "+(ended-sent).String()+
					", past its deadline "+(end-sent).String()+" (relaxed past the window?)"))
			}
		}
	}
	return out
}

// checkBatches judges the batchers' batches (workload.batches) as one command each: a batch
// written on a connection (its lead command's first write) that timed out must end exactly at
// its deadline under that connection's windows, from the batch's call; one that completed after
// its own budget no later than that deadline.
func (c MaintRelaxed) checkBatches(r *record.Result, notices map[fsm.ConnID][]record.MaintEvent) []Violation {
	if len(r.Batches) == 0 {
		return nil
	}
	conn := map[uint64]fsm.ConnID{}
	for _, s := range r.Sends {
		if _, ok := conn[s.CmdID]; !ok && s.CmdID >= record.BatchIDBase {
			conn[s.CmdID] = s.Conn
		}
	}
	var out []Violation
	for i := range r.Batches {
		b := &r.Batches[i]
		timedOut := b.Outcome == record.BatchTimeout
		if len(b.Cmds) == 0 || (b.Outcome != record.BatchOK && !timedOut) || (!timedOut && b.Return <= b.Call+c.CommandTimeout) {
			continue
		}
		id, ok := conn[b.Cmds[0]]
		if !ok {
			continue
		}
		end := c.end(notices[id], b.Call)
		what := "batch " + itoa(b.ID) + " of batcher " + itoa(b.Batcher) + " on conn " + u(uint64(id))
		switch {
		case timedOut && b.Return < end:
			out = append(out, violation(CheckMaintRelaxed, b.Return, what+" timed out "+(b.Return-b.Call).String()+
				" after its call, before its relaxed deadline "+(end-b.Call).String()))
		case b.Return > end:
			out = append(out, violation(CheckMaintRelaxed, b.Return, what+" ended "+(b.Return-b.Call).String()+
				" after its call, past its deadline "+(end-b.Call).String()+" (relaxed past the window?)"))
		}
	}
	return out
}
