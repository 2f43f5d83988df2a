package check

import (
	"strconv"
	"time"

	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/sim/record"
	"github.com/respire-go/respire/sim/scenario"
)

// CheckExpectMonitors is the name of the checker of a scenario's expect.monitors.
const CheckExpectMonitors = "expect-monitors"

// expectMonitors checks expect.monitors: per watched Sentinel and window, the monitor's dials
// (the transport's records of the connections opened for the monitor machine), its exhaustions
// (the monitor-exhausted warnings about that Sentinel), the exhaustions it resumed from at once
// (a monitor dial to the Sentinel at the very instant of the exhaustion: the renewal a
// publication left pending) and its completed subscriptions (the monitor's connected
// observations about that Sentinel).
type expectMonitors struct{}

func (expectMonitors) Name() string { return CheckExpectMonitors }

func (expectMonitors) Check(r *record.Result) []Violation {
	var out []Violation
	for i := range r.Scenario.Expect.Monitors {
		e := &r.Scenario.Expect.Monitors[i]
		endpoint := e.Sentinel + ":" + strconv.Itoa(scenario.SentinelPort)
		from, to := time.Duration(0), time.Duration(-1)
		window := "over the run"
		if e.During != nil {
			from, to = e.During.Min, e.During.Max
			window = "in " + e.During.String()
		}
		in := func(at time.Duration) bool { return at >= from && (to < 0 || at < to) }
		dials, exhausted, resumed, subscribed := 0, 0, 0, 0
		// monitorDials are the times of the monitor's dials to the Sentinel, in order.
		var monitorDials []time.Duration
		for _, d := range r.Dials {
			if d.Machine == fsm.MachineSentinelMonitor && d.Endpoint == endpoint {
				monitorDials = append(monitorDials, d.At)
				if in(d.At) {
					dials++
				}
			}
		}
		dialedAt := func(at time.Duration) bool {
			for _, t := range monitorDials {
				if t == at {
					return true
				}
			}
			return false
		}
		for si := range r.Steps {
			st := &r.Steps[si]
			if !in(st.Event.At) {
				continue
			}
			for fi := range st.Effects {
				f := &st.Effects[fi]
				if f.Machine != fsm.MachineSentinelMonitor || f.Endpoint.String() != endpoint {
					continue
				}
				switch {
				case f.Kind == fsm.Warn && f.Sentinel != nil && f.Sentinel.Warning == fsm.WarningMonitorExhausted:
					exhausted++
					if dialedAt(st.Event.At) {
						resumed++
					}
				case f.Kind == fsm.Emit && f.Lifecycle.Scope == fsm.ScopeSentinelMonitor && f.Lifecycle.SourceState == fsm.SourceConnected:
					subscribed++
				}
			}
		}
		what := "the monitor of " + e.Sentinel + " "
		for _, c := range []struct {
			name  string
			b     *scenario.Bounds
			count int
		}{{"dials", e.Dials, dials}, {"exhaustions", e.Exhausted, exhausted}, {"resumptions at once after exhausting", e.Resumed, resumed},
			{"completed subscriptions", e.Subscribed, subscribed}} {
			if c.b == nil {
				continue
			}
			switch {
			case c.b.Min != nil && c.count < *c.b.Min:
				out = append(out, violation(CheckExpectMonitors, r.End, what+"made "+strconv.Itoa(c.count)+" "+c.name+" "+window+
					" (at least "+strconv.Itoa(*c.b.Min)+")"))
			case c.b.Max != nil && c.count > *c.b.Max:
				out = append(out, violation(CheckExpectMonitors, r.End, what+"made "+strconv.Itoa(c.count)+" "+c.name+" "+window+
					" (at most "+strconv.Itoa(*c.b.Max)+")"))
			}
		}
	}
	return out
}
