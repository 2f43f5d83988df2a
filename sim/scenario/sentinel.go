package scenario

import (
	"strconv"
	"strings"
	"time"

	"github.com/respire-go/respire/engine"
	"github.com/respire-go/respire/fsm"
)

// The simulated Redis Sentinel's part of the schema: the sentinel topology (SentinelSpec) and
// the sentinel fault kind (SentinelFault: failovers that update each Sentinel's own view after
// its own delay, and Sentinels announcing the primary down). Kill, pause, blackhole, refuse and
// the other node faults apply to Sentinels as to any node.

// TopologySentinel is a primary with replicas, watched by Sentinels (Topology.Sentinel); the
// client discovers the primary through the Sentinels.
const TopologySentinel = "sentinel"

// SentinelPort is the port of every simulated Sentinel's endpoint ("<id>:26379").
const SentinelPort = 26379

// DefaultPrimaryName is SentinelSpec.PrimaryName's default.
const DefaultPrimaryName = "mymaster"

// MaxSentinelFailoverViews bounds FailoverAction.Views and SentinelDownAction.Sentinels;
// MaxSentinelNodes bounds a sentinel topology's nodes.
const (
	MaxSentinelFailoverViews = 64
	MaxSentinelNodes         = 256
)

// SentinelSpec describes a simulated Sentinel deployment over topology.nodes: data nodes (one
// primary, replicas) and Sentinels. Every node is exactly one of them. Data nodes listen at
// "<id>:6379", Sentinels at "<id>:26379".
type SentinelSpec struct {
	// PrimaryName is the name the Sentinels monitor the primary under (default "mymaster").
	PrimaryName string `yaml:"primary_name"`
	// Primary is the first primary's node id. Every Sentinel's view starts with it, at
	// configuration epoch 1.
	Primary string `yaml:"primary"`
	// Replicas are its replicas' node ids. Replication is synchronous: a promotion loses no
	// acknowledged write.
	Replicas []string `yaml:"replicas,omitempty"`
	// Sentinels are the Sentinels' node ids (1 to fsm.MaxSentinels). Each knows the others
	// (SENTINEL SENTINELS).
	Sentinels []string `yaml:"sentinels"`
	// Configured are the Sentinels the client is configured with, in order (default: all of
	// Sentinels); the others are learned from SENTINEL SENTINELS.
	Configured []string `yaml:"configured,omitempty"`
	// NoEpoch makes every Sentinel refuse SENTINEL MASTER with NOPERM, as for a user without the
	// permission: the client falls back to GET-MASTER-ADDR-BY-NAME and ROLE checks, and cannot
	// read configuration epochs.
	NoEpoch bool `yaml:"no_epoch,omitempty"`
}

// SentinelFault is one change of a simulated Sentinel deployment (the fault kind "sentinel"):
// exactly one action.
type SentinelFault struct {
	// Failover promotes a replica and updates Sentinels' views.
	Failover *FailoverAction `yaml:"failover,omitempty"`
	// Down makes Sentinels announce the primary of their view down (+sdown, then +odown).
	Down *SentinelDownAction `yaml:"down,omitempty"`
}

// FailoverAction is a failover: Promote (if set) becomes the primary now and the old primary a
// replica (writes answer READONLY); then each Sentinel of Views takes the view "Primary at
// Epoch" after its own delay, and announces it on +switch-master unless Quiet. A Sentinel left
// out of Views keeps its view: it is stale. A view update without Promote is a stale or late
// report (a Sentinel naming a primary that is no longer one).
type FailoverAction struct {
	// Promote is the data node promoted now; empty: no promotion.
	Promote string `yaml:"promote,omitempty"`
	// Primary is the data node the updated views name (default: Promote).
	Primary string `yaml:"primary,omitempty"`
	// Epoch is the configuration epoch of the updated views (default: one more than the
	// highest epoch a failover of the run set so far, the first being 1).
	Epoch uint64 `yaml:"epoch,omitempty"`
	// Views are the Sentinels updated and their delays (default: every Sentinel, at once).
	Views []ViewUpdate `yaml:"views,omitempty"`
	// Quiet: the updated Sentinels publish no +switch-master.
	Quiet bool `yaml:"quiet,omitempty"`
	// Split, when positive, is how long the old primary, cut off from the rest of the
	// deployment, misses the failover: it keeps acting as a primary on its own copy of the data
	// (ROLE master, writes acknowledged), then rejoins as a replica and its writes since the
	// failover are discarded. Those are the acknowledged writes Redis loses (Jepsen's finding);
	// the linearizable checker leaves out the commands it applied meanwhile and judges the rest.
	// Requires Promote.
	Split time.Duration `yaml:"split,omitempty"`
}

// ViewUpdate is one Sentinel's update in a failover.
type ViewUpdate struct {
	// Sentinel is the Sentinel's node id.
	Sentinel string `yaml:"sentinel"`
	// After delays its update from the failover's start (default 0).
	After time.Duration `yaml:"after,omitempty"`
	// Leads: the Sentinel leads the failover. Until its update, it reports the old primary
	// (the one of its view) under the failover's new epoch with failover_in_progress, as a
	// real leader does between promoting a replica and reconfiguring the others; it announces
	// nothing then. Needs a positive After.
	Leads bool `yaml:"leads,omitempty"`
}

// SentinelDownAction makes Sentinels announce +sdown and +odown for their view's primary.
type SentinelDownAction struct {
	// Sentinels are the announcing Sentinels (default: all).
	Sentinels []string `yaml:"sentinels,omitempty"`
}

// SentinelActions lists the YAML names of the sentinel actions.
var SentinelActions = []string{"failover", "down"}

func (f *SentinelFault) kinds() []string {
	var out []string
	for i, set := range []bool{f.Failover != nil, f.Down != nil} {
		if set {
			out = append(out, SentinelActions[i])
		}
	}
	return out
}

// IsSentinel reports whether the scenario simulates a Sentinel deployment.
func (sc *Scenario) IsSentinel() bool { return sc.Topology.Kind == TopologySentinel }

// SentinelEndpoints returns the client's configured Sentinels of a valid sentinel topology.
func (sc *Scenario) SentinelEndpoints() []engine.Endpoint {
	s := sc.Topology.Sentinel
	if !sc.IsSentinel() || s == nil {
		return nil
	}
	ids := s.Configured
	if len(ids) == 0 {
		ids = s.Sentinels
	}
	out := make([]engine.Endpoint, len(ids))
	for i, id := range ids {
		out[i] = engine.Endpoint{Host: id, Port: SentinelPort}
	}
	return out
}

// applySentinelDefaults fills in a sentinel topology's defaults.
func (sc *Scenario) applySentinelDefaults() {
	if s := sc.Topology.Sentinel; sc.IsSentinel() && s != nil && s.PrimaryName == "" {
		s.PrimaryName = DefaultPrimaryName
	}
	for i := range sc.Faults {
		if f := sc.Faults[i].Sentinel; f != nil && f.Failover != nil && f.Failover.Primary == "" {
			f.Failover.Primary = f.Failover.Promote
		}
	}
}

// validateSentinel checks a sentinel topology.
func (sc *Scenario) validateSentinel() error {
	t := &sc.Topology
	s := t.Sentinel
	if s == nil {
		return fieldErr("topology.sentinel", "is required for a sentinel topology")
	}
	const f = "topology.sentinel"
	if len(t.Nodes) > MaxSentinelNodes {
		return fieldErr("topology.nodes", "a sentinel topology has at most "+strconv.Itoa(MaxSentinelNodes)+" nodes")
	}
	if s.PrimaryName == "" || len(s.PrimaryName) > fsm.MaxPrimaryNameLength ||
		strings.IndexFunc(s.PrimaryName, func(r rune) bool { return r <= ' ' || r == 0x7f }) >= 0 {
		return fieldErr(f+".primary_name", "must be 1 to "+strconv.Itoa(fsm.MaxPrimaryNameLength)+" bytes without spaces or control characters")
	}
	role := map[string]string{}
	claim := func(field, id, what string) error {
		if sc.node(id) < 0 {
			return fieldErr(field, "unknown node "+strconv.Quote(id))
		}
		if r, ok := role[id]; ok {
			return fieldErr(field, "node "+strconv.Quote(id)+" is already a "+r)
		}
		role[id] = what
		return nil
	}
	if err := claim(f+".primary", s.Primary, "data node"); err != nil {
		return err
	}
	for i, id := range s.Replicas {
		if err := claim(f+".replicas["+strconv.Itoa(i)+"]", id, "data node"); err != nil {
			return err
		}
	}
	if len(s.Sentinels) == 0 || len(s.Sentinels) > fsm.MaxSentinels {
		return fieldErr(f+".sentinels", "must name 1 to "+strconv.Itoa(fsm.MaxSentinels)+" Sentinels")
	}
	for i, id := range s.Sentinels {
		if err := claim(f+".sentinels["+strconv.Itoa(i)+"]", id, "Sentinel"); err != nil {
			return err
		}
	}
	for i, n := range t.Nodes {
		if _, ok := role[n.ID]; !ok {
			return fieldErr("topology.nodes["+strconv.Itoa(i)+"]", "node "+strconv.Quote(n.ID)+" is neither a data node nor a Sentinel of topology.sentinel")
		}
	}
	seen := map[string]bool{}
	for i, id := range s.Configured {
		field := f + ".configured[" + strconv.Itoa(i) + "]"
		switch {
		case role[id] != "Sentinel":
			return fieldErr(field, strconv.Quote(id)+" is not one of topology.sentinel.sentinels")
		case seen[id]:
			return fieldErr(field, "repeats "+strconv.Quote(id))
		}
		seen[id] = true
	}
	return nil
}

// validateSentinelFault checks a sentinel fault.
func (sc *Scenario) validateSentinelFault(field string, f *SentinelFault) error {
	if !sc.IsSentinel() || sc.Topology.Sentinel == nil {
		return fieldErr(field, "needs a sentinel topology")
	}
	kinds := f.kinds()
	switch {
	case len(kinds) == 0:
		return fieldErr(field, "needs one action (one of "+strings.Join(SentinelActions, ", ")+")")
	case len(kinds) > 1:
		return fieldErr(field, "has several actions ("+strings.Join(kinds, ", ")+"); use one entry each")
	}
	field += "." + kinds[0]
	s := sc.Topology.Sentinel
	isSentinel := func(id string) bool {
		for _, x := range s.Sentinels {
			if x == id {
				return true
			}
		}
		return false
	}
	dataNode := func(name, id string) error {
		if sc.node(id) < 0 || isSentinel(id) {
			return fieldErr(field+"."+name, strconv.Quote(id)+" is not a data node of topology.sentinel")
		}
		return nil
	}
	sentinels := func(name string, ids []string) error {
		for i, id := range ids {
			if !isSentinel(id) {
				return fieldErr(field+"."+name+"["+strconv.Itoa(i)+"]", strconv.Quote(id)+" is not one of topology.sentinel.sentinels")
			}
		}
		return nil
	}
	if d := f.Down; d != nil {
		if len(d.Sentinels) > MaxSentinelFailoverViews {
			return fieldErr(field+".sentinels", "at most "+strconv.Itoa(MaxSentinelFailoverViews)+" Sentinels")
		}
		return sentinels("sentinels", d.Sentinels)
	}
	a := f.Failover
	if a.Promote != "" {
		if err := dataNode("promote", a.Promote); err != nil {
			return err
		}
	}
	if a.Primary == "" {
		return fieldErr(field+".primary", "is required without promote")
	}
	switch {
	case a.Split < 0 || a.Split > MaxDuration:
		return fieldErr(field+".split", "must be between 0 and "+MaxDuration.String())
	case a.Split > 0 && a.Promote == "":
		return fieldErr(field+".split", "needs promote: only a failover leaves an old primary behind")
	}
	if err := dataNode("primary", a.Primary); err != nil {
		return err
	}
	if len(a.Views) > MaxSentinelFailoverViews {
		return fieldErr(field+".views", "at most "+strconv.Itoa(MaxSentinelFailoverViews)+" updates")
	}
	for i, v := range a.Views {
		vf := field + ".views[" + strconv.Itoa(i) + "]"
		switch {
		case !isSentinel(v.Sentinel):
			return fieldErr(vf+".sentinel", strconv.Quote(v.Sentinel)+" is not one of topology.sentinel.sentinels")
		case v.After < 0 || v.After > MaxDuration:
			return fieldErr(vf+".after", "must be between 0 and "+MaxDuration.String())
		case v.Leads && v.After == 0:
			return fieldErr(vf+".leads", "needs a positive after: the leader switches once the failover ends")
		}
	}
	return nil
}
