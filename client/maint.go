package client

import (
	"log/slog"
	"time"

	"github.com/respire-go/respire/engine/config"
	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/netio"
)

// maintTransport sets the maintenance handshake and relaxation bounds of the transport
// configuration from the shared resolver's outcome (MaintenanceNotifications,
// MaintenanceRelaxedTimeout, MaintenanceWindowTimeout), as the simulator does.
func (o *Options) maintTransport(t *netio.TransportConfig, r *config.Resolved) {
	t.Handshake.Maintenance = netio.MaintMode(r.Handshake.Maintenance)
	t.Maintenance = r.Relaxation
}

// relaxedWait is called when a command's own timeout fired at fired, or when its relaxation
// shrank: if the connection it was handed to is in a maintenance window (see fsm.Relaxation), it
// returns the channel of the relaxed deadline, re-arming the call's timer, the channel closed
// when a notice ends or shortens the window (engine.Relax.Shrunk), and true. Otherwise the
// command times out.
//
// The command's start is its own deadline minus CommandTimeout, so that commands carry no start
// time on the hot path. The first relaxed answer records it in the call.
func (c *Client) relaxedWait(cl *call, fired time.Time) (<-chan time.Time, <-chan struct{}, bool) {
	r := cl.cmd.Relax()
	if r == nil {
		return nil, nil, false
	}
	if cl.relaxStart.IsZero() {
		cl.relaxStart = fired.Add(-c.opts.CommandTimeout)
	}
	shrunk := r.Shrunk()
	now := time.Now()
	wake, ok := r.Extend(now, cl.relaxStart, c.opts.CommandTimeout)
	if !ok {
		return nil, nil, false
	}
	cl.timer.Reset(wake.Sub(now))
	return cl.timer.C, shrunk, true
}

// maintWarn returns the engine's warning for a MOVING grace that closed an old connection with
// commands unanswered, logged at Warn on Logger (nil without a logger). It names the connection,
// never a command, key or value.
func (o *Options) maintWarn() func(fsm.ConnID) {
	l := o.Logger
	if l == nil {
		return nil
	}
	return func(id fsm.ConnID) {
		l.Warn("respire: MOVING grace ended; closing the old connection with commands unanswered (they fail with an unknown outcome)",
			slog.Uint64("conn", uint64(id)))
	}
}
