package scenario

import (
	"slices"
	"strconv"
	"strings"
	"time"
)

// MaxActions bounds the entries of actions. Each create starts a new client generation, whose
// identifiers the runner keeps apart from the earlier ones' in 8 bits (record.ClientGen).
const MaxActions = 200

// ClientAction is one entry of the actions timeline: something the application does to its
// client at a virtual time, as a service does on a configuration reload or a deployment. Exactly
// one of Close, Create and Recreate is set.
type ClientAction struct {
	// At is when the action runs, from 0 to the run's duration (excluded).
	At time.Duration `yaml:"at"`
	// Close closes the client (client.Client.Close): commands waiting for a connection fail
	// definitely, commands written end unknown, and every call until the next create fails
	// definitely, as calls on a closed client do.
	Close *CloseAction `yaml:"close,omitempty"`
	// Create builds a new client after a close (client.Connect or client.Create).
	Create *CreateAction `yaml:"create,omitempty"`
	// Recreate closes the client and builds a new one at the same instant.
	Recreate *CreateAction `yaml:"recreate,omitempty"`
}

// CloseAction is a close action. It has no fields yet.
type CloseAction struct{}

// CreateAction is a create or recreate action.
type CreateAction struct {
	// Connect is "eager" (connect every slot before the client is used, as client.Connect; a
	// failure fails the run) or "lazy" (connect on first use, as client.Create). Omitted: the
	// client section's connect.
	Connect string `yaml:"connect,omitempty"`
}

// ActionKinds lists the YAML names of the client actions.
var ActionKinds = []string{"close", "create", "recreate"}

// Kind returns the YAML name of the action's kind, or "" when none or several are set.
func (a *ClientAction) Kind() string {
	var kinds []string
	if a.Close != nil {
		kinds = append(kinds, "close")
	}
	if a.Create != nil {
		kinds = append(kinds, "create")
	}
	if a.Recreate != nil {
		kinds = append(kinds, "recreate")
	}
	if len(kinds) != 1 {
		return ""
	}
	return kinds[0]
}

// Creation returns the create part of a create or recreate, or nil for a close.
func (a *ClientAction) Creation() *CreateAction {
	if a.Create != nil {
		return a.Create
	}
	return a.Recreate
}

// ConnectMode returns the connect mode of a create or recreate: its own, or the client
// section's.
func (sc *Scenario) ConnectMode(a *ClientAction) string {
	if c := a.Creation(); c != nil && c.Connect != "" {
		return c.Connect
	}
	return sc.Client.Connect
}

// SortedActions returns the indexes of sc.Actions in the order they run: by time, then in file
// order.
func (sc *Scenario) SortedActions() []int {
	idx := make([]int, len(sc.Actions))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		return int(min(max(sc.Actions[a].At-sc.Actions[b].At, -1), 1))
	})
	return idx
}

// validateActions checks the actions timeline: one kind per entry, times within the run, a
// close only of an open client and a create only of a closed one, and a run the runner can
// recreate a client in (standalone, with the multiplexed callers alone).
func (sc *Scenario) validateActions() error {
	if len(sc.Actions) == 0 {
		return nil
	}
	if len(sc.Actions) > MaxActions {
		return fieldErr("actions", "has "+strconv.Itoa(len(sc.Actions))+" entries: must be at most "+strconv.Itoa(MaxActions))
	}
	switch {
	case sc.Topology.Kind != TopologyStandalone:
		return fieldErr("actions", "client actions run on standalone topologies only")
	case sc.Workload.Dedicated != nil:
		return fieldErr("actions", "client actions cannot be combined with workload.dedicated yet")
	case sc.Workload.PubSub != nil:
		return fieldErr("actions", "client actions cannot be combined with workload.pubsub yet")
	case sc.Client.ConnectionMaxLifetime > 0:
		return fieldErr("actions", "client actions cannot be combined with client.connection_max_lifetime yet")
	case sc.Client.EnableFences:
		return fieldErr("actions", "client actions cannot be combined with client.enable_fences yet")
	}
	for i := range sc.Actions {
		a := &sc.Actions[i]
		field := "actions[" + strconv.Itoa(i) + "]"
		if a.Kind() == "" {
			return fieldErr(field, "needs exactly one action (one of "+strings.Join(ActionKinds, ", ")+")")
		}
		if a.At < 0 || a.At >= sc.Duration {
			return fieldErr(field+".at", "must be from 0 to the run's duration ("+sc.Duration.String()+"), excluded")
		}
		if c := a.Creation(); c != nil && c.Connect != "" && c.Connect != ConnectEager && c.Connect != ConnectLazy {
			return fieldErr(field+"."+a.Kind()+".connect", "must be eager or lazy")
		}
	}
	open := true
	for _, i := range sc.SortedActions() {
		a := &sc.Actions[i]
		field := "actions[" + strconv.Itoa(i) + "]"
		switch a.Kind() {
		case "close", "recreate":
			if !open {
				return fieldErr(field, a.Kind()+" at "+a.At.String()+" of a client already closed (add a create first)")
			}
			open = a.Kind() == "recreate"
		case "create":
			if open {
				return fieldErr(field, "create at "+a.At.String()+" while the client is open (close it first, or use recreate)")
			}
			open = true
		}
	}
	return nil
}
