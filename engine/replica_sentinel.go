package engine

import "github.com/respire-go/respire/fsm"

// KnownSentinels returns the Sentinels a Sentinel client knew at its last publication: the
// configured ones, then those learned from SENTINEL SENTINELS answers. It is nil before the
// first publication and for engines that are not a Sentinel client's. The slice is shared:
// callers must not modify it. The replica source asks these Sentinels for the replicas.
func (e *Engine) KnownSentinels() []fsm.Endpoint {
	if e.sn == nil {
		return nil
	}
	return e.sn.view.Load().peers
}
