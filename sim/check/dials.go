package check

import (
	"strconv"

	"github.com/respire-go/respire/sim/record"
	"github.com/respire-go/respire/sim/scenario"
)

// CheckDials is the name of the dial-count checker.
const CheckDials = "dials"

// Dials checks the scenario's dial expectations (expect.dials): for each, the number of dials
// the client made to the endpoint within the window lies within the bounds. "No dial to X after
// t", the retired-nodes incident's rule, is a window from t with max 0. The dials are the
// transport's records of every connection attempt (Result.Dials), whatever the machine and
// whatever the outcome.
type Dials struct{}

// Name implements Checker.
func (Dials) Name() string { return CheckDials }

// Check implements Checker.
func (Dials) Check(r *record.Result) []Violation {
	var out []Violation
	for i := range r.Scenario.Expect.Dials {
		e := &r.Scenario.Expect.Dials[i]
		count := 0
		var first, last record.Dial
		for _, d := range r.Dials {
			if d.Endpoint != e.Endpoint || d.At < e.After || (e.Before > 0 && d.At >= e.Before) {
				continue
			}
			if count == 0 {
				first = d
			}
			last = d
			count++
		}
		window := "from " + e.After.String()
		if e.Before > 0 {
			window += " to " + e.Before.String()
		}
		switch {
		case e.Max != nil && count > *e.Max:
			at := last.At
			if count > 0 && *e.Max == 0 {
				at = first.At
			}
			out = append(out, violation(CheckDials, at, strconv.Itoa(count)+" dials to "+e.Endpoint+" "+window+
				" (at most "+strconv.Itoa(*e.Max)+"; the first at "+first.At.String()+")"))
		case e.Min != nil && count < *e.Min:
			out = append(out, violation(CheckDials, r.End, strconv.Itoa(count)+" dials to "+e.Endpoint+" "+window+
				" (at least "+strconv.Itoa(*e.Min)+")"))
		}
	}
	return out
}

// dialsSelected reports whether the scenario has dial expectations.
func dialsSelected(sc *scenario.Scenario) bool { return len(sc.Expect.Dials) > 0 }
