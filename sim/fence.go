package sim

import "github.com/respire-go/respire/engine"

var _ engine.Identified = (*simConn)(nil)

// Fenceable implements engine.Identified: the connection asked for its CLIENT ID (the
// scenario's client.enable_fences).
func (c *simConn) Fenceable() bool { return c.hs != nil && c.hs.AskedClientID() }

// Identity implements engine.Identified: the id the node answered CLIENT ID with, and the
// endpoint dialed, which in the simulated network is the node itself.
func (c *simConn) Identity() (engine.Identity, bool) {
	if c.hs == nil {
		return engine.Identity{Peer: c.ep}, false
	}
	id, ok := c.hs.ClientID()
	return engine.Identity{ClientID: id, Peer: c.ep}, ok
}

// Unanswered implements engine.Identified: the connection closed with commands written and
// their replies missing.
func (c *simConn) Unanswered() bool { return c.unanswered }
