package sim

import (
	"net"
	"slices"
)

// announcedAddr is the address a Sentinel announces for the data node id: the address it
// listens at (its name until a kill moves it: kill.move_to).
func (w *world) announcedAddr(id string) string {
	if s := w.nodeByID(id); s != nil {
		return s.addr
	}
	return id
}

// holed reports whether a connect that resolved to dial address addr (host:port) goes to an
// address a node moved away from with kill.old_address: blackhole. Such a connect gets no
// answer at all and hangs until the client's connect timeout, where a refused old address
// answers with a reset.
func (w *world) holed(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	for _, s := range w.nodes {
		if len(s.holes) > 0 && slices.Contains(s.holes, host) {
			return true
		}
	}
	return false
}

// move moves s to moveTo at its restart: its name resolves there from now on, its deployment
// announces the new address, and the old one refuses connects or, with kill.old_address:
// blackhole, answers none.
func (s *server) move() {
	s.holes = slices.DeleteFunc(s.holes, func(h string) bool { return h == s.moveTo })
	if s.holeOld {
		s.holes = append(s.holes, s.addr)
		s.holedMoves = append(s.holedMoves, s.moves)
	}
	old := s.addr
	s.addr, s.moveTo, s.holeOld = s.moveTo, "", false
	s.moves++
	s.SetAnnounced(s.addr) // a Cluster, or the Sentinels, announce the new address
	s.w.tr.End(s.w.tr.Begin("fault moved").Str("node", s.ID()).Str("addr", s.addr))
	s.w.sentinelMoved(s, old)
}

// sentinelMoved reconfigures the Sentinels whose view names s, which moved from old, as the
// primary: a new configuration epoch, and +switch-master to the new address.
func (w *world) sentinelMoved(s *server, old string) {
	if w.sentinel == nil || w.sc.Topology.Sentinel == nil {
		return
	}
	bumped := false
	for _, id := range w.sc.Topology.Sentinel.Sentinels {
		if sn := w.nodeByID(id); sn != nil && sn.SentinelView().Primary == s.ID() {
			if !bumped {
				w.sentinel.epoch++
				bumped = true
			}
			sn.MoveSentinelPrimary(s.ID(), w.sentinel.epoch, old, s.addr)
			w.tr.End(w.tr.Begin("sentinel view").Str("sentinel", id).Str("primary", s.ID()).
				Str("addr", s.addr).Uint("epoch", w.sentinel.epoch))
		}
	}
}

// movedAwayHoled reports whether the move that took s away from the address it had when its
// moves count was moves black-holed that address.
func (s *server) movedAwayHoled(moves uint8) bool { return slices.Contains(s.holedMoves, moves) }
