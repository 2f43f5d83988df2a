package netio

import (
	"net"

	"github.com/respire-go/respire/engine"
)

var _ engine.Identified = (*Conn)(nil)

// recordIdentity keeps what a fence needs once the handshake succeeded: the CLIENT ID the
// handshake recorded (with HandshakeConfig.ClientID) and the address the socket is actually
// connected to.
func (c *Conn) recordIdentity(h *Handshake) {
	id, ok := h.ClientID()
	c.ident = engine.Identity{ClientID: id, Peer: peerOf(c.nc, c.ep)}
	c.identified = ok
	c.fenceable = h.AskedClientID()
}

// peerOf returns the address nc is connected to: the resolved IP and port of a TCP socket, the
// path of a Unix socket. A connection from a custom dialer whose remote address is neither
// (a tunnel, a pipe) keeps the endpoint it was dialed to.
func peerOf(nc net.Conn, ep engine.Endpoint) engine.Endpoint {
	switch a := nc.RemoteAddr().(type) {
	case *net.TCPAddr:
		return engine.Endpoint{Host: a.IP.String(), Port: a.Port}
	case *net.UnixAddr:
		if a.Name != "" {
			return engine.Endpoint{Host: a.Name}
		}
	}
	return ep
}

// Identity returns the connection's CLIENT ID and physical peer, and whether the server gave an
// id (see HandshakeConfig.ClientID).
func (c *Conn) Identity() (engine.Identity, bool) { return c.ident, c.identified }

// Fenceable reports whether the handshake asked for the connection's CLIENT ID
// (HandshakeConfig.ClientID).
func (c *Conn) Fenceable() bool { return c.fenceable }

// Unanswered reports whether the connection ended with commands written (in part or in full)
// whose replies never came. Valid once the connection stopped (Lost was reported, or Close
// returned).
func (c *Conn) Unanswered() bool { return c.unanswered.Load() }
