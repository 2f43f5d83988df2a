package scenario

import (
	"strconv"

	"github.com/respire-go/respire/fsm"
)

// A view of the client with a read policy of its own (issue 17: client.Client.WithReadFrom):
// workload.view gives it to the first callers of the workload, whose reads follow its policy
// while the other callers' follow the client's read_from. The client is one: the same engines
// and read router serve both. The replica checkers take each read's policy from its caller
// (ReadPolicyOf).

// ViewSpec is workload.view.
type ViewSpec struct {
	// ReadFrom is the view's read policy, by name (as client.read_from).
	ReadFrom string `yaml:"read_from"`
	// Callers is how many callers read through the view: callers 0 to Callers-1 (1 to
	// workload.callers).
	Callers int `yaml:"callers"`
}

// viewPolicy returns the view's read policy, and whether the workload has a view with a valid
// one.
func (sc *Scenario) viewPolicy() (fsm.ReadFrom, bool) {
	v := sc.Workload.View
	if v == nil {
		return 0, false
	}
	return ParseReadFrom(v.ReadFrom)
}

// ReadPolicyOf returns the read policy of the reads of caller: the view's for the callers of
// workload.view, else the client's read_from (Primary when unset).
func (sc *Scenario) ReadPolicyOf(caller int) fsm.ReadFrom {
	if p, ok := sc.viewPolicy(); ok && caller < sc.Workload.View.Callers {
		return p
	}
	p, _ := ParseReadFrom(sc.Client.ReadFrom)
	if sc.Client.ReadFrom == "" {
		p = fsm.ReadPrimary
	}
	return p
}

// validateView checks workload.view: a known policy, 1 to workload.callers callers, and, for a
// policy other than Primary, a replica source (topology.replication or a Sentinel topology);
// a zone-aware policy needs client.client_availability_zone, as the client's does.
func (sc *Scenario) validateView() error {
	v := sc.Workload.View
	if v == nil {
		return nil
	}
	p, ok := ParseReadFrom(v.ReadFrom)
	switch {
	case !ok:
		return fieldErr("workload.view.read_from", "unknown read policy "+strconv.Quote(v.ReadFrom))
	case v.Callers < 1 || v.Callers > sc.Workload.Callers:
		return fieldErr("workload.view.callers", "must be in [1, workload.callers]")
	case p != fsm.ReadPrimary && sc.Topology.Replication == nil && !sc.IsSentinel():
		return fieldErr("workload.view.read_from", "needs replicas: topology.replication or a Sentinel topology")
	case p.ZoneAware() && sc.Client.ClientAvailabilityZone == "":
		return fieldErr("workload.view.read_from", "a zone-aware policy needs client.client_availability_zone")
	}
	return nil
}
