package check

import (
	"github.com/respire-go/respire/sim/record"
)

// CheckFence is the fence checker's name.
const CheckFence = "fence"

// Fence checks what a fence promises (docs/fences.md): once Settle answered that the fence of a
// command's connection was acknowledged, the command either ran already or never will. So no
// node's apply log holds a settled command after the instant its Settle was granted, even when
// the command's bytes were still on their way or waiting in the node's buffers (the latent bytes
// of a paused node, a partitioned connection or a delayed one). Every Settle the workload asked
// must also be answered by the end of the run: granted, refused, or answered by the client's
// closing.
//
// The checker reads Result.Settles, which the workload fills when the scenario enables fences
// (client.enable_fences), and the apply logs: nothing of the client's own account. It needs the
// run's whole records: the scenarios that select it do not hand records over in segments.
type Fence struct{}

// Name implements Checker.
func (Fence) Name() string { return CheckFence }

// Check implements Checker.
func (Fence) Check(r *record.Result) []Violation {
	var out []Violation
	if len(r.Settles) == 0 {
		return nil
	}
	// granted holds, per command, the earliest instant a Settle for it was granted.
	granted := map[uint64]record.Settle{}
	for _, s := range r.Settles {
		switch s.Outcome {
		case record.SettlePending:
			out = append(out, violation(CheckFence, s.Asked, "the settle of command "+u(s.CmdID)+" (conn "+
				u(uint64(s.Conn))+") asked at "+s.Asked.String()+" was never answered"))
		case record.SettleGranted:
			if prev, ok := granted[s.CmdID]; !ok || s.Answered < prev.Answered {
				granted[s.CmdID] = s
			}
		}
	}
	for _, a := range r.Applies {
		s, ok := granted[a.CmdID]
		if !ok || a.CmdID == 0 || a.At <= s.Answered {
			continue
		}
		out = append(out, violation(CheckFence, a.At, "command "+u(a.CmdID)+" applied on "+a.Node+" at "+a.At.String()+
			", after its fence on conn "+u(uint64(s.Conn))+" was acknowledged at "+s.Answered.String()))
	}
	return out
}
