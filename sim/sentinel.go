package sim

import (
	"context"
	"strings"
	"time"

	"github.com/respire-go/respire/engine"
	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/netio/resp"
	"github.com/respire-go/respire/netio/topo"
	"github.com/respire-go/respire/netio/wire"
	"github.com/respire-go/respire/sim/node"
	"github.com/respire-go/respire/sim/scenario"
)

// The simulated Redis Sentinel in the world: the replication group and the Sentinels built from
// the topology's sentinel section, changed by the "sentinel" faults; the Sentinel connections'
// own handshake (RESP2, the data connections' credentials, as client.Options inherits them);
// the monitor connections' messages to an engine.SentinelReceiver; and, standing in for the
// client package's wrappers, the ROLE check of each new data connection and the READONLY
// notice.

// sentinelWorld is the world's Sentinel deployment.
type sentinelWorld struct {
	group *node.Group
	// epoch is the highest configuration epoch a failover set so far.
	epoch uint64
	recv  *engine.SentinelReceiver
	hs    wire.HandshakeConfig
}

// buildSentinel makes the world's nodes a Sentinel deployment when the topology is one.
func (w *world) buildSentinel() {
	spec := w.sc.Topology.Sentinel
	if !w.sc.IsSentinel() || spec == nil {
		return
	}
	var replicas []*node.Node
	for _, id := range spec.Replicas {
		replicas = append(replicas, w.nodeByID(id).Node)
	}
	sw := &sentinelWorld{epoch: 1, recv: &engine.SentinelReceiver{}}
	sw.group = node.NewGroup(scenario.NodePort, w.nodeByID(spec.Primary).Node, replicas)
	for _, id := range spec.Sentinels {
		var peers []string
		for _, p := range spec.Sentinels {
			if p != id {
				peers = append(peers, p)
			}
		}
		n := w.nodeByID(id).Node
		n.MakeSentinel(spec.PrimaryName, scenario.SentinelPort, node.SentinelView{Primary: spec.Primary, Epoch: 1}, peers)
		n.SetSentinelNoEpoch(spec.NoEpoch)
		n.SetSentinelAddresses(w.announcedAddr)
		n.SetSentinelGroup(sw.group)
	}
	w.sentinel = sw
}

// sentinelHandshake sets the Sentinel connections' handshake from the data connections': RESP2,
// the same credentials and client name, no database or library information.
func (w *world) sentinelHandshake() {
	if w.sentinel == nil {
		return
	}
	h := w.handshake
	w.sentinel.hs = wire.HandshakeConfig{Protocol: wire.ProtocolRESP2, Username: h.Username, Password: h.Password, ClientName: h.ClientName}
}

// sentinelStart applies a sentinel fault's action; it ends at once (its delayed view updates
// are events of their own).
func (fs *faultState) sentinelStart() {
	w := fs.w
	a := fs.f.Sentinel
	switch {
	case a.Failover != nil:
		f := a.Failover
		if f.Promote != "" && f.Split > 0 && w.nodeByID(f.Promote).Node != w.sentinel.group.Primary() {
			fs.sentinelSplit(w.sentinel.group.Primary(), f.Split)
		}
		if f.Promote != "" {
			w.sentinel.group.Promote(w.nodeByID(f.Promote).Node)
			w.tr.End(w.tr.Begin("sentinel promoted").Uint("fault", uint64(fs.idx)).Str("node", f.Promote))
		}
		epoch := f.Epoch
		if epoch == 0 {
			epoch = w.sentinel.epoch + 1
		}
		w.sentinel.epoch = max(w.sentinel.epoch, epoch)
		views := f.Views
		if len(views) == 0 {
			for _, id := range w.sc.Topology.Sentinel.Sentinels {
				views = append(views, scenario.ViewUpdate{Sentinel: id})
			}
		}
		view := node.SentinelView{Primary: f.Primary, Epoch: epoch}
		for _, v := range views {
			s := w.nodeByID(v.Sentinel)
			update := func() bool {
				s.UpdateSentinel(view, !f.Quiet)
				w.tr.End(w.tr.Begin("sentinel view").Uint("fault", uint64(fs.idx)).Str("sentinel", s.ID()).
					Str("primary", view.Primary).Uint("epoch", view.Epoch))
				return true
			}
			if v.Leads {
				// Until it switches, the leader pairs the new epoch with the old primary.
				lead := node.SentinelView{Primary: s.SentinelView().Primary, Epoch: epoch, InFailover: true}
				s.UpdateSentinel(lead, false)
				w.tr.End(w.tr.Begin("sentinel view").Uint("fault", uint64(fs.idx)).Str("sentinel", s.ID()).
					Str("primary", lead.Primary).Uint("epoch", lead.Epoch).Str("flags", "failover_in_progress"))
			}
			if v.After == 0 {
				update()
			} else {
				w.k.after(v.After, funcAction(update), 0)
			}
		}
	case a.Down != nil:
		ids := a.Down.Sentinels
		if len(ids) == 0 {
			ids = w.sc.Topology.Sentinel.Sentinels
		}
		for _, id := range ids {
			w.nodeByID(id).SentinelDown()
		}
	}
	fs.finish()
}

// sentinelOpen adapts an attempt of a Sentinel client: a Sentinel connection gets the Sentinel
// handshake (a monitor's is a subscriber connection), a data connection the ROLE check. It
// reports the handshake to use (nil: the world's).
func (w *world) sentinelOpen(ctx context.Context, req *engine.OpenRequest) *wire.HandshakeConfig {
	switch {
	case w.sentinel == nil:
		return nil
	case req.Sentinel:
		return &w.sentinel.hs
	case w.rep != nil && w.rep.opening == openReplica:
		return nil // a replica's connection: no primary ROLE check (replica_sentinel.go)
	case req.Machine != fsm.MachineSentinel && !w.sc.Planted(scenario.PlantSentinelSkipRoleCheck):
		req.Sink = &roleCheck{w: w, ctx: ctx, inner: req.Sink}
	}
	return nil
}

// noteReadOnly retires the primary's generation when a reply of a Sentinel client's data
// connection says the server is a replica now, as client.Client does.
func (w *world) noteReadOnly(v *resp.Value) {
	if w.sentinel != nil && v.IsError() && strings.HasPrefix(v.ErrorMessage(), "READONLY") {
		w.eng.PrimaryReadOnly()
	}
}

// roleCheck is the Sink of a Sentinel client's data connection in the simulator, as the client
// package's: the connection is reported Ready once it answered ROLE as a primary; a replica's
// answer, or no answer, closes it and reports a transient failure; a malformed or refused ROLE
// a permanent one. Unlike the client's, it has no budget of its own: a ROLE reply that never
// comes holds the attempt until the connection is lost or the attempt cancelled.
type roleCheck struct {
	w     *world
	ctx   context.Context
	inner engine.Sink
	// state: 0 checking, 1 reported ready, 2 reported failed.
	state int
}

func (s *roleCheck) Dialed(id fsm.ConnID) { s.inner.Dialed(id) }

func (s *roleCheck) Failed(id fsm.ConnID, err error, class fsm.FailureClass) {
	if s.state == 0 {
		s.state = 2
		s.inner.Failed(id, err, class)
	}
}

func (s *roleCheck) Lost(id fsm.ConnID, err error) {
	if s.state == 1 {
		s.inner.Lost(id, err)
	}
}

func (s *roleCheck) Ready(id fsm.ConnID, conn engine.Conn) {
	fail := func(err error, class fsm.FailureClass) {
		if s.state != 0 {
			return
		}
		s.state = 2
		s.w.tr.End(s.w.tr.Begin("sentinel role-rejected").Uint("conn", uint64(id)).Quoted("err", err.Error()))
		// Closed after the reply's delivery, as the client closes it off the reader.
		s.w.k.after(0, funcAction(func() bool { conn.Close(); return true }), 0)
		s.inner.Failed(id, err, class)
	}
	cmd := &engine.Command{Name: "ROLE", Frame: roleFrame}
	cmd.Done = func(cmd *engine.Command) {
		if cmd.Err != nil {
			fail(cmd.Err, fsm.Transient)
			return
		}
		r, err := topo.ParseRole(cmd.Reply)
		switch {
		case err != nil:
			fail(err, fsm.Permanent)
		case r.Role != fsm.RolePrimary:
			fail(fsm.ErrNotPrimary, fsm.Transient)
		case s.state == 0:
			s.state = 1
			s.inner.Ready(id, conn)
		}
	}
	if s.ctx.Err() != nil {
		fail(s.ctx.Err(), fsm.Transient)
		return
	}
	cmd.Enqueued()
	conn.Send(cmd)
}

// roleFrame is the encoded ROLE command.
var roleFrame = resp.AppendCommand(nil, "ROLE")

// sentinelWarn returns the engine's SentinelWarn of a Sentinel run (nil otherwise): each warning
// goes to the trace.
func (w *world) sentinelWarn() func(fsm.Warning, engine.Endpoint) {
	if w.sentinel == nil {
		return nil
	}
	return func(warn fsm.Warning, about engine.Endpoint) {
		w.tr.End(w.tr.Begin("sentinel warning").Word(warn.String()).Str("endpoint", about.String()))
	}
}

// attachSentinel makes the monitor connections' receiver report to the engine.
func (w *world) attachSentinel() {
	if w.sentinel != nil {
		w.sentinel.recv.Attach(w.eng)
	}
}

// sentinelSplit makes old, the primary a failover leaves behind, diverge for d: it acknowledges
// writes on its own copy of the data, which its rejoining discards. The rejoin traces how many
// commands it applied meanwhile (check.SplitLosses names them).
func (fs *faultState) sentinelSplit(old *node.Node, d time.Duration) {
	w := fs.w
	g := w.sentinel.group
	if old == nil || g.Primary() != old {
		return
	}
	seq := g.Diverge(old)
	watch := w.watchApplies(old.ID(), w.k.now) // the applies may be handed over in segments meanwhile
	w.tr.End(w.tr.Begin("sentinel diverged").Uint("fault", uint64(fs.idx)).Str("node", old.ID()))
	w.k.after(d, funcAction(func() bool {
		n := w.appliesSince(watch)
		if !g.Rejoin(old, seq) {
			return false // promoted meanwhile: it rejoined then
		}
		w.tr.End(w.tr.Begin("sentinel rejoined").Uint("fault", uint64(fs.idx)).Str("node", old.ID()).Int("discarded", n))
		return true
	}), 0)
}
