package engine

import (
	"time"

	"github.com/cockroachdb/errors"

	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/netio/resp"
	"github.com/respire-go/respire/netio/topo"
)

// Redirects and rejections of a Cluster client.
//
// A reply that proves the command was not executed (topo.ClassifyRejection) lets the command be
// sent again, within one budget of fsm.ClusterRedirects for all of them:
//   - MOVED: the slot moved for good. The machine learns it (a Moved event: the map moves the
//     slot at once and a debounced refresh follows), and the command goes to the target, on a
//     ready connection at once or through the loop, which tracks a target no topology names
//     yet. A MOVED without a usable host waits for a refresh and goes to the slot's owner, and
//     so does a MOVED naming the very endpoint the command was sent to: the connection reaches
//     a node that no longer owns the slot while the name now stands for another (a shard's DNS
//     name that followed a failover), so only a fresh topology, which tells the two nodes apart
//     by their IDs, can route it.
//   - ASK: the slot is migrating. The command goes to the target once, preceded by ASKING in
//     one group of frames, and the map is left as it is.
//   - READONLY: the node is a replica now. The command waits for a refresh and goes to the
//     slot's new owner; when the refresh fails or finds the same node, the READONLY reply is
//     the answer.
//   - TRYAGAIN (a multi-key command met a migrating slot) and CLUSTERDOWN (the Cluster cannot
//     serve the slot now): the command is sent again after a delay, 50 ms doubling with each
//     rejection; CLUSTERDOWN also asks for a debounced refresh.
//
// When the budget is spent, or the new node cannot be reached, the command completes with the
// first rejection it got. Any other reply, and any failure of the connection, completes the
// command as it is: an unknown outcome is never retried. The decision runs on the goroutine that
// read the reply, before the command's Done, and posts to the loop only what needs it.

// redirectRetryFirst is the delay before the first retry after TRYAGAIN or CLUSTERDOWN.
const redirectRetryFirst = 50 * time.Millisecond

// redirect decides what follows a Cluster command's completion, and reports true when it took
// the command over (it completes later); false lets the completion reach the caller.
func (e *Engine) redirect(cmd *Command, err error) bool {
	cs := &cmd.cl
	if err != nil || cs.final || !cmd.Reply.IsError() {
		return false
	}
	rej := topo.ClassifyRejection(cmd.Reply)
	switch rej {
	case topo.RejectionMoved, topo.RejectionAsk, topo.RejectionReadOnly, topo.RejectionTryAgain, topo.RejectionClusterDown:
	default:
		return false
	}
	if cs.redirects >= fsm.ClusterRedirects || e.cl.snap.Load().closed {
		if cs.orig != nil {
			cmd.Reply, cs.orig = *cs.orig, nil
		}
		return false
	}
	var target fsm.Endpoint
	targeted := false
	if rej.IsRedirect() {
		r, perr := topo.ParseRedirect(cmd.Reply)
		if perr != nil {
			return false
		}
		target, targeted = r.Resolve(cs.sender)
		if rej == topo.RejectionMoved {
			ev := fsm.Event{Kind: fsm.Moved, Machine: fsm.MachineCluster, Slot: int(r.Slot)}
			if targeted {
				ev.Endpoint = target
			}
			e.post(item{ev: ev})
			if cs.read {
				return false // a replica read: its caller selects again (SubmitRead)
			}
		}
	}
	cs.redirects++
	if cs.orig == nil {
		orig := cmd.Reply.Clone()
		cs.orig = &orig
	}
	cmd.stage.Store(uint32(StageBuffered))
	if rej == topo.RejectionMoved && targeted && target == cs.sender {
		targeted = false // the connection is stale: see above
	}
	switch {
	case rej == topo.RejectionAsk && !targeted:
		e.answer(cmd)
	case rej.IsRedirect() && targeted:
		cs.target, cs.ask, cs.node = target, rej == topo.RejectionAsk, 0
		e.route(cmd)
	case rej == topo.RejectionMoved || rej == topo.RejectionReadOnly:
		cs.target, cs.ask, cs.node = fsm.Endpoint{}, false, 0
		e.demandCluster(cmd, clusterWait{on: true, topology: true, readonly: rej == topo.RejectionReadOnly, redirected: true}, false)
	default: // TRYAGAIN, CLUSTERDOWN
		if rej == topo.RejectionClusterDown && cs.slot >= 0 {
			e.post(item{ev: fsm.Event{Kind: fsm.Moved, Machine: fsm.MachineCluster, Slot: int(cs.slot)}})
		}
		cs.target, cs.ask = fsm.Endpoint{}, false
		e.retryLater(cmd, redirectRetryFirst<<(cs.redirects-1))
	}
	return true
}

// retryLater routes a held command again after delay. Meanwhile its caller may abandon it.
func (e *Engine) retryLater(cmd *Command, delay time.Duration) {
	id := fsm.TimerID(fsm.IDBase(retryTimers) + e.cl.timers.Add(1))
	cmd.waiter = 0
	cmd.stage.Store(uint32(StageQueued))
	e.deps.Runtime.ArmTimer(id, delay, func() {
		if cmd.Enqueued() {
			e.route(cmd)
		}
	})
}

// retryTimers is the identifier space of redirect retry timers: no machine's, since they are
// not machine events and are never journaled.
const retryTimers fsm.Machine = 0xfe

// clusterSlotsFrame is the encoded CLUSTER SLOTS command.
var clusterSlotsFrame = []byte("*2\r\n$7\r\nCLUSTER\r\n$5\r\nSLOTS\r\n")

// errNoQueryConn: the connection a topology query was to use is gone.
var errNoQueryConn = errors.New("respire: the connection for the Cluster topology query is gone")

// sendQuery executes a Query effect: CLUSTER SLOTS on the granted connection; the parsed reply
// (or the failure) comes back to the machine as an event.
func (e *Engine) sendQuery(f *fsm.Effect) {
	id, asked := f.Waiter, f.Endpoint
	c := e.conns[f.Conn]
	if c == nil {
		e.post(item{ev: fsm.Event{Kind: fsm.QueryFailed, Machine: fsm.MachineCluster, Waiter: id, Err: errNoQueryConn}})
		return
	}
	q := &Command{Name: "CLUSTER SLOTS", Frame: clusterSlotsFrame}
	q.Done = func(q *Command) {
		ev := fsm.Event{Kind: fsm.QueryFailed, Machine: fsm.MachineCluster, Waiter: id, Err: q.Err}
		if q.Err == nil {
			if reply, err := topo.ParseClusterSlots(q.Reply, asked); err != nil {
				ev.Err = err
			} else {
				ev.Kind, ev.Err, ev.Reply = fsm.Replied, nil, &reply
			}
		}
		q.Reply = resp.Value{}
		e.post(item{ev: ev})
	}
	q.Enqueued()
	c.Send(q)
}

// NoteMoved tells a Cluster engine about a MOVED error seen outside its own commands (on a
// dedicated connection): msg is the error's text, "MOVED <slot> <host>:<port>". The slot moves
// at once when the target is a known node, and a debounced refresh follows. Other text, and a
// standalone engine, are ignored.
func (e *Engine) NoteMoved(msg string) {
	if e.cl == nil {
		return
	}
	r, err := topo.ParseRedirect(resp.ErrorValue(msg))
	if err != nil || r.Kind != topo.RejectionMoved {
		return
	}
	ev := fsm.Event{Kind: fsm.Moved, Machine: fsm.MachineCluster, Slot: int(r.Slot)}
	if ep, ok := r.Resolve(fsm.Endpoint{}); ok {
		ev.Endpoint = ep
	}
	e.post(item{ev: ev})
}
