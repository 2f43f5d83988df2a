package engine

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/errors"

	"github.com/respire-go/respire/fsm"
)

// Replica reads of a Cluster client.
//
// Each shard of the slot map (a primary with at least one replica) gets a read router, the pure
// fsm.Router that standalone and Sentinel clients use too: candidate 0 is the shard's primary,
// then its replicas. A read of slot s asks the router of the shard serving s where to go, and
// runs there: on the primary through the ordinary slot routing, on a replica pinned to that
// node (SubmitRead). The routers' probes (PING) and validations (ROLE, CONFIG GET
// replica-serve-stale-data, INFO SERVER) are node-pinned commands of the engine, and their
// timers the engine runtime's. Connections to a node the map names as a replica send READONLY
// in their handshake (replicaDial).
//
// The routers follow the map: the first read after a new map reconciles them. A shard whose
// candidates (node IDs and endpoints) did not change keeps its router and its measurements;
// any other change (a failover, a replica added, lost or readdressed) gives the shard a new
// router, which validates every candidate before a replica takes a read. Replicas that the
// reply reports loading, suspect or failed are left out (CLUSTER SLOTS already omits them).

// ClusterReadConfig configures a Cluster client's replica reads (NewClusterReads).
type ClusterReadConfig struct {
	// Router is the read routers' configuration without Endpoints: Default, Banded, Tolerance,
	// RefreshInterval, Zone, and the hedging fields (HedgeDelay, HedgeLoadPercent; zero
	// HedgeDelay: no hedging). Each shard's router hedges within its shard, with its own budget.
	Router fsm.RouterConfig
	// Meter records the hedge metrics (nil: none).
	Meter *HedgeMeter
	// SettleWait bounds how long a read waits for the first validations of a shard's new router
	// when no candidate its policy allows is usable yet (zero: DefaultClusterReadSettleWait).
	SettleWait time.Duration
}

// DefaultClusterReadSettleWait is ClusterReadConfig.SettleWait's default.
const DefaultClusterReadSettleWait = 5 * time.Second

// ErrNoClusterReplicas: the slot's shard has no replica the client knows of (or no map is known
// yet). ClusterReads.Select returns it; nothing was sent.
var ErrNoClusterReplicas = errors.New("respire: the Cluster slot has no known replica")

// ClusterReads routes a Cluster engine's reads among each shard's primary and replicas. It is
// safe for concurrent use. Only reads that follow a policy other than Primary reach it.
type ClusterReads struct {
	e   *Engine
	cfg ClusterReadConfig

	mu     sync.Mutex
	cmap   *fsm.ClusterMap
	shards map[fsm.NodeID]*shardReads
	nextID uint64
	closed bool
	// asked is when a read that found no replica last asked for a refresh (asking: ever).
	asked  time.Duration
	asking bool
	// hedge adds up the hedging figures of every shard's router, retired ones included.
	hedge HedgeCounts
	// lastShard is the shard whose router made the last band selection (LastBand).
	lastShard *shardReads
}

// shardReads is one shard's router: its candidates, primary first, as map node numbers.
type shardReads struct {
	cr    *ClusterReads
	nodes []uint32
	ids   []fsm.NodeID
	eps   []fsm.Endpoint
	m     *fsm.Router
	out   fsm.RouterOutbox
	// timer is the runtime timer of the router's last WakeAt (0: none).
	timer   fsm.TimerID
	waiting map[fsm.ReadID]chan clusterReadAnswer
	// first records the candidates whose first validation ended; settled closes when all did.
	first   []bool
	left    int
	settled chan struct{}
	gone    bool
	// self is the read whose ReadStarted is stepping, answer its decision when decided.
	self    fsm.ReadID
	answer  clusterReadAnswer
	decided bool
	// watches are the reads watched for a hedge, by id.
	watches map[fsm.ReadID]*ReadWatch
	// slot is the slot of the last routed read (noted: one was), and slotAt when it changed
	// (noteBandLocked).
	slot   int
	slotAt time.Duration
	noted  bool
}

type clusterReadAnswer struct {
	target  int
	reason  fsm.FailReason
	watched bool
}

// ReadPick is where a Cluster read goes: a candidate of its shard's router.
type ReadPick struct {
	// Node is the map number of the chosen node, and Endpoint its address.
	Node     uint32
	Endpoint Endpoint
	// Replica: the node is one of the shard's replicas (send with SubmitRead); otherwise the
	// shard's primary (send with Submit, by slot).
	Replica bool
	shard   *shardReads
	target  int
}

// NewClusterReads returns the replica reads of Cluster engine e, or an error for a bad
// configuration (a standalone engine, hedging, or a router field out of bounds).
func NewClusterReads(e *Engine, cfg ClusterReadConfig) (*ClusterReads, error) {
	if e.cl == nil {
		return nil, ErrNotCluster
	}
	check := cfg.Router
	check.Endpoints = []fsm.Endpoint{{}, {}}
	if err := check.Validate(); err != nil {
		return nil, err
	}
	if cfg.SettleWait <= 0 {
		cfg.SettleWait = DefaultClusterReadSettleWait
	}
	return &ClusterReads{e: e, cfg: cfg, shards: make(map[fsm.NodeID]*shardReads)}, nil
}

// Close stops every router: their timers are cancelled, waiting reads fail, and the reads
// watched for a hedge settle with no attempt (HedgedRead.Result returns nil).
func (cr *ClusterReads) Close() {
	cr.mu.Lock()
	defer cr.mu.Unlock()
	cr.closed = true
	for id, sh := range cr.shards {
		sh.retire()
		for rid, w := range sh.watches {
			w.signal(HedgeSignal{Settle: true, Target: -1}) // the reads closed
			delete(sh.watches, rid)
		}
		delete(cr.shards, id)
	}
}

// Select returns where a read of slot under policy goes. ErrNoClusterReplicas says the slot's
// shard has no known replica (the caller routes the read as it would a Primary read, or
// refuses it); a *ReadRefusal says no candidate the policy allows can take it. Nothing was
// sent in either case. ctx ending stops only this caller's wait.
func (cr *ClusterReads) Select(ctx context.Context, slot int, policy fsm.ReadFrom) (ReadPick, error) {
	p, _, err := cr.SelectWatched(ctx, slot, policy, false)
	return p, err
}

// SelectWatched is Select for a read that may be hedged (hedgeable): a non-nil *ReadWatch says
// the shard's router watches it for a hedge; run it with NewClusterHedgedRead.
func (cr *ClusterReads) SelectWatched(ctx context.Context, slot int, policy fsm.ReadFrom, hedgeable bool) (ReadPick, *ReadWatch, error) {
	sh, err := cr.shardOf(slot)
	if err != nil {
		return ReadPick{}, nil, err
	}
	a, w, err := sh.selectOnce(ctx, policy, hedgeable, slot)
	if err == nil && a.target < 0 && a.reason == fsm.NoCandidate {
		// A new router validates its candidates first: wait for those answers, within the
		// bound, and select once more.
		if !sh.awaitSettled(ctx) {
			if ctx.Err() != nil {
				return ReadPick{}, nil, ctx.Err()
			}
		}
		a, w, err = sh.selectOnce(ctx, policy, hedgeable, slot)
	}
	if err != nil {
		return ReadPick{}, nil, err
	}
	if a.target < 0 {
		return ReadPick{}, nil, &ReadRefusal{Reason: a.reason}
	}
	return sh.pick(a.target), w, nil
}

// pick names candidate i of the shard.
func (sh *shardReads) pick(i int) ReadPick {
	return ReadPick{Node: sh.nodes[i], Endpoint: endpointOf(sh.eps[i]), Replica: i != 0, shard: sh, target: i}
}

// Failed reports that the connection of a pick could not be acquired or failed, or that the
// node refused the read in a way that proves it did not run (MOVED): the candidate cools down,
// and a replica must answer ROLE again before its next read.
func (cr *ClusterReads) Failed(p ReadPick) {
	if p.shard != nil {
		p.shard.step(fsm.RouterEvent{Kind: fsm.TargetFailed, Target: p.target})
	}
}

// Shards returns the number of shard routers, for tests and diagnostics.
func (cr *ClusterReads) Shards() int {
	cr.mu.Lock()
	defer cr.mu.Unlock()
	return len(cr.shards)
}

// shardOf returns the router of the shard serving slot, reconciling the routers with the
// engine's current map first.
func (cr *ClusterReads) shardOf(slot int) (*shardReads, error) {
	m := cr.e.cl.snap.Load().cmap
	if m == nil {
		return nil, ErrNoClusterReplicas // no topology yet: the read's ordinary path discovers it
	}
	var starts []*shardReads
	cr.mu.Lock()
	if cr.closed {
		cr.mu.Unlock()
		return nil, &ReadRefusal{Reason: fsm.NoCandidate}
	}
	if m != cr.cmap {
		starts = cr.reconcile(m)
	}
	var sh *shardReads
	if i := m.Owner(slot); i >= 0 {
		if n := &m.Nodes[i]; n.Member && n.Role == fsm.RolePrimary {
			sh = cr.shards[n.ID]
		}
	}
	ask := false
	if sh == nil {
		now := cr.e.deps.Runtime.Now()
		if ask = !cr.asking || now-cr.asked >= fsm.ClusterMovedDebounce; ask {
			cr.asking, cr.asked = true, now
		}
	}
	cr.mu.Unlock()
	for _, s := range starts {
		s.step(fsm.RouterEvent{Kind: fsm.Woke})
	}
	if sh == nil {
		if ask && slot >= 0 && slot < fsm.SlotCount {
			// The map may predate the replicas (Redis leaves a replica out of CLUSTER SLOTS
			// until its primary's gossip reports a replication offset): a refresh, debounced as
			// a MOVED's, and asked at most once per debounce window.
			cr.e.post(item{ev: fsm.Event{Kind: fsm.Moved, Machine: fsm.MachineCluster, Slot: slot}})
		}
		return nil, ErrNoClusterReplicas
	}
	return sh, nil
}

// reconcile brings the shard routers in line with map m (under cr.mu) and returns the new ones,
// to be started once the lock is released.
func (cr *ClusterReads) reconcile(m *fsm.ClusterMap) []*shardReads {
	cr.cmap = m
	byID := make(map[fsm.NodeID]int, len(m.Nodes))
	for i := range m.Nodes {
		if n := &m.Nodes[i]; n.Member && n.ID != "" {
			byID[n.ID] = i
		}
	}
	var starts []*shardReads
	kept := make(map[fsm.NodeID]bool)
	for _, pi := range m.Primaries() {
		p := &m.Nodes[pi]
		nodes, ids, eps := []uint32{p.Num}, []fsm.NodeID{p.ID}, []fsm.Endpoint{p.Addr}
		for _, r := range m.Topology.Replicas(p.ID) {
			i, ok := byID[r.ID]
			if !ok || !servesReads(r.Health) || len(nodes) > fsm.MaxReplicaCandidates {
				continue
			}
			nodes, ids, eps = append(nodes, m.Nodes[i].Num), append(ids, r.ID), append(eps, m.Nodes[i].Addr)
		}
		if len(nodes) < 2 {
			continue
		}
		if old := cr.shards[p.ID]; old != nil && slices.Equal(old.nodes, nodes) && slices.Equal(old.ids, ids) &&
			slices.Equal(old.eps, eps) {
			kept[p.ID] = true
			continue
		}
		if old := cr.shards[p.ID]; old != nil {
			old.retire()
		}
		cfg := cr.cfg.Router
		cfg.Endpoints = eps
		sh := &shardReads{cr: cr, nodes: nodes, ids: ids, eps: eps, m: fsm.NewRouter(cfg),
			waiting: make(map[fsm.ReadID]chan clusterReadAnswer), first: make([]bool, len(nodes)), left: len(nodes),
			settled: make(chan struct{}), watches: make(map[fsm.ReadID]*ReadWatch)}
		cr.shards[p.ID] = sh
		kept[p.ID] = true
		starts = append(starts, sh)
	}
	for id, sh := range cr.shards {
		if !kept[id] {
			sh.retire()
			delete(cr.shards, id)
		}
	}
	return starts
}

// servesReads reports whether a replica of the given health may take reads: not loading, not
// suspected and not failed (HealthUnknown, CLUSTER SLOTS's, counts as serving: that reply omits
// the others).
func servesReads(h fsm.Health) bool { return h == fsm.HealthUnknown || h == fsm.HealthOnline }

// retire stops a router that left (under cr.mu): its timer is cancelled, its waiting reads
// fail, and reads waiting for its first validations stop waiting. The reads it watches for a
// hedge still settle: their attempts' ends are stepped (no hedge starts any more, since the
// router's timer no longer runs).
func (sh *shardReads) retire() {
	sh.gone = true
	if sh.left > 0 {
		sh.left = 0
		close(sh.settled)
	}
	if sh.timer != 0 {
		sh.cr.e.deps.Runtime.CancelTimer(sh.timer)
		sh.timer = 0
	}
	for id, ch := range sh.waiting {
		ch <- clusterReadAnswer{target: -1, reason: fsm.NoCandidate}
		delete(sh.waiting, id)
	}
}

// selectOnce steps one ReadStarted and waits for its decision when the router parks it behind
// pending probes. A routed read of slot records the shard's band (ClusterReads.LastBand).
func (sh *shardReads) selectOnce(ctx context.Context, policy fsm.ReadFrom, hedgeable bool, slot int) (clusterReadAnswer, *ReadWatch, error) {
	cr := sh.cr
	cr.mu.Lock()
	if sh.gone {
		cr.mu.Unlock()
		return clusterReadAnswer{target: -1, reason: fsm.NoCandidate}, nil, nil
	}
	cr.nextID++
	id := fsm.ReadID(cr.nextID)
	sh.self, sh.decided = id, false
	rest := sh.stepLocked(fsm.RouterEvent{Kind: fsm.ReadStarted, Read: id, Policy: policy, Hedgeable: hedgeable})
	a, decided := sh.answer, sh.decided
	sh.self = 0
	var ch chan clusterReadAnswer
	var w *ReadWatch
	if decided {
		w = sh.routedLocked(id, a, slot)
	} else {
		ch = make(chan clusterReadAnswer, 1)
		sh.waiting[id] = ch
	}
	cr.mu.Unlock()
	sh.execute(rest)
	if decided {
		return a, w, nil
	}
	select {
	case a = <-ch:
		cr.mu.Lock()
		w = sh.routedLocked(id, a, slot)
		cr.mu.Unlock()
		return a, w, nil
	case <-ctx.Done():
		cr.mu.Lock()
		delete(sh.waiting, id)
		delete(sh.watches, id) // routed just before the withdrawal: nothing was sent
		rest := sh.stepLocked(fsm.RouterEvent{Kind: fsm.ReadWithdrawn, Read: id})
		cr.mu.Unlock()
		sh.execute(rest)
		return clusterReadAnswer{}, nil, ctx.Err()
	}
}

// routedLocked handles read id's answer a (under cr.mu): a routed read records the band of
// slot's shard, and a watched one gets its watch.
func (sh *shardReads) routedLocked(id fsm.ReadID, a clusterReadAnswer, slot int) *ReadWatch {
	if a.target < 0 {
		return nil
	}
	sh.noteBandLocked(slot)
	if !a.watched {
		return nil
	}
	// nil when the reads closed meanwhile (Close settled and dropped the watch): the read then
	// runs unwatched, and its end reaches no router.
	return sh.watches[id]
}

// awaitSettled waits until every candidate's first validation ended, ctx ends or SettleWait
// passes, and reports whether the validations ended.
func (sh *shardReads) awaitSettled(ctx context.Context) bool {
	select {
	case <-sh.settled:
		return true
	default:
	}
	t := time.NewTimer(sh.cr.cfg.SettleWait)
	defer t.Stop()
	select {
	case <-sh.settled:
		return true
	case <-ctx.Done():
	case <-t.C:
	}
	return false
}

func (sh *shardReads) step(ev fsm.RouterEvent) {
	cr := sh.cr
	cr.mu.Lock()
	if sh.gone && ev.Kind != fsm.ReadEnded && ev.Kind != fsm.ReadWithdrawn {
		// A retired router only settles the reads it watches.
		cr.mu.Unlock()
		return
	}
	rest := sh.stepLocked(ev)
	cr.mu.Unlock()
	sh.execute(rest)
}

// stepLocked steps ev (under cr.mu), answers decided reads and returns the effects to execute
// after unlocking (probes, validations, the timer).
func (sh *shardReads) stepLocked(ev fsm.RouterEvent) []fsm.RouterEffect {
	ev.At = sh.cr.e.deps.Runtime.Now()
	if ev.Kind == fsm.RoleAnswered || ev.Kind == fsm.RoleFailed {
		if t := ev.Target; t >= 0 && t < len(sh.first) && !sh.first[t] && sh.left > 0 {
			sh.first[t] = true
			if sh.left--; sh.left == 0 {
				close(sh.settled)
			}
		}
	}
	sh.out.Reset()
	sh.m.Step(&ev, &sh.out)
	var rest []fsm.RouterEffect
	for _, f := range sh.out.Effects {
		switch f.Kind {
		case fsm.RouteRead, fsm.FailRead:
			a := clusterReadAnswer{target: f.Target, reason: f.Reason, watched: f.Watched}
			if f.Kind == fsm.FailRead {
				a.target = -1
			}
			if f.Watched {
				sh.watches[f.Read] = newReadWatch(f.Read)
				sh.cr.hedge.Eligible++
			}
			if f.Read == sh.self && sh.self != 0 {
				sh.answer, sh.decided = a, true
			} else if ch, ok := sh.waiting[f.Read]; ok {
				delete(sh.waiting, f.Read)
				ch <- a
			}
		case fsm.WakeAt:
			if sh.gone {
				continue // a retired router arms nothing
			}
			if sh.timer != 0 {
				sh.cr.e.deps.Runtime.CancelTimer(sh.timer)
			}
			sh.timer = fsm.TimerID(fsm.IDBase(retryTimers) + sh.cr.e.cl.timers.Add(1))
			f.At -= ev.At // the delay
			f.Read = fsm.ReadID(sh.timer)
			rest = append(rest, f)
		case fsm.SendProbe, fsm.ValidateTarget:
			if !sh.gone {
				rest = append(rest, f)
			}
		case fsm.SendHedge, fsm.SettleRead, fsm.CountMetric:
			hedgeEffect(&f, sh.watches, &sh.cr.hedge, sh.cr.cfg.Meter)
		}
	}
	return rest
}

// execute runs a step's probes, validations and timer, outside the lock.
func (sh *shardReads) execute(effects []fsm.RouterEffect) {
	for _, f := range effects {
		switch f.Kind {
		case fsm.SendProbe:
			sh.probe(f.Target)
		case fsm.ValidateTarget:
			sh.validate(f.Target)
		case fsm.WakeAt:
			id := fsm.TimerID(f.Read)
			sh.cr.e.deps.Runtime.ArmTimer(id, f.At, func() {
				sh.cr.mu.Lock()
				current := sh.timer == id
				if current {
					sh.timer = 0
				}
				sh.cr.mu.Unlock()
				if current {
					sh.step(fsm.RouterEvent{Kind: fsm.Woke})
				}
			})
		}
	}
}

// pinned returns an internal command for candidate i's node, completed by done.
func (sh *shardReads) pinned(name string, frame []byte, done func(*Command)) *Command {
	cmd := &Command{Name: name, Frame: frame, Done: done}
	cmd.Reset()
	return cmd
}

func (sh *shardReads) submit(i int, cmd *Command) {
	sh.cr.e.submitPinned(cmd, sh.nodes[i], Keyless, false)
}

// probe measures candidate i's round trip with PING.
func (sh *shardReads) probe(i int) {
	rt := sh.cr.e.deps.Runtime
	sent := rt.Now()
	cmd := sh.pinned("PING", pingFrame, func(c *Command) {
		ev := fsm.RouterEvent{Kind: fsm.ProbeFailed, Target: i}
		if c.Err == nil && !c.Reply.IsError() {
			ev.Kind, ev.RTT = fsm.ProbeAnswered, rt.Now()-sent
		}
		sh.step(ev)
	})
	sh.submit(i, cmd)
}

// validate asks candidate i its ROLE, whether it serves stale data and its availability zone,
// pipelined; the ROLE answer decides (the other two are advisory, as for standalone replicas).
func (sh *shardReads) validate(i int) {
	v := newValidation(i, sh.step)
	role := sh.pinned("ROLE", roleFrame, v.role)
	stale := sh.pinned("CONFIG", serveStaleFrame, v.stale)
	info := sh.pinned("INFO", infoServerFrame, v.info)
	for _, c := range []*Command{role, stale, info} {
		sh.submit(i, c)
	}
}

// SubmitRead sends a read-only command to the Cluster node numbered num (a replica a
// ClusterReads pick named), as SubmitNode does, except that a MOVED reply is not followed: it
// completes the command, the map learns it and a refresh follows, and the caller selects again
// (a MOVED from a replica says that it no longer serves the slot). Other redirects and
// rejections are handled as for any command. It fails with ErrNotCluster on a standalone engine.
func (e *Engine) SubmitRead(cmd *Command, num uint32) {
	if e.cl == nil {
		cmd.failQueued(ErrNotCluster)
		return
	}
	slot, err := FrameSlot(cmd.Frame)
	if err != nil {
		cmd.failQueued(err)
		return
	}
	e.submitPinned(cmd, num, slot, true)
}

// submitPinned routes cmd to node num, keeping slot for its rejections' handling; read: a
// MOVED reply completes it (SubmitRead). The submitting caller can withdraw the demand it may
// become.
func (e *Engine) submitPinned(cmd *Command, num uint32, slot int, read bool) {
	cs := &cmd.cl
	cs.routed, cs.slot, cs.eng, cs.node, cs.read = true, int32(slot), e, num, read
	if !cmd.Enqueued() {
		return
	}
	e.routeFrom(cmd, true)
}

// replicaDial reports whether a Dial effect opens a connection to a Cluster node that the map
// names as a replica: its handshake then sends READONLY.
func (e *Engine) replicaDial(f *fsm.Effect) bool {
	if e.cl == nil || e.cl.cmap == nil || f.Node == 0 {
		return false
	}
	if m := fsm.MachineOf(uint64(f.Conn)); m != fsm.MachineNodeMux && m != fsm.MachineNodePool {
		return false
	}
	i := e.cl.cmap.Index(f.Node)
	return i >= 0 && e.cl.cmap.Nodes[i].Member && e.cl.cmap.Nodes[i].Role == fsm.RoleReplica
}

// readOnlyFlag returns connection id's READONLY flag from the last snapshot's, or a new one, and records
// it in next (publish builds next from the live routes only).
func (cs *clusterState) readOnlyFlag(id fsm.ConnID, next map[fsm.ConnID]*atomic.Bool) *atomic.Bool {
	f := cs.readOnly[id]
	if f == nil {
		f = next[id]
	}
	if f == nil {
		f = new(atomic.Bool)
	}
	next[id] = f
	return f
}

// readOnlyFrame is the encoded READONLY command.
var readOnlyFrame = []byte("*1\r\n$8\r\nREADONLY\r\n")

// deliverRead gives a replica read to conn and reports whether conn took it. The first read
// on a connection is preceded by READONLY, in one group: a connection opened while its node
// was a primary (a demoted primary's) has no READONLY from its handshake, and its replica would
// answer every read with MOVED. Later reads go alone.
func (e *Engine) deliverRead(conn Conn, cmd *Command, sent *atomic.Bool) bool {
	if sent == nil || sent.Load() {
		return e.deliver(conn, cmd)
	}
	g, ok := conn.(GroupOfferer)
	if !ok {
		return e.deliver(conn, cmd)
	}
	ro := &Command{Name: "READONLY", Frame: readOnlyFrame, Done: func(*Command) {}}
	ro.Enqueued()
	if !g.OfferGroup([]*Command{ro, cmd}) {
		return false
	}
	sent.Store(true)
	return true
}
