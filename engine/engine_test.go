package engine

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/respire-go/respire/fsm"
)

// manualRuntime is a deterministic Runtime for tests: time moves only when told, timers fire only
// when told, draws come from a fixed sequence.
type manualRuntime struct {
	mu     sync.Mutex
	now    time.Duration
	draw   float64
	timers map[fsm.TimerID]func()
}

func newManualRuntime() *manualRuntime {
	return &manualRuntime{timers: map[fsm.TimerID]func(){}, draw: 0.5}
}

func (r *manualRuntime) Now() time.Duration { r.mu.Lock(); defer r.mu.Unlock(); return r.now }
func (r *manualRuntime) Draw() float64      { return r.draw }
func (r *manualRuntime) ArmTimer(id fsm.TimerID, _ time.Duration, fire func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.timers[id] = fire
}
func (r *manualRuntime) CancelTimer(id fsm.TimerID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.timers, id)
}

// fireAll fires every armed timer.
func (r *manualRuntime) fireAll() int {
	r.mu.Lock()
	fns := make([]func(), 0, len(r.timers))
	for id, fn := range r.timers {
		fns = append(fns, fn)
		delete(r.timers, id)
	}
	r.mu.Unlock()
	for _, fn := range fns {
		fn()
	}
	return len(fns)
}

// fakeTransport records open requests; tests resolve them through their Sink.
type fakeTransport struct {
	mu    sync.Mutex
	opens []OpenRequest
	ctxs  []context.Context
}

func (f *fakeTransport) Open(ctx context.Context, req OpenRequest) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.opens = append(f.opens, req)
	f.ctxs = append(f.ctxs, ctx)
}

func (f *fakeTransport) take() []OpenRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := f.opens
	f.opens = nil
	return out
}

// fakeConn records what it was sent and completes commands on demand.
type fakeConn struct {
	mu      sync.Mutex
	sent    []*Command
	closed  bool
	drained bool
}

func (c *fakeConn) Send(cmd *Command) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		cmd.Complete(errors.New("closed"))
		return
	}
	cmd.Writing()
	cmd.Written()
	c.sent = append(c.sent, cmd)
}
func (c *fakeConn) Drain() { c.mu.Lock(); c.drained = true; c.mu.Unlock() }
func (c *fakeConn) Close() { c.mu.Lock(); c.closed = true; c.mu.Unlock() }
func (c *fakeConn) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.sent)
}

type harness struct {
	t       *testing.T
	rt      *manualRuntime
	tr      *fakeTransport
	eng     *Engine
	steps   []string
	events  []fsm.Event
	changes []StateChange
	metrics []fsm.Metric
	conns   map[fsm.ConnID]*fakeConn
}

type recordMeter struct{ h *harness }

func (m recordMeter) Record(_ Endpoint, x fsm.Metric) { m.h.metrics = append(m.h.metrics, x) }

func newHarness(t *testing.T, cfg Config) *harness {
	h := &harness{t: t, rt: newManualRuntime(), tr: &fakeTransport{}, conns: map[fsm.ConnID]*fakeConn{}}
	if cfg.Endpoint.Host == "" {
		cfg.Endpoint = Endpoint{Host: "127.0.0.1", Port: 6379}
	}
	h.eng = New(cfg, Deps{
		Runtime: h.rt, Transport: h.tr,
		Observer: ObserverFunc(func(c StateChange) { h.changes = append(h.changes, c) }),
		Meter:    recordMeter{h},
		OnStep: func(ev *fsm.Event, effects []fsm.Effect) {
			h.events = append(h.events, *ev)
			var b []byte
			for i := range effects {
				b = append(b, " | "...)
				b = effects[i].AppendTo(b)
			}
			h.steps = append(h.steps, string(b))
		},
	})
	return h
}

// run steps everything pending (stepper mode).
func (h *harness) run() { h.eng.RunPending() }

// ready resolves every pending open successfully.
func (h *harness) ready() {
	for _, req := range h.tr.take() {
		c := &fakeConn{}
		h.conns[req.Conn] = c
		req.Sink.Dialed(req.Conn)
		req.Sink.Ready(req.Conn, c)
	}
	h.run()
}

// fail resolves every pending open with a failure.
func (h *harness) fail(msg string) {
	for _, req := range h.tr.take() {
		req.Sink.Failed(req.Conn, errors.New(msg), fsm.Transient)
	}
	h.run()
}

func newCmd(done func(*Command)) *Command {
	return &Command{Name: "PING", Frame: []byte("*1\r\n$4\r\nPING\r\n"), Done: done}
}

func TestHotPathBypassesTheLoop(t *testing.T) {
	h := newHarness(t, Config{Slots: 3})
	var granted Grant
	h.eng.Acquire(fsm.NeedAll, func(g Grant) { granted = g })
	h.run()
	h.ready()
	if granted.Outcome != fsm.OutcomeGranted || !h.eng.Connected() {
		t.Fatalf("eager connect: %+v", granted)
	}
	before := h.eng.Journal().Total()
	for i := 0; i < 3000; i++ {
		h.eng.Submit(newCmd(nil))
	}
	h.run()
	if after := h.eng.Journal().Total(); after != before {
		t.Fatalf("healthy submits reached the event loop: %d events", after-before)
	}
	for id, c := range h.conns {
		if n := c.count(); n != 1000 {
			t.Fatalf("conn %d got %d commands, want an even 1000", id, n)
		}
	}
	if len(h.metrics) != 0 {
		t.Fatalf("successful commands recorded recovery metrics: %v", h.metrics)
	}
}

func TestLazyDemandWaitsForTheFirstConnection(t *testing.T) {
	h := newHarness(t, Config{Slots: 1})
	var done *Command
	cmd := newCmd(func(c *Command) { done = c })
	h.eng.Submit(cmd)
	h.run()
	if len(h.tr.opens) != 1 || cmd.Stage() != StageQueued {
		t.Fatalf("lazy demand: opens=%d stage=%v", len(h.tr.opens), cmd.Stage())
	}
	h.ready()
	for _, c := range h.conns {
		if c.count() != 1 || cmd.Stage() != StageAwaitingReply {
			t.Fatalf("granted command not sent: %d %v", c.count(), cmd.Stage())
		}
	}
	if done != nil {
		t.Fatal("fake conn never completes; Done must not have run")
	}
}

func TestFailedReplacementIsNoticedByTheNextUse(t *testing.T) {
	h := newHarness(t, Config{Slots: 2, Policy: &fsm.Policy{InitialDelay: time.Second, MaxAttempts: 2}})
	h.eng.Acquire(fsm.NeedAll, func(Grant) {})
	h.run()
	h.ready()
	// Lose slot 0's connection: a replacement is scheduled, not dialed.
	var lost fsm.ConnID
	for id := range h.conns {
		if lost == 0 || id < lost {
			lost = id
		}
	}
	sinkOf(h).Lost(lost, errors.New("reset"))
	h.run()
	if len(h.tr.opens) != 0 || len(h.rt.timers) != 1 {
		t.Fatalf("loss must schedule (not dial) attempt 1: opens=%d timers=%d", len(h.tr.opens), len(h.rt.timers))
	}
	h.rt.fireAll()
	h.run()
	h.fail("refused")
	// The slot now awaits use: submits go to the healthy slot and notice the failed one once.
	before := h.eng.Journal().Total()
	for i := 0; i < 10; i++ {
		h.eng.Submit(newCmd(nil))
	}
	h.run()
	if got := h.eng.Journal().Total() - before; got != 1 {
		t.Fatalf("want exactly one Noticed event for ten submits, got %d", got)
	}
	if len(h.rt.timers) != 1 {
		t.Fatalf("notice must schedule attempt 2")
	}
	h.rt.fireAll()
	h.run()
	h.fail("refused")
	// Slot 0 is exhausted; slot 1 keeps serving and no more attempts start.
	before = h.eng.Journal().Total()
	for i := 0; i < 10; i++ {
		h.eng.Submit(newCmd(nil))
	}
	h.run()
	if h.eng.Journal().Total() != before || len(h.tr.opens) != 0 || len(h.rt.timers) != 0 {
		t.Fatalf("exhausted slot still drives work")
	}
	var exhausted bool
	for _, c := range h.changes {
		if c.Exhausted && c.Slot == 0 && c.Source == fsm.SourceCommand && c.Endpoint.Port == 6379 {
			exhausted = true
		}
	}
	if !exhausted {
		t.Fatal("no exhausted lifecycle observation")
	}
}

// failSlots connects every slot of a policy-less engine, then loses the connections of every
// slot but the first keep ones; their immediate replacements are refused and, once their rests
// are over, they await use. It returns the kept slots' connections.
func failSlots(h *harness, keep int) {
	h.eng.Acquire(fsm.NeedAll, func(Grant) {})
	h.run()
	h.ready()
	for id := range h.conns {
		if int(id) > keep {
			sinkOf(h).Lost(id, errors.New("reset"))
		}
	}
	h.run()
	h.fail("refused")
	if n := h.rt.fireAll(); n != h.eng.Config().Slots-keep {
		h.t.Fatalf("%d rests armed for %d failed slots", n, h.eng.Config().Slots-keep)
	}
	h.run()
	if len(h.tr.opens) != 0 {
		h.t.Fatalf("the end of a rest dialed: %v", h.tr.opens)
	}
}

// kinds returns the kinds of the events stepped since index from.
func (h *harness) kinds(from int) []fsm.EventKind {
	var out []fsm.EventKind
	for _, ev := range h.events[from:] {
		out = append(out, ev.Kind)
	}
	return out
}

// TestOneSubmitNoticesOneSlot: a command served by the one healthy slot passes seven failed slots
// and notices one of them: one event, one attempt. (It noticed all seven, one attempt each,
// before issue 10.)
func TestOneSubmitNoticesOneSlot(t *testing.T) {
	h := newHarness(t, Config{Slots: 8})
	failSlots(h, 1)
	from, notices := len(h.events), 0
	for i := 0; i < 8; i++ {
		// A command whose rotation starts on the healthy slot passes no failed slot.
		h.eng.Submit(newCmd(nil))
		h.run()
		got := h.kinds(from)
		if len(got) > 1 || (len(got) == 1 && got[0] != fsm.Noticed) {
			t.Fatalf("submit %d stepped %v, want at most one notice", i, got)
		}
		if n := len(h.tr.take()); n != len(got) {
			t.Fatalf("submit %d: %d notices started %d attempts", i, len(got), n)
		}
		notices += len(got)
		from = len(h.events)
	}
	// Seven of the eight rotations pass a failed slot, and each failed slot is noticed once.
	if notices != 7 {
		t.Fatalf("eight submits noticed %d failed slots, want 7", notices)
	}
	if sent := h.conns[1].count(); sent != 8 {
		t.Fatalf("the healthy slot served %d of 8 commands", sent)
	}
}

// TestSubmitWithoutReadySlotDemandsOnce: with every slot failed, a command becomes one demand and
// starts one attempt, and the commands that follow share it. (Before issue 10 each command
// noticed every slot and the demand started all of them: eight attempts per command.)
func TestSubmitWithoutReadySlotDemandsOnce(t *testing.T) {
	h := newHarness(t, Config{Slots: 8})
	failSlots(h, 0)
	from := len(h.events)
	for i := 0; i < 5; i++ {
		h.eng.Submit(newCmd(nil))
	}
	h.run()
	for _, k := range h.kinds(from) {
		if k != fsm.Demanded {
			t.Fatalf("submits without a ready slot stepped %v, want demands only", h.kinds(from))
		}
	}
	if n := len(h.tr.take()); n != 1 {
		t.Fatalf("five commands started %d attempts, want one they share", n)
	}
}

func TestReconnectLimitReachesQueuedCommands(t *testing.T) {
	h := newHarness(t, Config{Slots: 1, Policy: &fsm.Policy{MaxAttempts: 1}})
	h.eng.Acquire(fsm.NeedAll, func(Grant) {})
	h.run()
	h.ready()
	for id := range h.conns {
		sinkOf(h).Lost(id, errors.New("reset"))
	}
	h.run()
	h.fail("connection refused")
	var got *Command
	cmd := newCmd(func(c *Command) { got = c })
	h.eng.Submit(cmd)
	h.run()
	var ae *AcquireError
	if got == nil || !errors.As(got.Err, &ae) || ae.Outcome != fsm.OutcomeExhausted || got.MaybeSent() {
		t.Fatalf("want a definite exhausted failure, got %+v", got)
	}
	if !strings.Contains(got.Err.Error(), "connection refused") {
		t.Fatalf("limit error must keep the last connection error: %v", got.Err)
	}
}

func TestWithdrawnCommandIsNeverSent(t *testing.T) {
	h := newHarness(t, Config{Slots: 1})
	called := false
	cmd := newCmd(func(*Command) { called = true })
	h.eng.Submit(cmd)
	h.run()
	if !h.eng.Withdraw(cmd) {
		t.Fatal("queued command must be withdrawable")
	}
	h.run()
	h.ready()
	for _, c := range h.conns {
		if c.count() != 0 {
			t.Fatal("withdrawn command was sent")
		}
	}
	if called || cmd.Stage() != StageAbandoned {
		t.Fatalf("withdrawn command completed: called=%v stage=%v", called, cmd.Stage())
	}
	// A sent command cannot be withdrawn.
	sent := newCmd(nil)
	h.eng.Submit(sent)
	if h.eng.Withdraw(sent) {
		t.Fatal("sent command was withdrawn")
	}
}

func TestCloseAnswersWaitersAndCancelsAttempts(t *testing.T) {
	h := newHarness(t, Config{Slots: 2})
	var got *Command
	h.eng.Submit(newCmd(func(c *Command) { got = c }))
	h.run()
	if len(h.tr.ctxs) != 2 {
		t.Fatalf("want 2 opens, got %d", len(h.tr.ctxs))
	}
	h.eng.Close()
	h.run()
	var ae *AcquireError
	if got == nil || !errors.As(got.Err, &ae) || ae.Outcome != fsm.OutcomeClosed {
		t.Fatalf("waiter after close: %+v", got)
	}
	for _, ctx := range h.tr.ctxs {
		if ctx.Err() == nil {
			t.Fatal("attempt in progress not cancelled by Close")
		}
	}
	// Late results are closed; late submits fail as closed.
	c := &fakeConn{}
	for _, req := range h.tr.take() {
		req.Sink.Ready(req.Conn, c)
	}
	h.run()
	if !c.closed {
		t.Fatal("late connection not closed")
	}
	got = nil
	h.eng.Submit(newCmd(func(cm *Command) { got = cm }))
	h.run()
	if got == nil || !errors.As(got.Err, &ae) || ae.Outcome != fsm.OutcomeClosed {
		t.Fatalf("submit after close: %+v", got)
	}
}

func TestJournalReplayReproducesEffects(t *testing.T) {
	cfg := Config{Slots: 2, Policy: &fsm.Policy{InitialDelay: 10 * time.Millisecond, JitterRatio: 0.5, MaxAttempts: 3}}
	h := newHarness(t, cfg)
	h.eng.Acquire(fsm.NeedAll, func(Grant) {})
	h.run()
	h.ready()
	for round := 0; round < 4; round++ {
		h.rt.draw = float64(round) / 5
		for id := range h.conns {
			sinkOf(h).Lost(id, errors.New("reset"))
			delete(h.conns, id)
		}
		h.run()
		h.rt.fireAll()
		h.run()
		if round%2 == 0 {
			h.fail("refused")
			h.eng.Submit(newCmd(nil))
			h.run()
			h.rt.fireAll()
			h.run()
		}
		h.ready()
	}
	h.eng.Close()
	h.run()
	var replayed []string
	Replay(cfg, h.eng.Journal().Events(), func(_ *fsm.Event, effects []fsm.Effect) {
		var b []byte
		for i := range effects {
			b = append(b, " | "...)
			b = effects[i].AppendTo(b)
		}
		replayed = append(replayed, string(b))
	})
	if !h.eng.Journal().Complete() || len(replayed) != len(h.steps) || len(h.steps) < 20 {
		t.Fatalf("journal incomplete or too short: %d steps, %d replayed", len(h.steps), len(replayed))
	}
	for i := range h.steps {
		if replayed[i] != h.steps[i] {
			t.Fatalf("step %d diverged:\n recorded %s\n replayed %s", i, h.steps[i], replayed[i])
		}
	}
}

func TestJournalIsBounded(t *testing.T) {
	j := NewJournal(3)
	for i := 1; i <= 5; i++ {
		j.Append(&fsm.Event{Kind: fsm.Noticed, Slot: i})
	}
	ev := j.Events()
	if len(ev) != 3 || ev[0].Slot != 3 || ev[2].Slot != 5 || j.Total() != 5 || j.Complete() {
		t.Fatalf("ring: %v total=%d", ev, j.Total())
	}
}

// TestLoopModeRaceAndLeaks runs the engine on its own goroutine with many concurrent callers,
// losses and a close, under the race detector, and checks no goroutine outlives Close.
func TestLoopModeRaceAndLeaks(t *testing.T) {
	base := runtime.NumGoroutine()
	mock := clock.NewMock()
	tr := &asyncTransport{}
	disp := NewDispatcher(func(StateChange) {})
	eng := New(Config{Endpoint: Endpoint{Host: "h", Port: 1}, Slots: 4, Policy: &fsm.Policy{InitialDelay: time.Millisecond}},
		Deps{Runtime: NewClockRuntime(mock, 1), Transport: tr, Observer: disp})
	tr.eng = eng
	eng.Start()
	var wg sync.WaitGroup
	for g := 0; g < 16; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 500; i++ {
				done := make(chan struct{})
				cmd := newCmd(func(*Command) { close(done) })
				eng.Submit(cmd)
				select {
				case <-done:
				case <-time.After(time.Millisecond):
					if !eng.Withdraw(cmd) {
						<-done
					}
				}
				if i%50 == 0 {
					tr.loseOne()
					mock.Add(2 * time.Millisecond)
				}
			}
		}()
	}
	wg.Wait()
	eng.Close()
	eng.Wait()
	tr.closeAll()
	disp.Close()
	<-disp.Done()
	deadline := time.Now().Add(2 * time.Second)
	for runtime.NumGoroutine() > base && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > base {
		buf := make([]byte, 1<<16)
		t.Fatalf("%d goroutines leaked:\n%s", n-base, buf[:runtime.Stack(buf, true)])
	}
}

// asyncTransport opens connections on goroutines and completes commands at once.
type asyncTransport struct {
	mu    sync.Mutex
	eng   *Engine
	conns map[fsm.ConnID]*echoConn
	sinks map[fsm.ConnID]Sink
}

type echoConn struct {
	mu     sync.Mutex
	closed bool
}

func (c *echoConn) Send(cmd *Command) {
	c.mu.Lock()
	closed := c.closed
	c.mu.Unlock()
	if closed {
		cmd.Complete(errors.New("closed"))
		return
	}
	cmd.Writing()
	cmd.Written()
	cmd.Complete(nil)
}
func (c *echoConn) Drain() { c.Close() }
func (c *echoConn) Close() { c.mu.Lock(); c.closed = true; c.mu.Unlock() }

func (a *asyncTransport) Open(ctx context.Context, req OpenRequest) {
	go func() {
		c := &echoConn{}
		a.mu.Lock()
		if a.conns == nil {
			a.conns, a.sinks = map[fsm.ConnID]*echoConn{}, map[fsm.ConnID]Sink{}
		}
		a.conns[req.Conn] = c
		a.sinks[req.Conn] = req.Sink
		a.mu.Unlock()
		if ctx.Err() != nil {
			req.Sink.Failed(req.Conn, ctx.Err(), fsm.Transient)
			return
		}
		req.Sink.Dialed(req.Conn)
		req.Sink.Ready(req.Conn, c)
	}()
}

func (a *asyncTransport) loseOne() {
	a.mu.Lock()
	defer a.mu.Unlock()
	for id, c := range a.conns {
		c.Close()
		a.sinks[id].Lost(id, errors.New("reset"))
		delete(a.conns, id)
		return
	}
}

func (a *asyncTransport) closeAll() {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, c := range a.conns {
		c.Close()
	}
}

func sinkOf(h *harness) Sink { return sink{h.eng} }

func TestDispatcherOrderAndCloseFromHandler(t *testing.T) {
	var got []int
	var d *Dispatcher
	release := make(chan struct{})
	d = NewDispatcher(func(c StateChange) {
		got = append(got, c.Attempt)
		if c.Attempt == 50 {
			d.Close() // a handler may close; the rest is suppressed
			close(release)
		}
	})
	for i := 1; i <= 100; i++ {
		d.Observe(StateChange{Lifecycle: fsm.Lifecycle{Attempt: i}})
	}
	<-release
	<-d.Done()
	if len(got) != 50 {
		t.Fatalf("want 50 in-order deliveries then suppression, got %d", len(got))
	}
	for i, a := range got {
		if a != i+1 {
			t.Fatalf("out of order at %d: %d", i, a)
		}
	}
	d.Observe(StateChange{}) // after close: dropped, no panic
}

func TestEndpointString(t *testing.T) {
	for _, c := range []struct {
		ep   Endpoint
		want string
	}{
		{Endpoint{"localhost", 6379}, "localhost:6379"},
		{Endpoint{"::1", 6380}, "[::1]:6380"},
		{Endpoint{"/tmp/redis.sock", 0}, "/tmp/redis.sock"},
	} {
		if got := c.ep.String(); got != c.want {
			t.Errorf("%+v: %q want %q", c.ep, got, c.want)
		}
	}
}

func TestForEachConnVisitsReadyConnectionsInOrder(t *testing.T) {
	h := newHarness(t, Config{Slots: 3})
	h.eng.Acquire(fsm.NeedAll, func(Grant) {})
	h.run()
	h.ready()
	before := h.eng.Journal().Total()
	var seen []fsm.ConnID
	finished := false
	h.eng.ForEachConn(func(m fsm.Machine, id fsm.ConnID, c Conn) {
		if m != fsm.MachineMux || c == nil {
			t.Errorf("conn %d: machine %v", id, m)
		}
		seen = append(seen, id)
	}, func() { finished = true })
	h.run()
	if len(seen) != 3 || !finished || seen[0] > seen[1] || seen[1] > seen[2] {
		t.Fatalf("visited %v finished=%v", seen, finished)
	}
	if h.eng.Journal().Total() != before {
		t.Fatal("ForEachConn must not journal an event")
	}
}
