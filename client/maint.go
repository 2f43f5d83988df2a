package client

import (
	"time"

	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/netio"
)

// maintTransport sets the maintenance handshake and relaxation bounds of the transport
// configuration (MaintenanceNotifications, MaintenanceRelaxedTimeout, MaintenanceWindowTimeout).
func (o *Options) maintTransport(t *netio.TransportConfig) {
	t.Handshake.Maintenance = netio.MaintMode(o.MaintenanceNotifications)
	t.Maintenance = fsm.MaintConfig{RelaxedTimeout: o.MaintenanceRelaxedTimeout, WindowTimeout: o.MaintenanceWindowTimeout}
}

// relaxedWait is called when a command's own timeout fired at fired: if the connection it was
// handed to is in a maintenance window (see fsm.Relaxation), it returns the channel of the
// relaxed deadline, re-arming the call's timer, and true. Otherwise the command times out.
//
// The command's start is its own deadline minus CommandTimeout, so that commands carry no start
// time on the hot path. The first relaxed answer records it in the call.
func (c *Client) relaxedWait(cl *call, fired time.Time) (<-chan time.Time, bool) {
	r := cl.cmd.Relax()
	if r == nil {
		return nil, false
	}
	if cl.relaxStart.IsZero() {
		cl.relaxStart = fired.Add(-c.opts.CommandTimeout)
	}
	now := time.Now()
	deadline, recheck := r.Deadline(now, cl.relaxStart, c.opts.CommandTimeout)
	if !deadline.After(now) {
		return nil, false
	}
	if recheck.IsZero() || recheck.After(deadline) {
		recheck = deadline
	}
	cl.timer.Reset(recheck.Sub(now))
	return cl.timer.C, true
}
