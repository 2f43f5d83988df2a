package sim

import (
	"errors"
	"reflect"
	"strconv"
	"time"

	"github.com/respire-go/respire/engine"
	"github.com/respire-go/respire/engine/config"
	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/sim/record"
	"github.com/respire-go/respire/sim/scenario"
)

// Host is a simulated world without the built-in workload: the kernel, the simulated network
// and nodes and the fault timeline of a scenario, for an engine built by someone else. Package
// simtest binds a real client (package client) to it, so that an application's own code
// runs against simulated Redis under the scenario's faults, in virtual time.
//
// A Host is driven from one goroutine at a time: its owner calls Step to run the next event of
// the heap, and Settle after anything that may have sent commands or posted engine events. Like
// Run, it is deterministic: the same scenario, seed and calls give the same trace.
type Host struct {
	w *world
	// cmdSeq numbers the commands of the bound client (CommandID).
	cmdSeq uint64
	closed bool
}

// ErrHostWorkload reports a scenario with a workload given to a Host, which runs the
// application's code instead.
var ErrHostWorkload = errors.New("sim: a host runs the application's code: the scenario must have no workload")

// ErrHostActions reports a scenario with client actions given to a Host: the application closes
// and creates its own clients.
var ErrHostActions = errors.New("sim: a host runs the application's code: the scenario must have no client actions")

// NewHost builds the world of sc for seed (sc is resolved for seed first). The engine is bound
// later (Bind, then Attach); the fault timeline starts when it is attached.
func NewHost(sc *scenario.Scenario, seed uint64, opts RunOptions) (*Host, error) {
	rs, err := sc.Resolve(seed)
	if err != nil {
		return nil, err
	}
	wl := &rs.Workload
	if wl.Callers > 0 || wl.Dedicated != nil || wl.PubSub != nil || wl.Batches != nil {
		return nil, ErrHostWorkload
	}
	if len(rs.Actions) > 0 {
		return nil, ErrHostActions
	}
	if opts.MaxEvents == 0 {
		opts.MaxEvents = DefaultMaxEvents
	}
	w := newWorld(rs, seed, opts)
	w.tr.End(w.tr.Begin("run start").Str("scenario", strconv.Quote(rs.Name)).Uint("seed", seed))
	return &Host{w: w}, nil
}

// Scenario returns the resolved scenario the host runs.
func (h *Host) Scenario() *scenario.Scenario { return h.w.sc }

// Endpoints returns where a client connects: the scenario's first node, a Cluster's seeds, or
// the Sentinels a Sentinel client is configured with.
func (h *Host) Endpoints() []engine.Endpoint {
	cfg := h.w.sc.EngineConfig()
	if cc := cfg.Cluster; cc != nil {
		return cc.Seeds
	}
	if sc := cfg.Sentinel; sc != nil {
		return sc.Sentinels
	}
	return []engine.Endpoint{{Host: h.w.sc.Topology.Nodes[0].ID, Port: scenario.NodePort}}
}

// Bind checks a client's resolved configuration against the scenario's client section, which
// the simulated connections follow (their handshake, connect and handshake timeouts, liveness
// bounds), and returns what the client's engine runs on: the virtual-time runtime, the
// simulated transport and the step recorder.
func (h *Host) Bind(r *config.Resolved) (engine.Runtime, engine.Transport, func(*fsm.Event, []fsm.Effect), error) {
	if !reflect.DeepEqual(*r, h.w.cfg) {
		return nil, nil, nil, errors.New("sim: the client's options differ from the scenario's client section; " +
			"set connection options in the scenario")
	}
	return h.w.rt, h.w.tp, h.w.onStep, nil
}

// BindPubSub hands the host the client's pub/sub receiver (its router): what the client's
// pub/sub connections read (acknowledgements, refusals, messages) goes there, as netio's
// transport reports it.
func (h *Host) BindPubSub(r engine.PubSubReceiver) { h.w.tp.pubsub = r }

// BindSentinel hands the host a Sentinel client's receiver of the Sentinels' messages, in
// place of the world's own: the monitor connections report there.
func (h *Host) BindSentinel(r *engine.SentinelReceiver) {
	if h.w.sentinel != nil {
		h.w.sentinel.recv = r
	}
}

// Attach hands the host the engine, built for stepper mode with what Bind returned, and starts
// the fault timeline.
func (h *Host) Attach(eng *engine.Engine) {
	h.w.eng = eng
	h.w.buildFaults()
	h.w.buildMaint()
	h.w.settle()
}

// CommandID returns a fresh command id: the simulated nodes record the commands that carry one
// in the apply log (Result.Applies), and lose-reply faults act on them only.
func (h *Host) CommandID() uint64 {
	h.cmdSeq++
	return h.cmdSeq
}

// Now returns the virtual time.
func (h *Host) Now() time.Duration { return h.w.k.now }

// Next returns the time of the next event, and false when the heap is empty.
func (h *Host) Next() (time.Duration, bool) { return h.w.k.next() }

// Step runs the next event of the heap and settles the engine. It reports false when the heap
// is empty, and ErrTooManyEvents once the run exceeded its event budget.
func (h *Host) Step() (bool, error) {
	w := h.w
	if _, ok := w.k.next(); !ok {
		return false, nil
	}
	ev := w.k.pop()
	if ev.act.Run(ev.arg) {
		w.events++
	}
	h.Settle()
	if w.events >= w.opts.MaxEvents {
		return true, ErrTooManyEvents
	}
	return true, nil
}

// Settle ends an action of the host's owner: the commands it sent are written and the engine
// steps the events it posted. Before an engine is attached there is nothing to do.
func (h *Host) Settle() {
	if h.w.eng != nil {
		h.w.settle()
	}
}

// hostAction runs a function at a virtual time.
type hostAction struct{ fn func() }

func (a hostAction) Run(uint64) bool { a.fn(); return true }

// After runs fn after d of virtual time, as an event of the heap (after the events already
// scheduled for the same instant).
func (h *Host) After(d time.Duration, fn func()) { h.w.k.after(d, hostAction{fn}, 0) }

// Note writes a line to the trace: what, then each word.
func (h *Host) Note(what string, words ...string) {
	b := h.w.tr.Begin(what)
	for _, word := range words {
		b = b.Word(word)
	}
	h.w.tr.End(b)
}

// Closed steps the engine's disposal after the client closed it.
func (h *Host) Closed() {
	h.closed = true
	h.w.settleNow()
}

// Finish ends the run at the current virtual time: it disposes the engine if the client did
// not, and returns what happened. The host must not be used afterwards.
func (h *Host) Finish() *record.Result {
	w := h.w
	end := w.k.now
	w.tr.End(w.tr.Begin("run end"))
	if w.eng != nil && !h.closed {
		w.eng.Close()
		w.settleNow()
	}
	res := w.res
	res.End = end
	res.Faults, res.HealedAt = w.faultWindows(end)
	res.Events = w.events
	res.Trace = w.tr.Lines()
	res.TraceHash = w.tr.Sum()
	return res
}
