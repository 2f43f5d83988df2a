package check

import (
	"maps"
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/sim/record"
)

// Names of the pub/sub checkers.
const (
	CheckPubSubSubscriptions = "pubsub-subscriptions"
	CheckPubSubGaps          = "pubsub-gaps"
	CheckPubSubExhaustion    = "pubsub-exhaustion"
	CheckPubSubPolicy        = "pubsub-policy"
	CheckExpectPubSub        = "expect-pubsub"
)

var pubsubMachines = [2]fsm.Machine{fsm.MachinePubSub, fsm.MachineShardedPubSub}

// PubSubSubscriptions checks the nodes' subscription sets (the ground truth) after every
// completed pub/sub (re)connection and at the end of the run: each topic is subscribed on one
// connection of its episode only, and the subscribed topics are exactly those the application's
// live subscriptions want (DESIGN checker 7).
type PubSubSubscriptions struct{}

// Name implements Checker.
func (PubSubSubscriptions) Name() string { return CheckPubSubSubscriptions }

// Check implements Checker.
func (PubSubSubscriptions) Check(r *record.Result) []Violation {
	if r.PubSub == nil {
		return nil
	}
	var out []Violation
	for _, s := range r.PubSub.Snapshots {
		where := s.Machine.String()
		if s.End {
			where += " at the end of the run"
		}
		on := map[fsm.Topic][]fsm.ConnID{}
		for _, x := range s.Server {
			on[x.Topic] = append(on[x.Topic], x.Conn)
		}
		desired := map[fsm.Topic]bool{}
		for _, t := range s.Desired {
			desired[t] = true
		}
		for _, t := range sortedTopics(on) {
			if len(on[t]) > 1 {
				out = append(out, violation(CheckPubSubSubscriptions, s.At, where+": "+topicText(t)+" subscribed on "+itoa(len(on[t]))+" connections"))
			}
			if !desired[t] {
				out = append(out, violation(CheckPubSubSubscriptions, s.At, where+": the server keeps "+topicText(t)+", which no subscription wants"))
			}
		}
		for _, t := range s.Desired {
			if len(on[t]) == 0 {
				out = append(out, violation(CheckPubSubSubscriptions, s.At, where+": "+topicText(t)+" is wanted but not subscribed on the server"))
			}
		}
	}
	return out
}

func sortedTopics[V any](m map[fsm.Topic]V) []fsm.Topic {
	out := make([]fsm.Topic, 0, len(m))
	for t := range m {
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Less(out[j]) })
	return out
}

// PubSubGaps checks what subscribers received against what the nodes delivered: every message
// was delivered by a node on the connection it arrived on, at most once per subscription; a
// message that arrives on a connection other than the topic's previous messages' is preceded by
// a gap marker (or an overflow marker, which stands for lost entries) since those; and every gap
// marker follows a resubscription the server acknowledged (DESIGN checker 7).
type PubSubGaps struct{}

// Name implements Checker.
func (PubSubGaps) Name() string { return CheckPubSubGaps }

type streamKey struct {
	op    int
	topic fsm.Topic
}

type streamState struct {
	lastConn fsm.ConnID
	marked   bool
	gaps     int
}

// Check implements Checker.
func (PubSubGaps) Check(r *record.Result) []Violation {
	ps := r.PubSub
	if ps == nil {
		return nil
	}
	var out []Violation
	type delivery struct {
		payload string
		conn    fsm.ConnID
	}
	delivered := map[delivery]string{} // payload and connection -> channel
	for _, p := range ps.Published {
		for _, c := range p.Conns {
			delivered[delivery{p.Payload, c}] = p.Channel
		}
	}
	streams := map[streamKey]*streamState{}
	seen := map[streamKey]map[string]bool{}
	stream := func(x record.Received) (streamKey, *streamState) {
		k := streamKey{x.Op, x.Topic}
		if streams[k] == nil {
			streams[k] = &streamState{}
			seen[k] = map[string]bool{}
		}
		return k, streams[k]
	}
	for _, x := range ps.Received {
		switch x.Kind {
		case "message":
			k, st := stream(x)
			if ch, ok := delivered[delivery{x.Payload, x.Conn}]; !ok || ch != x.Channel {
				out = append(out, violation(CheckPubSubGaps, x.At, "subscriber "+itoa(x.Subscriber)+" received "+x.Payload+" on conn "+
					u(uint64(x.Conn))+", which no node delivered there"))
			}
			if seen[k][x.Payload] {
				out = append(out, violation(CheckPubSubGaps, x.At, "subscriber "+itoa(x.Subscriber)+" received "+x.Payload+" twice on "+topicText(x.Topic)))
			}
			seen[k][x.Payload] = true
			if st.lastConn != 0 && x.Conn != st.lastConn && !st.marked {
				out = append(out, violation(CheckPubSubGaps, x.At, "subscriber "+itoa(x.Subscriber)+": "+topicText(x.Topic)+" message "+x.Payload+
					" arrived on conn "+u(uint64(x.Conn))+" after conn "+u(uint64(st.lastConn))+" without a gap marker"))
			}
			st.lastConn, st.marked = x.Conn, false
		case "gap":
			_, st := stream(x)
			st.marked = true
			st.gaps++
			if x.Op < 0 || x.Op >= len(ps.Subscribes) {
				continue
			}
			op := ps.Subscribes[x.Op]
			acks := 0
			for _, a := range ps.ServerAcks {
				if !a.Unsubscribe && a.Topic == x.Topic && a.Conn != op.Conn && fsm.MachineOf(uint64(a.Conn)) == op.Machine &&
					a.At >= op.Return && a.At <= x.At {
					acks++
				}
			}
			if st.gaps > acks {
				out = append(out, violation(CheckPubSubGaps, x.At, "subscriber "+itoa(x.Subscriber)+": gap marker "+itoa(st.gaps)+" for "+
					topicText(x.Topic)+" without a matching resubscription acknowledged by the server"))
			}
		case "overflow":
			for k, st := range streams {
				if k.op == x.Op {
					st.marked = true
				}
			}
		}
	}
	return out
}

// PubSubExhaustion checks that exhaustion ends every subscription of its episode and no other:
// each subscription of the exhausted kind live at that moment ends with reconnect-exhausted,
// later subscriptions of that kind fail with the reconnect limit and the episode never dials
// again, while no subscription of an episode that did not exhaust ends that way.
type PubSubExhaustion struct{}

// Name implements Checker.
func (PubSubExhaustion) Name() string { return CheckPubSubExhaustion }

// Check implements Checker.
func (PubSubExhaustion) Check(r *record.Result) []Violation {
	ps := r.PubSub
	if ps == nil {
		return nil
	}
	var out []Violation
	exhaustedAt := map[fsm.Machine]time.Duration{}
	for _, st := range r.Steps {
		for _, f := range st.Effects {
			if f.Machine != fsm.MachinePubSub && f.Machine != fsm.MachineShardedPubSub {
				continue
			}
			at, done := exhaustedAt[f.Machine]
			if f.Kind == fsm.Emit && f.Lifecycle.Exhausted && !done {
				exhaustedAt[f.Machine] = st.Event.At
			}
			if done && f.Kind == fsm.Dial {
				out = append(out, violation(CheckPubSubExhaustion, st.Event.At, f.Machine.String()+" dialed after its exhaustion at "+at.String()))
			}
		}
	}
	ends := map[int]record.Received{}
	for _, x := range ps.Received {
		if x.Kind == record.ReceivedEnd {
			ends[x.Op] = x
		}
	}
	for i, op := range ps.Subscribes {
		at, exhausted := exhaustedAt[op.Machine]
		end, ended := ends[i]
		switch {
		case op.Outcome == "granted" && exhausted && op.Return <= at && (!ended || end.At >= at):
			if !ended || end.Reason != fsm.EndReconnectExhausted {
				why := "it never ended"
				if ended {
					why = "it ended " + end.Reason.String()
				}
				out = append(out, violation(CheckPubSubExhaustion, at, "subscription "+itoa(i)+" of subscriber "+itoa(op.Subscriber)+
					" was live when "+op.Machine.String()+" exhausted, but "+why))
			}
		case ended && end.Reason == fsm.EndReconnectExhausted:
			out = append(out, violation(CheckPubSubExhaustion, end.At, "subscription "+itoa(i)+" of subscriber "+itoa(op.Subscriber)+
				" ended reconnect-exhausted although "+op.Machine.String()+" had not exhausted"))
		}
		if exhausted && op.Call > at && op.Outcome != "exhausted" && op.Outcome != "closed" {
			out = append(out, violation(CheckPubSubExhaustion, op.Call, "subscription "+itoa(i)+" to "+op.Machine.String()+
				" after its exhaustion answered "+op.Outcome+", want the reconnect limit"))
		}
	}
	return out
}

// PubSubPolicy checks each pub/sub episode's attempts against the spec, recomputing the budget
// from the events: without a policy the first replacement is immediate and later waits are
// 250 ms doubling to 5 s; with one, attempt n waits within its jitter band and every failed
// connection or resubscription of the recovery consumes one attempt, numbered 1, 2, 3...; each
// scheduled dial happens exactly after its delay; one connection per episode at a time (no
// competing connection, a failed resubscription's replacement closed before the next attempt);
// a subscription during recovery dials nothing; the initial connection is made for a demand
// only; nothing dials after exhaustion or disposal, and disposal cancels the delay and the
// attempt in progress.
type PubSubPolicy struct {
	// Policy is the scenario's reconnect policy, or nil.
	Policy *fsm.Policy
}

// Name implements Checker.
func (PubSubPolicy) Name() string { return CheckPubSubPolicy }

type episodeTrack struct {
	established, recovering, exhausted, closed bool
	failures                                   int
	open                                       map[fsm.ConnID]bool
	ready                                      map[fsm.ConnID]bool
	scheduled                                  bool
	scheduledAt, scheduledDelay                time.Duration
	scheduledAttempt                           int
	timer                                      fsm.TimerID
}

// Check implements Checker.
func (c PubSubPolicy) Check(r *record.Result) []Violation {
	var out []Violation
	tracks := map[fsm.Machine]*episodeTrack{}
	for _, m := range pubsubMachines {
		tracks[m] = &episodeTrack{open: map[fsm.ConnID]bool{}, ready: map[fsm.ConnID]bool{}}
	}
	bad := func(at time.Duration, m fsm.Machine, msg string) {
		out = append(out, violation(CheckPubSubPolicy, at, m.String()+": "+msg))
	}
	p := c.Policy
	for _, st := range r.Steps {
		ev := &st.Event
		at := ev.At
		// The event's own meaning for each episode.
		var target fsm.Machine = ev.Machine
		switch ev.Kind {
		case fsm.DialSucceeded, fsm.HandshakeDone, fsm.DialFailed, fsm.ConnLost, fsm.Acked, fsm.Rejected:
			target = fsm.MachineOf(uint64(ev.Conn))
		case fsm.TimerFired:
			target = fsm.MachineOf(uint64(ev.Timer))
		}
		if t := tracks[target]; t != nil {
			switch ev.Kind {
			case fsm.HandshakeDone:
				if t.open[ev.Conn] {
					t.ready[ev.Conn] = true
				}
			case fsm.DialFailed, fsm.ConnLost:
				if t.open[ev.Conn] {
					wasReady := t.ready[ev.Conn]
					delete(t.open, ev.Conn)
					delete(t.ready, ev.Conn)
					switch {
					case wasReady && t.established:
						t.established, t.recovering, t.failures = false, true, 0
					case t.recovering:
						t.failures++
					}
				}
			case fsm.Rejected:
				if t.open[ev.Conn] && t.recovering {
					t.failures++
				}
			}
		}
		shutdown := ev.Kind == fsm.Disposed || ev.Kind == fsm.Retired
		cancelled := map[fsm.Machine]bool{}
		closed := map[fsm.ConnID]bool{}
		for _, f := range st.Effects {
			t := tracks[f.Machine]
			if t == nil {
				continue
			}
			m := f.Machine
			switch f.Kind {
			case fsm.Dial:
				switch {
				case t.closed:
					bad(at, m, "dialed after disposal")
				case t.exhausted:
					bad(at, m, "dialed after exhaustion")
				case len(t.open) > 0:
					bad(at, m, "dialed conn "+u(uint64(f.Conn))+" while another connection of the episode was open (a competing connection)")
				}
				if ev.Kind == fsm.Demanded && t.recovering {
					bad(at, m, "a subscription during recovery opened a connection")
				}
				want := 0
				if t.recovering && p != nil {
					want = t.failures + 1
				}
				if f.Attempt != want {
					bad(at, m, "dialed attempt "+itoa(f.Attempt)+", want "+itoa(want))
				}
				if p != nil && p.MaxAttempts > 0 && f.Attempt > p.MaxAttempts {
					bad(at, m, "attempt "+itoa(f.Attempt)+" beyond MaxAttempts "+itoa(p.MaxAttempts))
				}
				switch {
				case t.scheduled:
					if ev.Kind == fsm.TimerFired && ev.Timer != t.timer && t.scheduledDelay > 0 {
						bad(at, m, "dialed on a timer that was not its delay's")
					}
					if waited := at - t.scheduledAt; waited < t.scheduledDelay || waited > t.scheduledDelay+loopLag(r) {
						bad(at, m, "attempt dialed after "+waited.String()+", its scheduled delay was "+t.scheduledDelay.String())
					}
					t.scheduled = false
				case t.recovering:
					if p != nil || t.failures > 0 {
						bad(at, m, "recovery dialed without scheduling the attempt")
					}
				case ev.Kind != fsm.Demanded:
					bad(at, m, "an initial connection was dialed without a subscription demanding it")
				}
				t.open[f.Conn] = true
			case fsm.ArmTimer:
				if !t.recovering {
					bad(at, m, "a delay was armed outside recovery")
				}
				if p == nil {
					if t.failures == 0 {
						bad(at, m, "without a policy the first replacement must be immediate, but a delay of "+f.After.String()+" was armed")
					} else if want := noPolicyWait(t.failures); f.After != want {
						bad(at, m, "waited "+f.After.String()+" after "+itoa(t.failures)+" failures, want "+want.String())
					}
				} else if lo, hi := Band(p, t.failures+1); f.After < lo || f.After > hi {
					bad(at, m, "attempt "+itoa(t.failures+1)+" delay "+f.After.String()+" outside ["+lo.String()+", "+hi.String()+"]")
				}
				t.timer = f.Timer
			case fsm.CancelTimer:
				cancelled[m] = true
				t.scheduled = false
			case fsm.Close:
				closed[f.Conn] = true
				delete(t.open, f.Conn)
				delete(t.ready, f.Conn)
			case fsm.Emit:
				l := f.Lifecycle
				if l.Source != fsm.SourcePubSub || l.Slot != -1 {
					bad(at, m, "lifecycle event with source "+l.Source.String()+" and slot "+itoa(l.Slot))
				}
				switch {
				case l.Scheduled:
					want := 0
					if p != nil {
						want = t.failures + 1
					}
					if !t.recovering || l.Attempt != want {
						bad(at, m, "scheduled attempt "+itoa(l.Attempt)+", want "+itoa(want)+" (recovering "+strconv.FormatBool(t.recovering)+")")
					}
					t.scheduled, t.scheduledAt, t.scheduledDelay, t.scheduledAttempt = true, at, l.NextDelay, l.Attempt
				case l.Exhausted:
					if p == nil || p.MaxAttempts == 0 || t.failures != p.MaxAttempts || l.Attempt != p.MaxAttempts || l.Err == nil {
						bad(at, m, "exhausted at attempt "+itoa(l.Attempt)+" after "+itoa(t.failures)+" failures")
					}
					t.exhausted = true
				case l.SourceState == fsm.SourceConnected:
					t.established, t.recovering, t.failures = true, false, 0
				}
			case fsm.Record:
				if f.Metric.Source != fsm.SourcePubSub {
					bad(at, m, "measurement with source "+f.Metric.Source.String())
				}
				if f.Metric.Instrument == fsm.InstrumentAttempt && f.Metric.Value != float64(t.failures+1) {
					bad(at, m, "attempt measurement "+u(uint64(f.Metric.Value))+" with "+itoa(t.failures)+" failures")
				}
			}
		}
		if shutdown {
			for _, m := range pubsubMachines {
				t := tracks[m]
				if t.closed {
					continue
				}
				if t.scheduled && t.scheduledDelay > 0 && !cancelled[m] {
					bad(at, m, "disposal did not cancel the scheduled delay")
				}
				for _, id := range slices.Sorted(maps.Keys(t.open)) {
					if !closed[id] {
						bad(at, m, "disposal left conn "+u(uint64(id))+" open")
					}
				}
				t.closed, t.scheduled = true, false
			}
		}
	}
	return out
}

// topicText describes a topic as `kind:"name"`.
func topicText(t fsm.Topic) string { return string(t.AppendTo(nil)) }
