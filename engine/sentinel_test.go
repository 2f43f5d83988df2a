package engine

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/netio/resp"
)

// sentinelWorld is a tiny Sentinel deployment for engine tests: Sentinels with a view of the
// primary and its epoch, and data nodes with a role. It serves the harness's opens: discovery
// queries and ROLE are answered at once, monitor subscriptions acknowledged at once, and
// application commands are held on their connection until the test answers them.
type sentinelWorld struct {
	h         *harness
	sentinels map[string]*sentinelView2
	roles     map[string]fsm.Role
	conns     map[fsm.ConnID]*worldConn
	// sentinelDials and dataDials count the opens by kind, dialsTo by address.
	sentinelDials, dataDials int
	dialsTo                  map[string]int
	// holdQueries: the Sentinels hold their discovery queries unanswered (like other commands).
	holdQueries bool
}

type sentinelView2 struct {
	up      bool
	primary string
	epoch   int
}

// worldConn is one fake connection of the world.
type worldConn struct {
	w        *sentinelWorld
	id       fsm.ConnID
	addr     string
	sentinel bool
	mu       sync.Mutex
	held     []*Command
	closed   bool
	drained  bool
	topics   int
}

func newSentinelWorld(t *testing.T, cfg Config) *sentinelWorld {
	w := &sentinelWorld{sentinels: map[string]*sentinelView2{}, roles: map[string]fsm.Role{}, conns: map[fsm.ConnID]*worldConn{},
		dialsTo: map[string]int{}}
	w.h = newHarness(t, cfg)
	return w
}

func sentinelCfg(slots int) Config {
	return Config{Slots: slots, Sentinel: &SentinelConfig{PrimaryName: "mymaster", Sentinels: []Endpoint{
		{Host: "10.0.1.1", Port: 26379}, {Host: "10.0.1.2", Port: 26379}, {Host: "10.0.1.3", Port: 26379}}}}
}

// serve answers every pending open and steps until nothing is pending.
func (w *sentinelWorld) serve() {
	for i := 0; i < 100; i++ {
		w.h.run()
		reqs := w.h.tr.take()
		if len(reqs) == 0 {
			return
		}
		for _, req := range reqs {
			addr := req.Endpoint.String()
			w.dialsTo[addr]++
			ok := false
			if req.Sentinel {
				w.sentinelDials++
				s := w.sentinels[addr]
				ok = s != nil && s.up
			} else {
				if req.Machine != fsm.MachineSentinel {
					w.dataDials++
				}
				_, ok = w.roles[addr]
			}
			if !ok {
				req.Sink.Failed(req.Conn, errors.New("connection refused"), fsm.Transient)
				continue
			}
			c := &worldConn{w: w, id: req.Conn, addr: addr, sentinel: req.Sentinel}
			w.conns[req.Conn] = c
			req.Sink.Dialed(req.Conn)
			req.Sink.Ready(req.Conn, c)
		}
	}
	w.h.t.Fatal("the world did not settle")
}

func (c *worldConn) Send(cmd *Command) {
	c.mu.Lock()
	if c.closed || c.drained {
		c.mu.Unlock()
		cmd.Complete(errors.New("closed"))
		return
	}
	cmd.Writing()
	cmd.Written()
	reply, ok := c.answer(cmd)
	if !ok {
		c.held = append(c.held, cmd)
		c.mu.Unlock()
		return
	}
	c.mu.Unlock()
	cmd.Reply = reply
	cmd.Complete(nil)
}

// answer serves a discovery query or ROLE.
func (c *worldConn) answer(cmd *Command) (resp.Value, bool) {
	frame := string(cmd.Frame)
	if c.sentinel && c.w.holdQueries && strings.Contains(frame, "SENTINEL") {
		return resp.Value{}, false
	}
	switch {
	case strings.Contains(frame, "ROLE"):
		if c.w.roles[c.addr] == fsm.RolePrimary {
			return resp.ArrayOf(resp.BulkString("master"), resp.Int(0), resp.ArrayOf()), true
		}
		return resp.ArrayOf(resp.BulkString("slave"), resp.BulkString("10.0.0.9"), resp.Int(6379),
			resp.BulkString("connected"), resp.Int(0)), true
	case strings.Contains(frame, "SENTINELS"):
		var peers []resp.Value
		for addr := range c.w.sentinels {
			if addr == c.addr {
				continue
			}
			h, p, _ := strings.Cut(addr, ":")
			peers = append(peers, resp.ArrayOf(resp.BulkString("ip"), resp.BulkString(h), resp.BulkString("port"),
				resp.BulkString(p), resp.BulkString("flags"), resp.BulkString("sentinel")))
		}
		return resp.ArrayOf(peers...), true
	case strings.Contains(frame, "MASTER"):
		s := c.w.sentinels[c.addr]
		h, p, _ := strings.Cut(s.primary, ":")
		return resp.ArrayOf(resp.BulkString("name"), resp.BulkString("mymaster"), resp.BulkString("ip"), resp.BulkString(h),
			resp.BulkString("port"), resp.BulkString(p), resp.BulkString("flags"), resp.BulkString("master"),
			resp.BulkString("config-epoch"), resp.BulkString(strconv.Itoa(s.epoch))), true
	}
	return resp.Value{}, false
}

func (c *worldConn) Drain() { c.mu.Lock(); c.drained = true; c.mu.Unlock() }
func (c *worldConn) Close() { c.mu.Lock(); c.closed = true; c.mu.Unlock() }

// Stopped implements Stopper: a drained connection stops once its held commands are answered.
func (c *worldConn) Stopped() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed || c.drained && len(c.held) == 0
}

// Subscribe implements SubscriberConn: every topic is acknowledged at once.
func (c *worldConn) Subscribe(topics []fsm.Topic, _ bool) {
	c.topics += len(topics)
	for _, tp := range topics {
		c.w.h.eng.Acked(c.id, tp)
	}
}

// reply answers the oldest held command of the connection.
func (c *worldConn) reply(v resp.Value) *Command {
	c.mu.Lock()
	cmd := c.held[0]
	c.held = c.held[1:]
	c.mu.Unlock()
	cmd.Reply = v
	cmd.Complete(nil)
	return cmd
}

// dataConns returns the world's open data connections to addr (command slots), by id.
func (w *sentinelWorld) dataConns(addr string) []*worldConn {
	var out []*worldConn
	for id, c := range w.conns {
		if c.addr == addr && fsm.MachineOf(uint64(id)) == fsm.MachineMux {
			out = append(out, c)
		}
	}
	return out
}

// failover moves the primary to addr under epoch in every running Sentinel's view, and each
// announces it on its monitor connections.
func (w *sentinelWorld) failover(from, to string, epoch int) {
	w.roles[from], w.roles[to] = fsm.RoleReplica, fsm.RolePrimary
	recv := &SentinelReceiver{}
	recv.Attach(w.h.eng)
	fh, fp, _ := strings.Cut(from, ":")
	th, tp, _ := strings.Cut(to, ":")
	for addr, s := range w.sentinels {
		if !s.up {
			continue
		}
		s.primary, s.epoch = to, epoch
		for id, c := range w.conns {
			if c.addr == addr && fsm.MachineOf(uint64(id)) == fsm.MachineSentinelMonitor && !c.closed {
				recv.Message(id, PubSubMessage{Channel: "+switch-master", Payload: "mymaster " + fh + " " + fp + " " + th + " " + tp})
			}
		}
	}
}

func newWorldWithPrimary(t *testing.T, slots int) *sentinelWorld {
	w := newSentinelWorld(t, sentinelCfg(slots))
	for _, s := range w.h.eng.cfg.Sentinel.Sentinels {
		w.sentinels[s.String()] = &sentinelView2{up: true, primary: "10.0.0.1:6379"}
	}
	w.roles["10.0.0.1:6379"] = fsm.RolePrimary
	w.roles["10.0.0.2:6379"] = fsm.RoleReplica
	return w
}

func incrCmd(done func(*Command)) *Command {
	return &Command{Name: "INCR", Frame: resp.AppendCommand(nil, "INCR", "k"), Done: done}
}

// TestSentinelFailoverDrainsTheOldPrimaryWithoutReplay: a command accepted by the old primary
// finishes there after a failover announced by +switch-master; nothing is resent, new commands
// go to the new primary, and the journal replays the whole run.
func TestSentinelFailoverDrainsTheOldPrimaryWithoutReplay(t *testing.T) {
	w := newWorldWithPrimary(t, 1)
	var done []*Command
	record := func(c *Command) { done = append(done, c) }
	first := incrCmd(record)
	w.h.eng.Submit(first)
	w.serve()
	if p, ok := w.h.eng.SentinelPrimary(); !ok || p.String() != "10.0.0.1:6379" {
		t.Fatalf("SentinelPrimary() = %v %v", p, ok)
	}
	olds := w.dataConns("10.0.0.1:6379")
	if len(olds) != 1 || len(olds[0].held) != 1 {
		t.Fatalf("the first command did not reach the primary: %d connections", len(olds))
	}
	monitors := 0
	for id, c := range w.conns {
		if fsm.MachineOf(uint64(id)) == fsm.MachineSentinelMonitor && c.topics == len(fsm.MonitorChannels) {
			monitors++
		}
	}
	if monitors != 3 {
		t.Fatalf("%d monitors subscribed, want 3", monitors)
	}

	w.failover("10.0.0.1:6379", "10.0.0.2:6379", 1)
	w.serve()
	if p, _ := w.h.eng.SentinelPrimary(); p.String() != "10.0.0.2:6379" {
		t.Fatalf("after +switch-master the primary is %v", p)
	}
	old := olds[0]
	if !old.drained || old.closed {
		t.Fatalf("the old primary's connection: drained %v closed %v, want drained only", old.drained, old.closed)
	}
	if len(done) != 0 {
		t.Fatalf("the accepted command completed early: %v", done[0].Err)
	}
	second := incrCmd(record)
	w.h.eng.Submit(second)
	w.serve()
	news := w.dataConns("10.0.0.2:6379")
	if len(news) != 1 || len(news[0].held) != 1 || news[0].held[0] != second {
		t.Fatalf("the new command did not go to the new primary")
	}
	// The old primary answers what it accepted: the command completes with its reply, once.
	old.reply(resp.Int(1))
	news[0].reply(resp.Int(7))
	if len(done) != 2 || done[0] != first || done[0].Err != nil || done[1] != second {
		t.Fatalf("completions: %d", len(done))
	}
	for _, c := range w.conns {
		if c != old && len(c.held) != 0 {
			t.Fatal("a command was resent")
		}
	}
	var failovers, retired float64
	for _, m := range w.h.metrics {
		switch m.Instrument {
		case fsm.InstrumentSentinelFailover:
			failovers += m.Value
		case fsm.InstrumentSentinelGenerationsRetired:
			retired += m.Value
		}
	}
	if failovers != 1 || retired != 1 {
		t.Fatalf("failover %v, generations retired %v, want 1 and 1 (still draining)", failovers, retired)
	}
	// The drain poll sees the old connection stopped: the gauge goes back to zero.
	w.h.rt.fireAll()
	w.serve()
	retired = 0
	for _, m := range w.h.metrics {
		if m.Instrument == fsm.InstrumentSentinelGenerationsRetired {
			retired += m.Value
		}
	}
	if retired != 0 {
		t.Fatalf("generations retired %v after the drain, want 0", retired)
	}
	w.h.eng.Close()
	w.h.run()
	checkReplay(t, w.h)
}

// TestSentinelLostConnectionRetiresBeforeTheReplacement: a lost data connection retires its
// generation before its machine dials the replacement, so the replacement resolves again
// instead of dialing the dead primary.
func TestSentinelLostConnectionRetiresBeforeTheReplacement(t *testing.T) {
	w := newWorldWithPrimary(t, 1)
	w.h.eng.Acquire(fsm.NeedAll, func(Grant) {})
	w.serve()
	conns := w.dataConns("10.0.0.1:6379")
	if len(conns) != 1 {
		t.Fatalf("%d data connections", len(conns))
	}
	sentinelsBefore, dataBefore := w.sentinelDials, w.dataDials
	// The primary dies and the Sentinels already name the replica (no announcement reached us).
	delete(w.roles, "10.0.0.1:6379")
	w.roles["10.0.0.2:6379"] = fsm.RolePrimary
	for _, s := range w.sentinels {
		s.primary, s.epoch = "10.0.0.2:6379", 1
	}
	from := len(w.h.events)
	sinkOf(w.h).Lost(conns[0].id, errors.New("reset"))
	w.serve()
	var kinds []fsm.EventKind
	for _, ev := range w.h.events[from:] {
		if ev.Kind == fsm.PrimaryFailed || ev.Kind == fsm.ConnLost && ev.Conn == conns[0].id {
			kinds = append(kinds, ev.Kind)
		}
	}
	if len(kinds) != 2 || kinds[0] != fsm.PrimaryFailed || kinds[1] != fsm.ConnLost {
		t.Fatalf("journal order %v, want PrimaryFailed before ConnLost", kinds)
	}
	if w.sentinelDials == sentinelsBefore {
		t.Fatal("the replacement did not resolve again")
	}
	if len(w.dataConns("10.0.0.2:6379")) != 1 || w.dataDials != dataBefore+1 {
		t.Fatalf("the replacement did not go to the new primary only (%d data dials)", w.dataDials-dataBefore)
	}
	if p, _ := w.h.eng.SentinelPrimary(); p.String() != "10.0.0.2:6379" {
		t.Fatalf("primary %v", p)
	}
	// READONLY from the new primary retires it too, and the next resolution validates again.
	before := w.sentinelDials
	w.h.eng.PrimaryReadOnly()
	w.serve()
	if w.sentinelDials == before {
		t.Fatal("READONLY did not start a resolution")
	}
	w.h.eng.Close()
	w.h.run()
	checkReplay(t, w.h)
}

// TestSentinelAllDownFailsWithoutSpinning: with every Sentinel down, demands fail with the
// resolution's error and a burst of commands costs one resolution, not one per command.
func TestSentinelAllDownFailsWithoutSpinning(t *testing.T) {
	w := newWorldWithPrimary(t, 2)
	for _, s := range w.sentinels {
		s.up = false
	}
	var errs []error
	for range 50 {
		w.h.eng.Submit(incrCmd(func(c *Command) { errs = append(errs, c.Err) }))
		w.serve()
	}
	if len(errs) != 50 {
		t.Fatalf("%d of 50 commands completed", len(errs))
	}
	for _, err := range errs {
		var ae *AcquireError
		if !errors.As(err, &ae) {
			t.Fatalf("a command failed with %v, want an *AcquireError", err)
		}
	}
	// Two slots, one resolution of three Sentinels while the rest lasts (the manual clock does
	// not move).
	if w.sentinelDials != 3 {
		t.Fatalf("%d Sentinel dials for 50 commands", w.sentinelDials)
	}
	w.h.eng.Close()
	w.h.run()
	checkReplay(t, w.h)
}

// checkReplay replays the harness's journal and compares every step's effects.
func checkReplay(t *testing.T, h *harness) {
	t.Helper()
	var replayed []string
	Replay(h.eng.cfg, h.eng.Journal().Events(), func(_ *fsm.Event, effects []fsm.Effect) {
		var b []byte
		for i := range effects {
			b = append(b, " | "...)
			b = effects[i].AppendTo(b)
		}
		replayed = append(replayed, string(b))
	})
	if !h.eng.Journal().Complete() || len(replayed) != len(h.steps) {
		t.Fatalf("journal incomplete: %d steps, %d replayed", len(h.steps), len(replayed))
	}
	for i := range h.steps {
		if replayed[i] != h.steps[i] {
			t.Fatalf("step %d diverged:\n recorded %s\n replayed %s", i, h.steps[i], replayed[i])
		}
	}
}

func TestSentinelConfigValidation(t *testing.T) {
	base := sentinelCfg(1)
	for _, c := range []struct {
		name  string
		edit  func(*Config)
		field string
	}{
		{"with Cluster", func(c *Config) { c.Cluster = &ClusterConfig{Seeds: []Endpoint{{Host: "a", Port: 1}}} }, "Sentinel"},
		{"Unix Sentinel", func(c *Config) { c.Sentinel.Sentinels = []Endpoint{{Host: "/tmp/s.sock"}} }, "Sentinel.Sentinels"},
		{"no Sentinels", func(c *Config) { c.Sentinel.Sentinels = nil }, "Sentinel.Sentinels"},
		{"name with a space", func(c *Config) { c.Sentinel.PrimaryName = "my master" }, "Sentinel.PrimaryName"},
		{"negative timeout", func(c *Config) { c.Sentinel.QueryTimeout = -1 }, "Sentinel.QueryTimeout"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := base
			sc := *base.Sentinel
			cfg.Sentinel = &sc
			c.edit(&cfg)
			var ce *ConfigError
			if err := cfg.Validate(); !errors.As(err, &ce) || ce.Field != c.field {
				t.Fatalf("Validate() = %v, want a *ConfigError on %s", err, c.field)
			}
		})
	}
	if err := base.Validate(); err != nil {
		t.Fatal(err)
	}
}

// TestSentinelCloseAnswersDeferredDials: closing the engine while a data connection waits for a
// resolution answers that dial (the command fails as closed) and leaves no attempt unaccounted
// for: Wait's count of open attempts reaches zero once the transport answers its own.
func TestSentinelCloseAnswersDeferredDials(t *testing.T) {
	w := newWorldWithPrimary(t, 2)
	var got []error
	w.h.eng.Submit(incrCmd(func(c *Command) { got = append(got, c.Err) }))
	w.h.run()
	pending := w.h.tr.take()
	if len(pending) != 1 || !pending[0].Sentinel {
		t.Fatalf("want one Sentinel dial pending, got %d", len(pending))
	}
	w.h.eng.Close()
	w.h.run()
	if len(got) != 1 {
		t.Fatalf("the waiting command completed %d times", len(got))
	}
	var ae *AcquireError
	if !errors.As(got[0], &ae) || ae.Outcome != fsm.OutcomeClosed {
		t.Fatalf("the waiting command failed with %v, want closed", got[0])
	}
	// The transport answers the cancelled Sentinel attempt, as netio does.
	pending[0].Sink.Failed(pending[0].Conn, context.Canceled, fsm.Transient)
	done := make(chan struct{})
	go func() { w.h.eng.opens.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("an attempt was never answered: Wait would hang")
	}
}

// announce makes the Sentinel at addr publish +switch-master from -> to on its monitor
// connections.
func (w *sentinelWorld) announce(addr, from, to string) {
	recv := &SentinelReceiver{}
	recv.Attach(w.h.eng)
	fh, fp, _ := strings.Cut(from, ":")
	th, tp, _ := strings.Cut(to, ":")
	for id, c := range w.conns {
		if c.addr == addr && fsm.MachineOf(uint64(id)) == fsm.MachineSentinelMonitor && !c.closed {
			recv.Message(id, PubSubMessage{Channel: "+switch-master", Payload: "mymaster " + fh + " " + fp + " " + th + " " + tp})
		}
	}
}

// TestSentinelStaleReporterNeverRollsBack: the primary moves A -> B (epoch 1) -> A (epoch 2)
// while the first Sentinel lags; then the lagging Sentinel announces A -> B under epoch 1. The
// client stays on A and never even connects to B again.
func TestSentinelStaleReporterNeverRollsBack(t *testing.T) {
	A, B := "10.0.0.1:6379", "10.0.0.2:6379"
	w := newWorldWithPrimary(t, 1)
	w.h.eng.Acquire(fsm.NeedAll, func(Grant) {})
	w.serve()
	w.failover(A, B, 1)
	w.serve()
	w.h.rt.fireAll() // the monitor's deferred request for the other announcements
	w.serve()
	if p, _ := w.h.eng.SentinelPrimary(); p.String() != B {
		t.Fatalf("after A -> B the primary is %v", p)
	}
	// B -> A under epoch 2, seen by the second and third Sentinels only.
	lagging := w.h.eng.cfg.Sentinel.Sentinels[0].String()
	w.roles[A], w.roles[B] = fsm.RolePrimary, fsm.RoleReplica
	for addr, s := range w.sentinels {
		if addr != lagging {
			s.primary, s.epoch = A, 2
			w.announce(addr, B, A)
		}
	}
	w.serve()
	w.h.rt.fireAll()
	w.serve()
	if p, _ := w.h.eng.SentinelPrimary(); p.String() != A {
		t.Fatalf("after B -> A the primary is %v", p)
	}
	dialsToB := w.dialsTo[B]
	// The lagging Sentinel, still at epoch 1, now announces A -> B.
	w.announce(lagging, A, B)
	w.serve()
	w.h.rt.fireAll()
	w.serve()
	if p, g := w.h.eng.SentinelPrimary(); p.String() != A || !g {
		t.Fatalf("the stale announcement moved the client to %v", p)
	}
	if n := w.dialsTo[B] - dialsToB; n != 0 {
		t.Fatalf("%d dials to the former primary B after the stale announcement", n)
	}
	var stale bool
	for _, ev := range w.h.events {
		if ev.Kind == fsm.Answered && ev.Sentinel != nil && ev.Sentinel.Primary.String() == B && ev.Sentinel.Epoch == 1 {
			stale = true
		}
	}
	if !stale {
		t.Fatal("the lagging Sentinel was never asked: the test did not exercise the stale report")
	}
	w.h.eng.Close()
	w.h.run()
	checkReplay(t, w.h)
}

// monitorAttemptAtClose builds a world whose monitors are subscribed, loses one monitor
// connection so that its replacement attempt is still dialing, and closes the engine: the
// disposal then has monitor work in flight.
func monitorAttemptAtClose(t *testing.T) (*sentinelWorld, OpenRequest) {
	t.Helper()
	w := newWorldWithPrimary(t, 1)
	w.h.eng.Submit(incrCmd(func(*Command) {}))
	w.serve()
	var lost fsm.ConnID
	for id, c := range w.conns {
		if fsm.MachineOf(uint64(id)) == fsm.MachineSentinelMonitor && c.topics > 0 && (lost == 0 || id < lost) {
			lost = id
		}
	}
	if lost == 0 {
		t.Fatal("no monitor subscribed")
	}
	sink{w.h.eng}.Lost(lost, errors.New("reset by peer"))
	w.h.run()
	reqs := w.h.tr.take()
	if len(reqs) != 1 || reqs[0].Machine != fsm.MachineSentinelMonitor {
		t.Fatalf("the lost monitor was not replaced: %d opens", len(reqs))
	}
	w.h.eng.Close()
	return w, reqs[0]
}

// TestSentinelCloseWaitsForMonitorWork: Close leaves the loop running for a monitor attempt in
// flight; the attempt's end lets the loop stop, without the disposal warning. Before the engine
// waited, the loop stopped at Disposed and the attempt's end was dropped.
func TestSentinelCloseWaitsForMonitorWork(t *testing.T) {
	w, req := monitorAttemptAtClose(t)
	if w.h.eng.RunPending() {
		t.Fatal("the loop stopped with a monitor attempt in flight")
	}
	if p := w.h.eng.machines.mon.Phase(); p != "disposing" {
		t.Fatalf("monitor phase %q, want disposing", p)
	}
	// Work for other machines is refused meanwhile: a demand completes as closed.
	var got []Grant
	w.h.eng.demandOn(fsm.MachineMux, fsm.Event{Kind: fsm.Demanded}, &waiter{notify: func(g Grant) { got = append(got, g) }})
	if w.h.eng.RunPending() {
		t.Fatal("the loop stopped before the monitor attempt ended")
	}
	if len(got) != 1 || got[0].Outcome != fsm.OutcomeClosed {
		t.Fatalf("a demand during the monitor's disposal: %v", got)
	}
	req.Sink.Failed(req.Conn, context.Canceled, fsm.Transient)
	if !w.h.eng.RunPending() {
		t.Fatalf("the loop still runs after the monitor attempt ended (monitor %s)", w.h.eng.machines.mon.Phase())
	}
	for _, s := range w.h.steps {
		if strings.Contains(s, "monitor-disposal") {
			t.Fatalf("disposal warned although the monitor work ended in time: %s", s)
		}
	}
}

// TestSentinelCloseStopsWaitingAfterTheGrace: monitor work that never ends holds Close for
// fsm.MonitorDisposalGrace only: when the grace timer fires, the monitor warns and the loop
// stops.
func TestSentinelCloseStopsWaitingAfterTheGrace(t *testing.T) {
	w, _ := monitorAttemptAtClose(t)
	if w.h.eng.RunPending() {
		t.Fatal("the loop stopped with a monitor attempt in flight")
	}
	if w.h.rt.fireAll() == 0 {
		t.Fatal("no grace timer armed")
	}
	if !w.h.eng.RunPending() {
		t.Fatalf("the loop still runs after the grace (monitor %s)", w.h.eng.machines.mon.Phase())
	}
	warned := false
	for _, s := range w.h.steps {
		warned = warned || strings.Contains(s, "monitor-disposal")
	}
	if !warned {
		t.Fatalf("no disposal warning: %q", w.h.steps[len(w.h.steps)-3:])
	}
}

// TestSentinelCloseEndsClosedMonitorsAtOnce: subscribed monitors closed by disposal end with
// their Close (transports report no loss for connections the engine closed): the loop stops
// at once, without waiting for the grace.
func TestSentinelCloseEndsClosedMonitorsAtOnce(t *testing.T) {
	w := newWorldWithPrimary(t, 1)
	w.h.eng.Submit(incrCmd(func(*Command) {}))
	w.serve()
	w.h.eng.Close()
	if !w.h.eng.RunPending() {
		t.Fatalf("the loop still runs after closing subscribed monitors (monitor %s)", w.h.eng.machines.mon.Phase())
	}
	for id, c := range w.conns {
		if fsm.MachineOf(uint64(id)) == fsm.MachineSentinelMonitor && !c.closed {
			t.Fatalf("monitor connection %v left open", id)
		}
	}
}

// TestSentinelCloseClosesAMonitorThatConnectsLate: a monitor attempt that completes its
// handshake after disposal cancelled it ends the monitor's wait: its connection is closed, not
// kept, and the loop stops.
func TestSentinelCloseClosesAMonitorThatConnectsLate(t *testing.T) {
	w, req := monitorAttemptAtClose(t)
	if w.h.eng.RunPending() {
		t.Fatal("the loop stopped with a monitor attempt in flight")
	}
	late := &worldConn{w: w, id: req.Conn}
	req.Sink.Dialed(req.Conn)
	req.Sink.Ready(req.Conn, late)
	if !w.h.eng.RunPending() {
		t.Fatalf("the loop still runs after the late monitor attempt ended (monitor %s)", w.h.eng.machines.mon.Phase())
	}
	if !late.closed {
		t.Fatal("the late monitor connection was kept open")
	}
	if len(w.h.eng.conns) != 0 {
		t.Fatalf("%d connections kept after Close", len(w.h.eng.conns))
	}
}

// TestSentinelCloseDropsTheDiscoveryQueryInFlight: Close while a discovery query waits for its
// Sentinel's answer cancels it cleanly, without waiting: the loop stops at once, the query's
// connection is closed, its timeout is cancelled (no timer is left armed to fire after Close),
// the command waiting for the primary fails as closed, and an answer the connection still
// delivers afterwards steps nothing. Before the engine dropped the query, its timeout stayed
// armed after Close (the fake connection, like a custom transport may, does not complete its
// pending command when closed).
func TestSentinelCloseDropsTheDiscoveryQueryInFlight(t *testing.T) {
	w := newWorldWithPrimary(t, 1)
	w.holdQueries = true
	var got []error
	w.h.eng.Submit(incrCmd(func(c *Command) { got = append(got, c.Err) }))
	w.serve()
	var asked *worldConn
	for _, c := range w.conns {
		if c.sentinel && len(c.held) > 0 && strings.Contains(string(c.held[0].Frame), "SENTINEL") {
			asked = c
		}
	}
	if asked == nil {
		t.Fatal("no discovery query in flight")
	}
	if n := len(w.h.rt.timers); n != len(asked.held) {
		t.Fatalf("%d timers armed with %d queries in flight, want their timeouts", n, len(asked.held))
	}
	w.h.eng.Close()
	if !w.h.eng.RunPending() {
		t.Fatalf("the loop still runs after Close with only a discovery query in flight (monitor %s)", w.h.eng.machines.mon.Phase())
	}
	if !asked.closed {
		t.Fatal("the query's connection was left open")
	}
	if n := len(w.h.rt.timers); n != 0 {
		t.Fatalf("%d timers left armed after Close: the query's timeout would fire later", n)
	}
	var ae *AcquireError
	if len(got) != 1 || !errors.As(got[0], &ae) || ae.Outcome != fsm.OutcomeClosed {
		t.Fatalf("the command waiting for the primary: %v, want failed as closed", got)
	}
	steps := len(w.h.events)
	for len(asked.held) > 0 {
		asked.reply(resp.ArrayOf())
	}
	w.h.run()
	if len(w.h.events) != steps || len(w.h.rt.timers) != 0 {
		t.Fatalf("a late answer stepped %d events and left %d timers", len(w.h.events)-steps, len(w.h.rt.timers))
	}
	if len(w.h.eng.conns) != 0 {
		t.Fatalf("%d connections kept after Close", len(w.h.eng.conns))
	}
}
