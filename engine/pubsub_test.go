package engine

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/respire-go/respire/fsm"
)

func TestMailboxDropsOldestAndCountsInOrder(t *testing.T) {
	b := NewMailbox(3)
	for i := 0; i < 3; i++ {
		b.Put(Delivery{Kind: DeliveryMessage, Payload: string(rune('a' + i))})
	}
	b.Put(Delivery{Kind: DeliveryGap})
	b.Put(Delivery{Kind: DeliveryMessage, Payload: "e"})
	// a and b were dropped: the consumer learns it first, then sees what remains, in order.
	want := []string{"overflow:2", "message:c", "gap:", "message:e"}
	for _, w := range want {
		d, ok, _, _, _ := b.Take()
		got := d.Kind.String() + ":" + d.Payload
		if d.Kind == DeliveryOverflow {
			got = "overflow:" + itoaTest(d.Dropped)
		}
		if !ok || got != w {
			t.Fatalf("got %q (ok %v), want %q", got, ok, w)
		}
	}
	if !b.End(fsm.EndReconnectExhausted, errors.New("refused")) || b.End(fsm.EndClosed, nil) {
		t.Fatal("End must succeed once")
	}
	if b.Put(Delivery{Kind: DeliveryMessage}) {
		t.Fatal("Put after End")
	}
	_, ok, ended, reason, err := b.Take()
	if ok || !ended || reason != fsm.EndReconnectExhausted || err == nil {
		t.Fatalf("end: %v %v %v %v", ok, ended, reason, err)
	}
}

func TestMailboxEndDrainsBufferFirst(t *testing.T) {
	b := NewMailbox(4)
	b.Put(Delivery{Kind: DeliveryMessage, Payload: "x"})
	b.End(fsm.EndClosed, nil)
	if d, ok, _, _, _ := b.Take(); !ok || d.Payload != "x" {
		t.Fatal("buffered message lost at the end")
	}
	if _, ok, ended, reason, _ := b.Take(); ok || !ended || reason != fsm.EndClosed {
		t.Fatal("no end after the buffer")
	}
}

func itoaTest(n int) string {
	if n < 10 {
		return string(rune('0' + n))
	}
	return "many"
}

// subConnFake is a SubscriberConn that records the subscription commands it was asked to send.
type subConnFake struct {
	fakeConn
	mu   sync.Mutex
	subs [][]fsm.Topic
}

func (c *subConnFake) Subscribe(topics []fsm.Topic, unsubscribe bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !unsubscribe {
		c.subs = append(c.subs, topics)
	}
}

// pubsubHarness is an engine in stepper mode with a Router, fake subscriber connections and an
// OpenTelemetry meter read by a ManualReader.
type pubsubHarness struct {
	t       *testing.T
	rt      *manualRuntime
	tr      *fakeTransport
	eng     *Engine
	router  *Router
	reader  *sdkmetric.ManualReader
	changes []StateChange
	conns   map[fsm.ConnID]*subConnFake
}

func newPubSubHarness(t *testing.T, policy *fsm.Policy) *pubsubHarness {
	h := &pubsubHarness{t: t, rt: newManualRuntime(), tr: &fakeTransport{}, conns: map[fsm.ConnID]*subConnFake{}}
	h.reader = sdkmetric.NewManualReader()
	meter, err := NewOTelMeter(sdkmetric.NewMeterProvider(sdkmetric.WithReader(h.reader)))
	if err != nil {
		t.Fatal(err)
	}
	h.router = NewRouter(16)
	h.eng = New(Config{Endpoint: Endpoint{Host: "cache.internal", Port: 6380}, Slots: 1, Policy: policy}, Deps{
		Runtime: h.rt, Transport: h.tr, Meter: meter, PubSub: h.router,
		Observer: ObserverFunc(func(c StateChange) { h.changes = append(h.changes, c) }),
	})
	h.router.Attach(h.eng)
	return h
}

func (h *pubsubHarness) run() { h.eng.RunPending() }

// open resolves every pending open: ready, or failed with msg.
func (h *pubsubHarness) open(msg string) []fsm.ConnID {
	var ids []fsm.ConnID
	for _, req := range h.tr.take() {
		if req.Slot != -1 || (req.Machine != fsm.MachinePubSub && req.Machine != fsm.MachineShardedPubSub) {
			h.t.Fatalf("pub/sub open request %+v", req)
		}
		if msg != "" {
			req.Sink.Failed(req.Conn, errors.New(msg), fsm.Transient)
			continue
		}
		c := &subConnFake{}
		h.conns[req.Conn] = c
		req.Sink.Ready(req.Conn, c)
		ids = append(ids, req.Conn)
	}
	h.run()
	return ids
}

// TestPubSubLifecycleAndMetrics: pub/sub recovery events carry source PubSub and no slot, the
// attempt and delay measurements are tagged respire.connection.source=pubsub, and each exhausted
// episode (regular and sharded) is counted once.
func TestPubSubLifecycleAndMetrics(t *testing.T) {
	h := newPubSubHarness(t, &fsm.Policy{InitialDelay: 100 * time.Millisecond, BackoffMultiplier: 2, MaxAttempts: 2})
	news := fsm.Topic{Kind: fsm.TopicChannel, Name: "news"}
	shard := fsm.Topic{Kind: fsm.TopicShard, Name: "s1"}
	grants := map[fsm.Machine]Grant{}
	boxes := map[fsm.Machine]*Mailbox{}
	for m, topic := range map[fsm.Machine]fsm.Topic{fsm.MachinePubSub: news, fsm.MachineShardedPubSub: shard} {
		boxes[m] = NewMailbox(8)
		h.router.Join(m, []fsm.Topic{topic}, boxes[m])
		h.eng.Subscribe(m, []fsm.Topic{topic}, func(g Grant) { grants[m] = g })
	}
	h.run()
	ids := h.open("")
	if len(ids) != 2 {
		t.Fatalf("%d pub/sub connections, want one per episode", len(ids))
	}
	for _, id := range ids {
		if len(h.conns[id].subs) != 1 {
			t.Fatalf("conn %d subscriptions %v", id, h.conns[id].subs)
		}
		h.router.Acked(id, h.conns[id].subs[0][0])
	}
	h.run()
	for m, g := range grants {
		if g.Outcome != fsm.OutcomeGranted {
			t.Fatalf("%v: %+v", m, g)
		}
	}
	// Both connections die; every attempt fails until both episodes exhaust.
	for _, id := range ids {
		lose(h.eng, id)
	}
	h.run()
	for i := 0; i < 2; i++ {
		if n := h.rt.fireAll(); n != 2 {
			t.Fatalf("round %d: %d timers armed, want one per episode", i, n)
		}
		h.run()
		h.open("refused")
	}
	for m, box := range boxes {
		if _, ok, ended, reason, err := box.Take(); ok || !ended || reason != fsm.EndReconnectExhausted || err == nil {
			t.Fatalf("%v subscription: ended %v reason %v err %v", m, ended, reason, err)
		}
	}
	// Lifecycle: source PubSub, no slot, the command slots' aggregate state.
	exhausted := 0
	for _, c := range h.changes {
		if c.Source != fsm.SourcePubSub || c.Slot != -1 || c.State != fsm.EndpointDisconnected {
			t.Fatalf("pub/sub event %+v", c)
		}
		if c.Exhausted {
			exhausted++
			if c.SourceState != fsm.SourceDisconnected || c.Err == nil || c.Attempt != 2 {
				t.Fatalf("exhaustion event %+v", c)
			}
		}
	}
	if exhausted != 2 {
		t.Fatalf("%d exhaustion events, want 2", exhausted)
	}
	// Metrics through OpenTelemetry.
	var rm metricdata.ResourceMetrics
	if err := h.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	found := map[string]bool{}
	for _, sm := range rm.ScopeMetrics {
		for _, md := range sm.Metrics {
			found[md.Name] = true
			switch d := md.Data.(type) {
			case metricdata.Histogram[int64]: // attempts 1 and 2, twice (two episodes)
				checkPubSubPoints(t, md.Name, len(d.DataPoints), d.DataPoints[0].Attributes.Value)
				if d.DataPoints[0].Count != 4 || d.DataPoints[0].Sum != 6 {
					t.Fatalf("%s count %d sum %d", md.Name, d.DataPoints[0].Count, d.DataPoints[0].Sum)
				}
			case metricdata.Histogram[float64]: // 0.1 s and 0.2 s, twice
				checkPubSubPoints(t, md.Name, len(d.DataPoints), d.DataPoints[0].Attributes.Value)
				if d.DataPoints[0].Count != 4 || d.DataPoints[0].Sum < 0.599 || d.DataPoints[0].Sum > 0.601 {
					t.Fatalf("%s count %d sum %v", md.Name, d.DataPoints[0].Count, d.DataPoints[0].Sum)
				}
			case metricdata.Sum[int64]: // one per exhausted episode
				checkPubSubPoints(t, md.Name, len(d.DataPoints), d.DataPoints[0].Attributes.Value)
				if d.DataPoints[0].Value != 2 {
					t.Fatalf("%s = %d, want 2", md.Name, d.DataPoints[0].Value)
				}
			}
		}
	}
	for _, name := range []string{"respire.connection.reconnect.attempt", "respire.connection.reconnect.delay", "respire.connection.reconnect.exhausted"} {
		if !found[name] {
			t.Fatalf("%s not recorded", name)
		}
	}
	// Exhaustion is sticky and the other machines are unaffected: a new subscription fails with
	// the limit, without dialing.
	var late Grant
	h.eng.Subscribe(fsm.MachinePubSub, []fsm.Topic{news}, func(g Grant) { late = g })
	h.run()
	if late.Outcome != fsm.OutcomeExhausted || late.Err == nil || len(h.tr.take()) != 0 {
		t.Fatalf("subscription after exhaustion: %+v", late)
	}
}

func checkPubSubPoints(t *testing.T, name string, points int, value func(k attribute.Key) (attribute.Value, bool)) {
	t.Helper()
	if points != 1 {
		t.Fatalf("%s: %d data points, want one attribute set", name, points)
	}
	src, _ := value("respire.connection.source")
	host, _ := value("server.address")
	port, _ := value("server.port")
	if src.AsString() != "pubsub" || host.AsString() != "cache.internal" || port.AsInt64() != 6380 {
		t.Fatalf("%s attributes: source %q host %q port %d", name, src.AsString(), host.AsString(), port.AsInt64())
	}
}

// lose reports that a ready connection failed, as a transport would.
func lose(e *Engine, id fsm.ConnID) { sink{e}.Lost(id, errors.New("reset")) }

// TestRouterOrdersGapBeforeHeldMessages: messages that a replacement connection read after a
// topic's acknowledgement, before the event loop stepped it, wait for the gap marker.
func TestRouterOrdersGapBeforeHeldMessages(t *testing.T) {
	h := newPubSubHarness(t, nil)
	news := fsm.Topic{Kind: fsm.TopicChannel, Name: "news"}
	box := NewMailbox(8)
	h.router.Join(fsm.MachinePubSub, []fsm.Topic{news}, box)
	var granted Grant
	h.eng.Subscribe(fsm.MachinePubSub, []fsm.Topic{news}, func(g Grant) {
		h.router.Granted(g.ConnID, []fsm.Topic{news})
		granted = g
	})
	h.run()
	first := h.open("")[0]
	h.router.Acked(first, news)
	// A message read right after the acknowledgement, before the loop granted the subscription,
	// is held and delivered with the grant, without a gap.
	h.router.Message(first, PubSubMessage{Topic: news, Channel: "news", Payload: "m1"})
	if box.Len() != 0 {
		t.Fatal("message delivered before the machine decided")
	}
	h.run()
	if granted.Outcome != fsm.OutcomeGranted {
		t.Fatalf("grant %+v", granted)
	}
	lose(h.eng, first)
	h.run()
	second := h.open("")[0] // no policy: replaced at once
	h.router.Acked(second, news)
	h.router.Message(second, PubSubMessage{Topic: news, Channel: "news", Payload: "m2"})
	h.run()
	h.router.Message(second, PubSubMessage{Topic: news, Channel: "news", Payload: "m3"})
	var got []string
	for {
		d, ok, _, _, _ := box.Take()
		if !ok {
			break
		}
		got = append(got, d.Kind.String()+":"+d.Payload)
	}
	want := []string{"message:m1", "gap:", "message:m2", "message:m3"}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("got %v, want %v", got, want)
		}
	}
}

// TestPubSubMeasurementOfCancelledWait: a scheduled attempt is measured when it is scheduled,
// so its measurement stays when disposal cancels the wait; the subscription ends closed.
func TestPubSubMeasurementOfCancelledWait(t *testing.T) {
	h := newPubSubHarness(t, &fsm.Policy{InitialDelay: time.Hour})
	news := fsm.Topic{Kind: fsm.TopicChannel, Name: "news"}
	box := NewMailbox(4)
	h.router.Join(fsm.MachinePubSub, []fsm.Topic{news}, box)
	h.eng.Subscribe(fsm.MachinePubSub, []fsm.Topic{news}, func(Grant) {})
	h.run()
	id := h.open("")[0]
	h.router.Acked(id, news)
	h.run()
	lose(h.eng, id)
	h.run()
	if len(h.rt.timers) != 1 {
		t.Fatalf("%d timers, want the scheduled attempt's", len(h.rt.timers))
	}
	h.eng.Close()
	h.run()
	if len(h.rt.timers) != 0 {
		t.Fatal("disposal left the delay armed")
	}
	if _, ok, ended, reason, _ := box.Take(); ok || !ended || reason != fsm.EndClosed {
		t.Fatalf("subscription after Close: ended %v reason %v", ended, reason)
	}
	var rm metricdata.ResourceMetrics
	if err := h.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	attempts := 0
	for _, sm := range rm.ScopeMetrics {
		for _, md := range sm.Metrics {
			if d, ok := md.Data.(metricdata.Histogram[int64]); ok && md.Name == "respire.connection.reconnect.attempt" {
				attempts += int(d.DataPoints[0].Count)
			}
		}
	}
	if attempts != 1 {
		t.Fatalf("%d attempt measurements, want the cancelled one", attempts)
	}
}
