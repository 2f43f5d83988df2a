package check

import (
	"github.com/respire-go/respire/sim/record"
	"github.com/respire-go/respire/sim/scenario"
)

// closedWindows returns the windows in which sc's application had closed its client: from each
// close (or recreate) to the create that follows it (the same instant for a recreate), or to the
// end of the run.
func closedWindows(sc *scenario.Scenario) []record.Window {
	var out []record.Window
	open := -1
	for _, i := range sc.SortedActions() {
		a := &sc.Actions[i]
		switch a.Kind() {
		case "close":
			out = append(out, record.Window{From: a.At, To: sc.Duration})
			open = len(out) - 1
		case "recreate":
			out = append(out, record.Window{From: a.At, To: a.At})
			open = -1
		case "create":
			if open >= 0 {
				out[open].To = a.At
				open = -1
			}
		}
	}
	return out
}
