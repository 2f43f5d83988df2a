package engine

import (
	"sync"

	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/netio/topo"
)

// validation gathers the three pipelined answers of a replica validation (ROLE, CONFIG GET
// replica-serve-stale-data, INFO SERVER) into one router event, stepped once all three ended.
// ROLE decides (RoleAnswered, else RoleFailed); the other two are advisory: a refusal leaves
// serve-stale on, Redis's default, and the zone unknown. The standalone router and a Cluster
// shard's reads share it.
type validation struct {
	mu   sync.Mutex
	left int
	ev   fsm.RouterEvent
	step func(fsm.RouterEvent)
}

// newValidation returns the validation of candidate target, which steps its event with step.
func newValidation(target int, step func(fsm.RouterEvent)) *validation {
	return &validation{left: 3, ev: fsm.RouterEvent{Kind: fsm.RoleFailed, Target: target, ServeStale: true}, step: step}
}

// finish counts one answer, and steps the event after the last.
func (v *validation) finish() {
	v.mu.Lock()
	v.left--
	done := v.left == 0
	v.mu.Unlock()
	if done {
		v.step(v.ev)
	}
}

// role is the Done of the ROLE command.
func (v *validation) role(c *Command) {
	if c.Err == nil {
		if rr, err := topo.ParseRole(c.Reply); err == nil && !rr.Sentinel {
			v.mu.Lock()
			v.ev.Kind, v.ev.Replica, v.ev.Link = fsm.RoleAnswered, rr.Role == fsm.RoleReplica, fsm.ParseLink(rr.LinkState)
			v.mu.Unlock()
		}
	}
	v.finish()
}

// stale is the Done of the CONFIG GET replica-serve-stale-data command.
func (v *validation) stale(c *Command) {
	if c.Err == nil && !c.Reply.IsError() {
		if s, ok := configValue(&c.Reply); ok {
			v.mu.Lock()
			v.ev.ServeStale = s != "no"
			v.mu.Unlock()
		}
	}
	v.finish()
}

// info is the Done of the INFO SERVER command.
func (v *validation) info(c *Command) {
	if c.Err == nil && !c.Reply.IsError() {
		text, err := c.Reply.AsString()
		if zone, ok := infoField(text, "availability_zone"); err == nil && ok && zone != "" {
			v.mu.Lock()
			v.ev.Zone, v.ev.ZoneKnown = zone, true
			v.mu.Unlock()
		}
	}
	v.finish()
}
