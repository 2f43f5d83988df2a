package netio

import (
	"time"

	"github.com/respire-go/respire/engine"
	"github.com/respire-go/respire/netio/wire"
)

// MaintMode is how a connection opts in to maintenance notifications (wire.MaintMode).
type MaintMode = wire.MaintMode

// Maintenance modes (wire's).
const (
	// MaintDisabled: no maintenance handshake.
	MaintDisabled = wire.MaintDisabled
	// MaintAuto: RESP3 connections ask; an unknown-command error turns it off for the connection.
	MaintAuto = wire.MaintAuto
	// MaintEnabled: RESP3 and the server's acknowledgement are required.
	MaintEnabled = wire.MaintEnabled
)

// Relax returns the connection's maintenance relaxation, or nil when its handshake did not
// enable maintenance notifications. It implements engine.Relaxer.
func (c *Conn) Relax() *engine.Relax { return c.relax }

var _ engine.Relaxer = (*Conn)(nil)

// maintNotice applies the push just read, if it is a maintenance notice, on the reader
// goroutine. A malformed notice is dropped: it never fails the connection, and the push handler
// still sees it.
func (c *Conn) maintNotice() {
	n, err := wire.ParseMaintNotice(&c.scratch)
	if err != nil {
		return
	}
	c.relax.Push(n, time.Now(), c.id, c.ep, c.sink)
}
