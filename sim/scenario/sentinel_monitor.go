package scenario

import "strconv"

// MonitorExpect asserts what the client's event monitor of one Sentinel did (expect.monitors),
// checked by expect-monitors. Each count is taken over the window During (the whole run when
// omitted); every bounds is optional, and at least one must be set.
type MonitorExpect struct {
	// Sentinel is the watched Sentinel's node id (one of topology.sentinel.sentinels).
	Sentinel string `yaml:"sentinel"`
	// During limits the counts to a window of virtual time ("2s..4s": from, inclusive, to,
	// exclusive); omitted: the whole run.
	During *TimeRange `yaml:"during,omitempty"`
	// Dials bounds the connections the monitor opened to the Sentinel, as the transport saw them.
	Dials *Bounds `yaml:"dials,omitempty"`
	// Exhausted bounds the times the monitor of the Sentinel exhausted its budget (each warns).
	Exhausted *Bounds `yaml:"exhausted,omitempty"`
	// Resumed bounds the exhaustions after which the monitor dialed the Sentinel again at once:
	// a validated primary publication landed while it was still spending its retries, so it
	// started over with a fresh budget instead of stopping.
	Resumed *Bounds `yaml:"resumed,omitempty"`
	// Subscribed bounds the subscriptions the monitor completed on the Sentinel (every channel
	// acknowledged): it watches that Sentinel again.
	Subscribed *Bounds `yaml:"subscribed,omitempty"`
}

// MaxMonitorExpects bounds expect.monitors.
const MaxMonitorExpects = 64

// validateMonitors checks expect.monitors.
func (sc *Scenario) validateMonitors() error {
	e := sc.Expect.Monitors
	if len(e) == 0 {
		return nil
	}
	if len(e) > MaxMonitorExpects {
		return fieldErr("expect.monitors", "at most "+strconv.Itoa(MaxMonitorExpects)+" entries")
	}
	if !sc.IsSentinel() || sc.Topology.Sentinel == nil {
		return fieldErr("expect.monitors", "needs a sentinel topology")
	}
	for i := range e {
		m := &e[i]
		f := "expect.monitors[" + strconv.Itoa(i) + "]"
		known := false
		for _, id := range sc.Topology.Sentinel.Sentinels {
			known = known || id == m.Sentinel
		}
		if !known {
			return fieldErr(f+".sentinel", strconv.Quote(m.Sentinel)+" is not one of topology.sentinel.sentinels")
		}
		if w := m.During; w != nil {
			switch {
			case w.Min < 0:
				return fieldErr(f+".during", "must not be negative")
			case w.Max <= w.Min:
				return fieldErr(f+".during", "must be a range from..to with to after from, such as 2s..4s")
			}
		}
		named := []NamedBounds{{"dials", m.Dials}, {"exhausted", m.Exhausted}, {"resumed", m.Resumed}, {"subscribed", m.Subscribed}}
		set := false
		for _, nb := range named {
			if err := nb.Bounds.validate(f + "." + nb.Name); err != nil {
				return err
			}
			set = set || nb.Bounds != nil
		}
		if !set {
			return fieldErr(f, "needs dials, exhausted, resumed or subscribed to expect")
		}
	}
	return nil
}
