package fsm

import "strconv"

// FenceData is the identity of a connection that owes a fence: its server-side id and the
// physical peer it was connected to. It travels in Owed events and Kill effects and is never
// modified once built.
type FenceData struct {
	// Owed is the connection that ended with replies outstanding.
	Owed ConnID
	// ClientID is the id the server gave the connection (CLIENT ID); zero when none was recorded
	// (identity not requested, or refused).
	ClientID int64
	// Peer is the address the connection was actually connected to (the resolved address, not
	// the configured name), which a fence's control connection dials.
	Peer Endpoint
}

// appendTo appends " owed=<conn> id=<id> peer=<addr>", or " owed=<conn> unidentified".
func (d *FenceData) appendTo(dst []byte) []byte {
	if d == nil {
		return dst
	}
	dst = d.Owed.AppendTo(append(dst, " owed="...))
	if d.ClientID == 0 {
		return append(dst, " unidentified"...)
	}
	dst = append(dst, " id="...)
	dst = strconv.AppendInt(dst, d.ClientID, 10)
	return d.Peer.AppendTo(append(dst, " peer="...))
}
