package engine

import (
	"context"
	"sync/atomic"

	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/internal/plant"
)

// redialSink carries the planted bug plant.SentinelRedialAtOnce: it stands between the
// transport and the engine's sink for one attempt to reach a Sentinel, and when the attempt
// fails before connecting (a refused or timed-out connect), it opens the same attempt again at
// once instead of reporting the failure, so the machine never arms the policy's backoff. Once
// the transport connects, or the attempt is cancelled, it passes everything through. Only the
// simulator's positive control switches it on (sentinelOpen).
type redialSink struct {
	e      *Engine
	ctx    context.Context
	req    OpenRequest
	dialed atomic.Bool
}

var _ Sink = (*redialSink)(nil)

// Dialed implements Sink.
func (s *redialSink) Dialed(id fsm.ConnID) {
	s.dialed.Store(true)
	sink{s.e}.Dialed(id)
}

// Ready implements Sink.
func (s *redialSink) Ready(id fsm.ConnID, conn Conn) { sink{s.e}.Ready(id, conn) }

// Lost implements Sink.
func (s *redialSink) Lost(id fsm.ConnID, err error) { sink{s.e}.Lost(id, err) }

// Failed implements Sink: the planted redial.
func (s *redialSink) Failed(id fsm.ConnID, err error, class fsm.FailureClass) {
	if s.dialed.Load() || s.ctx.Err() != nil || !s.e.deps.Plants.Fire(plant.SentinelRedialAtOnce, uint64(id)) {
		sink{s.e}.Failed(id, err, class)
		return
	}
	// The open stays counted in e.opens: this attempt goes on under the same id.
	req := s.req
	req.Sink = s
	s.e.post(item{call: func() { s.e.deps.Transport.Open(s.ctx, req) }})
}
