package check

import (
	"strings"
	"testing"
	"time"

	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/sim/record"
	"github.com/respire-go/respire/sim/scenario"
)

var (
	regConn1 = fsm.ConnID(fsm.IDBase(fsm.MachinePubSub) + 1)
	regConn2 = fsm.ConnID(fsm.IDBase(fsm.MachinePubSub) + 3)
	news     = fsm.Topic{Kind: fsm.TopicChannel, Name: "news"}
)

func pubsubResult(rec *record.PubSubRecords, steps ...record.Step) *record.Result {
	sc, _ := scenario.Parse([]byte("name: synthetic\nduration: 10s\n"))
	return &record.Result{Scenario: sc, PubSub: rec, Steps: steps, End: 10 * time.Second}
}

func wantViolation(t *testing.T, c Checker, r *record.Result, substr string) {
	t.Helper()
	vs := c.Check(r)
	for _, v := range vs {
		if strings.Contains(v.Message, substr) {
			return
		}
	}
	t.Fatalf("%s: want a violation containing %q, got %v", c.Name(), substr, vs)
}

func wantClean(t *testing.T, c Checker, r *record.Result) {
	t.Helper()
	if vs := c.Check(r); len(vs) > 0 {
		t.Fatalf("%s: unexpected violations %v", c.Name(), vs)
	}
}

// TestPubSubSubscriptionsSynthetic: synthetic positive and negative controls of
// pubsub-subscriptions.
func TestPubSubSubscriptionsSynthetic(t *testing.T) {
	sports := fsm.Topic{Kind: fsm.TopicChannel, Name: "sports"}
	clean := &record.PubSubRecords{Snapshots: []record.SubscriptionSnapshot{{Machine: fsm.MachinePubSub,
		Server: []record.ServerSub{{Conn: regConn2, Topic: news}, {Conn: regConn2, Topic: sports}}, Desired: []fsm.Topic{news, sports}}}}
	wantClean(t, PubSubSubscriptions{}, pubsubResult(clean))
	dup := &record.PubSubRecords{Snapshots: []record.SubscriptionSnapshot{{Machine: fsm.MachinePubSub,
		Server: []record.ServerSub{{Conn: regConn1, Topic: news}, {Conn: regConn2, Topic: news}}, Desired: []fsm.Topic{news}}}}
	wantViolation(t, PubSubSubscriptions{}, pubsubResult(dup), "subscribed on 2 connections")
	extra := &record.PubSubRecords{Snapshots: []record.SubscriptionSnapshot{{Machine: fsm.MachinePubSub,
		Server: []record.ServerSub{{Conn: regConn2, Topic: news}, {Conn: regConn2, Topic: sports}}, Desired: []fsm.Topic{news}}}}
	wantViolation(t, PubSubSubscriptions{}, pubsubResult(extra), "which no subscription wants")
	missing := &record.PubSubRecords{Snapshots: []record.SubscriptionSnapshot{{Machine: fsm.MachinePubSub,
		Server: []record.ServerSub{{Conn: regConn2, Topic: news}}, Desired: []fsm.Topic{news, sports}}}}
	wantViolation(t, PubSubSubscriptions{}, pubsubResult(missing), "wanted but not subscribed")
}

// TestPubSubGapsSynthetic: synthetic positive and negative controls of pubsub-gaps.
func TestPubSubGapsSynthetic(t *testing.T) {
	base := func() *record.PubSubRecords {
		return &record.PubSubRecords{
			Subscribes: []record.SubscribeOp{{Subscriber: 0, Machine: fsm.MachinePubSub, Topics: []fsm.Topic{news}, Return: 10 * time.Millisecond, Outcome: "granted", Conn: regConn1}},
			Published: []record.Published{
				{At: 20 * time.Millisecond, Channel: "news", Payload: "m1", Conns: []fsm.ConnID{regConn1}},
				{At: 900 * time.Millisecond, Channel: "news", Payload: "m2", Conns: []fsm.ConnID{regConn2}},
			},
			ServerAcks: []record.ServerAck{{At: 5 * time.Millisecond, Conn: regConn1, Topic: news}, {At: 800 * time.Millisecond, Conn: regConn2, Topic: news}},
		}
	}
	msg := func(at time.Duration, payload string, conn fsm.ConnID) record.Received {
		return record.Received{Op: 0, At: at, Kind: "message", Topic: news, Channel: "news", Payload: payload, Conn: conn}
	}
	gap := record.Received{Op: 0, At: 850 * time.Millisecond, Kind: "gap", Topic: news}
	ok := base()
	ok.Received = []record.Received{msg(21*time.Millisecond, "m1", regConn1), gap, msg(901*time.Millisecond, "m2", regConn2)}
	wantClean(t, PubSubGaps{}, pubsubResult(ok))
	noGap := base()
	noGap.Received = []record.Received{msg(21*time.Millisecond, "m1", regConn1), msg(901*time.Millisecond, "m2", regConn2)}
	wantViolation(t, PubSubGaps{}, pubsubResult(noGap), "without a gap marker")
	overflow := base()
	overflow.Received = []record.Received{msg(21*time.Millisecond, "m1", regConn1), {Op: 0, At: 850 * time.Millisecond, Kind: "overflow", Dropped: 3}, msg(901*time.Millisecond, "m2", regConn2)}
	wantClean(t, PubSubGaps{}, pubsubResult(overflow))
	phantom := base()
	phantom.Received = []record.Received{msg(21*time.Millisecond, "m1", regConn2)}
	wantViolation(t, PubSubGaps{}, pubsubResult(phantom), "which no node delivered there")
	twice := base()
	twice.Received = []record.Received{msg(21*time.Millisecond, "m1", regConn1), msg(22*time.Millisecond, "m1", regConn1)}
	wantViolation(t, PubSubGaps{}, pubsubResult(twice), "twice")
	unfounded := base()
	unfounded.ServerAcks = unfounded.ServerAcks[:1]
	unfounded.Received = []record.Received{gap}
	wantViolation(t, PubSubGaps{}, pubsubResult(unfounded), "without a matching resubscription")
}

func emitStep(at time.Duration, m fsm.Machine, l fsm.Lifecycle) fsm.Effect {
	l.Source, l.Slot = fsm.SourcePubSub, -1
	return fsm.Effect{Kind: fsm.Emit, Machine: m, Lifecycle: l}
}

// TestPubSubExhaustionSynthetic: synthetic positive and negative controls of
// pubsub-exhaustion.
func TestPubSubExhaustionSynthetic(t *testing.T) {
	exhaust := record.Step{Event: fsm.Event{Kind: fsm.DialFailed, At: time.Second, Conn: regConn2},
		Effects: []fsm.Effect{emitStep(time.Second, fsm.MachinePubSub, fsm.Lifecycle{SourceState: fsm.SourceDisconnected, Exhausted: true, Attempt: 2})}}
	subs := []record.SubscribeOp{
		{Subscriber: 0, Machine: fsm.MachinePubSub, Return: 10 * time.Millisecond, Outcome: "granted"},
		{Subscriber: 1, Machine: fsm.MachineShardedPubSub, Return: 10 * time.Millisecond, Outcome: "granted"},
	}
	ok := &record.PubSubRecords{Subscribes: subs, Received: []record.Received{
		{Subscriber: 0, Op: 0, At: time.Second, Kind: record.ReceivedEnd, Reason: fsm.EndReconnectExhausted},
		{Subscriber: 1, Op: 1, At: 9 * time.Second, Kind: record.ReceivedEnd, Reason: fsm.EndClosed},
	}}
	wantClean(t, PubSubExhaustion{}, pubsubResult(ok, exhaust))
	kept := &record.PubSubRecords{Subscribes: subs, Received: []record.Received{
		{Subscriber: 0, Op: 0, At: 9 * time.Second, Kind: record.ReceivedEnd, Reason: fsm.EndClosed},
	}}
	wantViolation(t, PubSubExhaustion{}, pubsubResult(kept, exhaust), "it ended closed")
	other := &record.PubSubRecords{Subscribes: subs, Received: []record.Received{
		{Subscriber: 0, Op: 0, At: time.Second, Kind: record.ReceivedEnd, Reason: fsm.EndReconnectExhausted},
		{Subscriber: 1, Op: 1, At: time.Second, Kind: record.ReceivedEnd, Reason: fsm.EndReconnectExhausted},
	}}
	wantViolation(t, PubSubExhaustion{}, pubsubResult(other, exhaust), "although sharded-pubsub had not exhausted")
	late := &record.PubSubRecords{Subscribes: append(append([]record.SubscribeOp(nil), subs...),
		record.SubscribeOp{Subscriber: 2, Machine: fsm.MachinePubSub, Call: 2 * time.Second, Return: 2 * time.Second, Outcome: "granted"}),
		Received: ok.Received}
	wantViolation(t, PubSubExhaustion{}, pubsubResult(late, exhaust), "want the reconnect limit")
	dial := record.Step{Event: fsm.Event{Kind: fsm.Demanded, At: 3 * time.Second, Machine: fsm.MachinePubSub},
		Effects: []fsm.Effect{{Kind: fsm.Dial, Machine: fsm.MachinePubSub, Slot: -1, Conn: regConn2 + 10}}}
	wantViolation(t, PubSubExhaustion{}, pubsubResult(ok, exhaust, dial), "dialed after its exhaustion")
}

// TestPubSubPolicySynthetic: synthetic positive and negative controls of pubsub-policy, on
// hand-written step sequences of the regular episode.
func TestPubSubPolicySynthetic(t *testing.T) {
	m := fsm.MachinePubSub
	c1, c2, c3 := regConn1, regConn2, regConn2+2
	dial := func(c fsm.ConnID, attempt int) fsm.Effect {
		return fsm.Effect{Kind: fsm.Dial, Machine: m, Slot: -1, Conn: c, Attempt: attempt}
	}
	ready := []record.Step{
		{Event: fsm.Event{Kind: fsm.Demanded, Machine: m}, Effects: []fsm.Effect{dial(c1, 0)}},
		{Event: fsm.Event{Kind: fsm.HandshakeDone, Conn: c1}, Effects: []fsm.Effect{emitStep(0, m, fsm.Lifecycle{SourceState: fsm.SourceConnected})}},
	}
	lost := record.Step{Event: fsm.Event{Kind: fsm.ConnLost, At: time.Second, Conn: c1}, Effects: []fsm.Effect{
		dial(c2, 0)}}
	failed := record.Step{Event: fsm.Event{Kind: fsm.DialFailed, At: time.Second + time.Millisecond, Conn: c2}, Effects: []fsm.Effect{
		{Kind: fsm.ArmTimer, Machine: m, Timer: 7, After: 250 * time.Millisecond},
		emitStep(0, m, fsm.Lifecycle{SourceState: fsm.SourceConnecting, Scheduled: true, NextDelay: 250 * time.Millisecond})}}
	fired := record.Step{Event: fsm.Event{Kind: fsm.TimerFired, At: time.Second + 251*time.Millisecond, Timer: 7}, Effects: []fsm.Effect{dial(c3, 0)}}
	steps := append(append([]record.Step(nil), ready...), lost, failed, fired)
	wantClean(t, PubSubPolicy{}, &record.Result{Steps: steps})

	// Without a policy the first replacement is immediate.
	delayed := record.Step{Event: lost.Event, Effects: []fsm.Effect{{Kind: fsm.ArmTimer, Machine: m, Timer: 6, After: 250 * time.Millisecond}}}
	wantViolation(t, PubSubPolicy{}, &record.Result{Steps: append(append([]record.Step(nil), ready...), delayed)}, "first replacement must be immediate")
	// A wrong wait.
	wrong := failed
	wrong.Effects = []fsm.Effect{{Kind: fsm.ArmTimer, Machine: m, Timer: 7, After: 300 * time.Millisecond}}
	wantViolation(t, PubSubPolicy{}, &record.Result{Steps: append(append([]record.Step(nil), ready...), lost, wrong)}, "want 250ms")
	// A dial before the delay expired.
	early := fired
	early.Event.At = time.Second + 100*time.Millisecond
	wantViolation(t, PubSubPolicy{}, &record.Result{Steps: append(append([]record.Step(nil), ready...), lost, failed, early)}, "scheduled delay was 250ms")
	// A competing connection while one is open.
	competing := record.Step{Event: fsm.Event{Kind: fsm.Demanded, Machine: m}, Effects: []fsm.Effect{dial(c2, 0)}}
	wantViolation(t, PubSubPolicy{}, &record.Result{Steps: append(append([]record.Step(nil), ready...), competing)}, "competing connection")
	// A subscription during recovery dials.
	during := record.Step{Event: fsm.Event{Kind: fsm.Demanded, At: time.Second + 10*time.Millisecond, Machine: m}, Effects: []fsm.Effect{dial(c3, 0)}}
	wantViolation(t, PubSubPolicy{}, &record.Result{Steps: append(append([]record.Step(nil), ready...), lost, failed, during)}, "during recovery opened a connection")
	// Disposal that leaves the delay armed.
	dispose := record.Step{Event: fsm.Event{Kind: fsm.Disposed, At: 2 * time.Second}}
	wantViolation(t, PubSubPolicy{}, &record.Result{Steps: append(append([]record.Step(nil), ready...), lost, failed, dispose)}, "did not cancel the scheduled delay")
	// With a policy: attempts count failed connections and resubscriptions alike.
	p := &fsm.Policy{InitialDelay: 100 * time.Millisecond, MaxAttempts: 2}
	plost := record.Step{Event: lost.Event, Effects: []fsm.Effect{{Kind: fsm.ArmTimer, Machine: m, Timer: 8, After: 100 * time.Millisecond},
		emitStep(0, m, fsm.Lifecycle{SourceState: fsm.SourceConnecting, Attempt: 1, Scheduled: true, NextDelay: 100 * time.Millisecond})}}
	pfire := record.Step{Event: fsm.Event{Kind: fsm.TimerFired, At: time.Second + 100*time.Millisecond, Timer: 8}, Effects: []fsm.Effect{dial(c2, 1)}}
	phs := record.Step{Event: fsm.Event{Kind: fsm.HandshakeDone, At: time.Second + 103*time.Millisecond, Conn: c2}}
	preject := record.Step{Event: fsm.Event{Kind: fsm.Rejected, At: time.Second + 104*time.Millisecond, Conn: c2, Topic: news}, Effects: []fsm.Effect{
		{Kind: fsm.Close, Machine: m, Conn: c2}, {Kind: fsm.ArmTimer, Machine: m, Timer: 9, After: 200 * time.Millisecond},
		emitStep(0, m, fsm.Lifecycle{SourceState: fsm.SourceConnecting, Attempt: 2, Scheduled: true, NextDelay: 200 * time.Millisecond})}}
	good := append(append([]record.Step(nil), ready...), plost, pfire, phs, preject)
	wantClean(t, PubSubPolicy{Policy: p}, &record.Result{Steps: good})
	reset := preject
	reset.Effects = []fsm.Effect{{Kind: fsm.Close, Machine: m, Conn: c2},
		emitStep(0, m, fsm.Lifecycle{SourceState: fsm.SourceConnecting, Attempt: 1, Scheduled: true, NextDelay: 100 * time.Millisecond})}
	wantViolation(t, PubSubPolicy{Policy: p}, &record.Result{Steps: append(append([]record.Step(nil), ready...), plost, pfire, phs, reset)}, "scheduled attempt 1, want 2")
	leak := preject
	leak.Effects = preject.Effects[1:] // the refused replacement is not closed
	pfire2 := record.Step{Event: fsm.Event{Kind: fsm.TimerFired, At: time.Second + 304*time.Millisecond, Timer: 9}, Effects: []fsm.Effect{dial(c3, 2)}}
	wantViolation(t, PubSubPolicy{Policy: p}, &record.Result{Steps: append(append([]record.Step(nil), ready...), plost, pfire, phs, leak, pfire2)}, "competing connection")
}
