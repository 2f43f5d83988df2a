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
