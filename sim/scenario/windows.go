package scenario

import (
	"strconv"
	"time"
)

// WindowExpect is an expectation limited to a window of virtual time (expect.during): the
// operations called in [Window.Min, Window.Max) and the connection attempts made in it.
type WindowExpect struct {
	// Window is the window, written "5s..8s" (from, inclusive, to, exclusive).
	Window TimeRange `yaml:"window"`
	// Outcomes bounds the outcomes of the operations called in the window.
	Outcomes *OutcomeExpect `yaml:"outcomes,omitempty"`
	// Dials bounds the connection attempts made in the window, per node.
	Dials []DialCount `yaml:"dials,omitempty"`
}

// DialCount bounds the connection attempts to one node (every node when Node is empty), of
// every kind of connection: command slots, dedicated and pub/sub.
type DialCount struct {
	// Node is the node dialled; empty counts the dials to every node.
	Node string `yaml:"node,omitempty"`
	// Min is the fewest dials allowed, or nil for none.
	Min *int `yaml:"min,omitempty"`
	// Max is the most dials allowed, or nil for none.
	Max *int `yaml:"max,omitempty"`
}

// DialRateExpect bounds the rate of connection attempts to one node (expect.dial_rate): in any
// window of length Per (sliding, within During), at most Max dials. This is the property an
// incident's reconnect storm breaks.
type DialRateExpect struct {
	// Node is the node dialled; empty counts the dials to every node.
	Node string `yaml:"node,omitempty"`
	// Max is the most dials allowed in any window of length Per.
	Max int `yaml:"max"`
	// Per is the length of the sliding window (positive).
	Per time.Duration `yaml:"per"`
	// During limits the check to the dials made in a window ("10s..1m"); omitted: the whole run.
	During *TimeRange `yaml:"during,omitempty"`
}

// ConnectExpect asserts that the eager connect fails (expect.connect): the run then ends at the
// failure, as an application's client.Connect returns its error, and passes if it failed as
// expected.
type ConnectExpect struct {
	// Fails asserts that the eager connect fails. Required (true).
	Fails bool `yaml:"fails"`
	// Error, when set, must appear in the connect's error text ("connection refused",
	// "WRONGPASS").
	Error string `yaml:"error,omitempty"`
}

// validateConnect checks expect.connect.
func (sc *Scenario) validateConnect() error {
	c := sc.Expect.Connect
	switch {
	case c == nil:
		return nil
	case !c.Fails:
		return fieldErr("expect.connect.fails", "must be true: expect.connect asserts an eager connect that fails (omit it otherwise)")
	case sc.Client.Connect != ConnectEager:
		return fieldErr("expect.connect", "needs client.connect: eager (a lazy client connects on first use)")
	}
	return nil
}

// validateWindows checks expect.during and expect.dial_rate.
func (sc *Scenario) validateWindows() error {
	if err := sc.validateConnect(); err != nil {
		return err
	}
	e := &sc.Expect
	node := func(field, id string) error {
		if id != "" && sc.node(id) < 0 {
			return fieldErr(field, "unknown node "+strconv.Quote(id))
		}
		return nil
	}
	window := func(field string, r *TimeRange) error {
		switch {
		case r.Min < 0:
			return fieldErr(field, "must not be negative")
		case r.Max <= r.Min:
			return fieldErr(field, "must be a range from..to with to after from, such as 5s..8s")
		case r.Min >= sc.Duration:
			return fieldErr(field, "must start before the end of the run ("+sc.Duration.String()+")")
		}
		return nil
	}
	for i := range e.During {
		d := &e.During[i]
		f := "expect.during[" + strconv.Itoa(i) + "]"
		if err := window(f+".window", &d.Window); err != nil {
			return err
		}
		if d.Outcomes == nil && len(d.Dials) == 0 {
			return fieldErr(f, "needs outcomes or dials to expect")
		}
		if o := d.Outcomes; o != nil {
			for _, nb := range []NamedBounds{{"ok", o.OK}, {"failed", o.Failed}, {"unknown", o.Unknown}, {"reconnect_limit", o.ReconnectLimit}} {
				if err := nb.Bounds.validate(f + ".outcomes." + nb.Name); err != nil {
					return err
				}
			}
		}
		for j, dc := range d.Dials {
			g := f + ".dials[" + strconv.Itoa(j) + "]"
			b := Bounds{Min: dc.Min, Max: dc.Max}
			if err := firstError(node(g+".node", dc.Node), b.validate(g)); err != nil {
				return err
			}
			if dc.Min == nil && dc.Max == nil {
				return fieldErr(g, "needs min or max")
			}
		}
	}
	for i := range e.DialRate {
		r := &e.DialRate[i]
		f := "expect.dial_rate[" + strconv.Itoa(i) + "]"
		if err := node(f+".node", r.Node); err != nil {
			return err
		}
		switch {
		case r.Max < 0:
			return fieldErr(f+".max", "must not be negative")
		case r.Per <= 0:
			return fieldErr(f+".per", "must be positive, such as 1s")
		}
		if r.During != nil {
			if err := window(f+".during", r.During); err != nil {
				return err
			}
		}
	}
	return nil
}
