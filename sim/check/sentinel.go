package check

import (
	"sort"
	"time"

	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/sim/record"
)

// renewedSlots reports whether step st renews the command slots of a Sentinel client: a new
// primary generation published to fsm.MachineMux (fsm.Mux.renewSlots). The slots that failed
// against the old primary (resting, failed or exhausted) then start over as fresh slots: their
// budget, attempt numbering and spacing belonged to the old endpoint.
func renewedSlots(st *record.Step) bool {
	return st.Event.Kind == fsm.Published && st.Event.Machine == fsm.MachineMux
}

// renew resets, for a renewal, every slot the policy checker tracks that rests, failed or is
// exhausted: it is a fresh slot, with nothing scheduled. A slot waiting for a scheduled attempt,
// connecting or ready is left alone, as the machine leaves it.
func renew(slots map[int]*slotTrack) {
	for _, s := range slots {
		switch s.state {
		case fsm.SlotResting, fsm.SlotFailed, fsm.SlotExhausted:
		default:
			continue
		}
		s.exhausted, s.scheduled = false, false
		s.lastAttempt, s.restFailures = 0, 0
	}
}

// SplitLosses returns the commands that an old primary applied while it diverged after a
// failover (scenario.FailoverAction.Split), in apply order: the writes among them that were
// acknowledged are the ones Redis lost, not the client; the reads saw the discarded copy. The
// old primary of each failover is followed from the topology's first primary through the
// promotions, in the order they started; a promotion of the same node is a no-op and leaves
// none behind, and a diverged node's own promotion ends its divergence.
func SplitLosses(r *record.Result) []uint64 {
	sc := r.Scenario
	if sc == nil || !sc.IsSentinel() || sc.Topology.Sentinel == nil {
		return nil
	}
	type window struct {
		node     string
		from, to time.Duration
	}
	var order []int
	for i := range sc.Faults {
		if s := sc.Faults[i].Sentinel; s != nil && s.Failover != nil && s.Failover.Promote != "" &&
			i < len(r.Faults) && r.Faults[i].From < r.End {
			order = append(order, i)
		}
	}
	sort.SliceStable(order, func(a, b int) bool { return r.Faults[order[a]].From < r.Faults[order[b]].From })
	primary := sc.Topology.Sentinel.Primary
	var windows []window
	for _, i := range order {
		f := sc.Faults[i].Sentinel.Failover
		from := r.Faults[i].From
		if f.Promote == primary {
			continue
		}
		for j := range windows {
			if windows[j].node == f.Promote && windows[j].to > from {
				windows[j].to = from
			}
		}
		if f.Split > 0 {
			windows = append(windows, window{node: primary, from: from, to: from + f.Split})
		}
		primary = f.Promote
	}
	var out []uint64
	for _, a := range r.Applies {
		if a.CmdID == 0 {
			continue
		}
		for _, w := range windows {
			if a.Node == w.node && a.At >= w.from && a.At <= w.to {
				out = append(out, a.CmdID)
				break
			}
		}
	}
	return out
}
