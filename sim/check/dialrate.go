package check

import (
	"strconv"
	"strings"
	"time"

	"github.com/respire-go/respire/sim/record"
	"github.com/respire-go/respire/sim/scenario"
)

// Names of the windowed expectations.
const (
	// CheckExpectDuring: the scenario's expect.during bounds, each over its window.
	CheckExpectDuring = "expect-during"
	// CheckExpectDialRate: the scenario's expect.dial_rate bounds.
	CheckExpectDialRate = "expect-dial-rate"
	// CheckExpectConnect: the scenario's expected eager-connect failure (expect.connect).
	CheckExpectConnect = "expect-connect"
)

// expectConnect checks that the eager connect failed, with the expected error text.
type expectConnect struct{}

func (expectConnect) Name() string { return CheckExpectConnect }

func (expectConnect) Check(r *record.Result) []Violation {
	e := r.Scenario.Expect.Connect
	switch {
	case e == nil:
		return nil
	case r.ConnectError == "":
		return []Violation{violation(CheckExpectConnect, 0, "the eager connect succeeded, but expect.connect says it fails")}
	case e.Error != "" && !strings.Contains(r.ConnectError, e.Error):
		return []Violation{violation(CheckExpectConnect, 0, "the eager connect failed with "+strconv.Quote(r.ConnectError)+
			", which does not contain "+strconv.Quote(e.Error))}
	}
	return nil
}

// rateDial is one connection attempt: when, and to which node.
type rateDial struct {
	at   time.Duration
	node string
}

// dialsByNode returns every connection attempt of r (command slots, dedicated, pub/sub and
// Sentinel machines), in time order, as the transport recorded them (Result.Dials): what the
// nodes see, including an attempt the engine opened without a machine's Dial effect (a redial
// behind the machine's back is a spin the nodes feel all the same).
func dialsByNode(r *record.Result) []rateDial {
	out := make([]rateDial, 0, len(r.Dials))
	for _, d := range r.Dials {
		node := d.Endpoint
		if i := strings.LastIndexByte(node, ':'); i >= 0 {
			node = node[:i]
		}
		out = append(out, rateDial{at: d.At, node: node})
	}
	return out
}

// expectDuring checks each expect.during entry over its window: the outcomes of the operations
// called in it and the dials made in it.
type expectDuring struct{}

func (expectDuring) Name() string { return CheckExpectDuring }

func (expectDuring) Check(r *record.Result) []Violation {
	d := newDuringStream(r.Scenario)
	return d.finish(r)
}

// duringStream is expect-during over segments: it counts, per window, the outcomes of the
// operations called in it as the segments come, and judges the counts and the run's dials at
// the end.
type duringStream struct {
	counts []outcomeCounts // per expect.during entry
}

func newDuringStream(sc *scenario.Scenario) *duringStream {
	return &duringStream{counts: make([]outcomeCounts, len(sc.Expect.During))}
}

func (d *duringStream) segment(seg *record.Result) []Violation {
	d.add(seg)
	return nil
}

func (d *duringStream) add(r *record.Result) {
	for k, w := range r.Scenario.Expect.During {
		if w.Outcomes == nil {
			continue
		}
		from, to := w.Window.Min, w.Window.Max
		for i := range r.Ops {
			if op := &r.Ops[i]; op.Call >= from && op.Call < to {
				d.counts[k].add(r.Ops[i : i+1])
			}
		}
	}
}

func (d *duringStream) finish(r *record.Result) []Violation {
	d.add(r)
	var out []Violation
	all := dialsByNode(r)
	for k, w := range r.Scenario.Expect.During {
		from, to := w.Window.Min, w.Window.Max
		label := "in " + w.Window.String() + ": "
		var msgs []string
		if e := w.Outcomes; e != nil {
			c := &d.counts[k]
			msgs = append(msgs, outside(label+"ok operations", c.byOutcome[record.OpOK], e.OK)...)
			msgs = append(msgs, outside(label+"failed operations", c.byOutcome[record.OpFailed], e.Failed)...)
			msgs = append(msgs, outside(label+"unknown operations", c.byOutcome[record.OpUnknown], e.Unknown)...)
			msgs = append(msgs, outside(label+"reconnect-limit operations", c.limit, e.ReconnectLimit)...)
		}
		for _, dc := range w.Dials {
			n := 0
			for _, d := range all {
				if d.at >= from && d.at < to && (dc.Node == "" || d.node == dc.Node) {
					n++
				}
			}
			msgs = append(msgs, outside(label+"dials to "+nodeLabel(dc.Node), n, &scenario.Bounds{Min: dc.Min, Max: dc.Max})...)
		}
		out = append(out, violations(CheckExpectDuring, min(to, r.End), msgs)...)
	}
	return out
}

func nodeLabel(node string) string {
	if node == "" {
		return "every node"
	}
	return node
}

// expectDialRate checks each expect.dial_rate entry: no sliding window of length Per holds more
// than Max dials to the node. It reports the first window that does, per entry.
type expectDialRate struct{}

func (expectDialRate) Name() string { return CheckExpectDialRate }

func (expectDialRate) Check(r *record.Result) []Violation {
	var out []Violation
	all := dialsByNode(r)
	for _, e := range r.Scenario.Expect.DialRate {
		var times []time.Duration
		for _, d := range all {
			if e.Node != "" && d.node != e.Node {
				continue
			}
			if e.During != nil && (d.at < e.During.Min || d.at >= e.During.Max) {
				continue
			}
			times = append(times, d.at)
		}
		first := 0
		for last, at := range times {
			for at-times[first] >= e.Per {
				first++
			}
			if n := last - first + 1; n > e.Max {
				out = append(out, violation(CheckExpectDialRate, at, itoa(n)+" dials to "+nodeLabel(e.Node)+" from "+
					times[first].String()+" to "+at.String()+", within "+e.Per.String()+": want at most "+itoa(e.Max)))
				break
			}
		}
	}
	return out
}
