package wire

import (
	"testing"

	"github.com/respire-go/respire/engine"
	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/netio/resp"
)

// recordingReceiver counts what a subscriber connection reports to the engine.
type recordingReceiver struct {
	acks, rejections int
	messages         []engine.PubSubMessage
}

func (r *recordingReceiver) Acked(fsm.ConnID, fsm.Topic)           { r.acks++ }
func (r *recordingReceiver) Rejected(fsm.ConnID, fsm.Topic, error) { r.rejections++ }
func (r *recordingReceiver) Message(_ fsm.ConnID, m engine.PubSubMessage) {
	r.messages = append(r.messages, m)
}

// maintPushes are a managed service's notices as a subscriber connection reads them, with
// fields that look like a message's (a channel named like the subscribed one, a payload).
func maintPushes() []resp.Value {
	push := func(v resp.Value) resp.Value { v.Kind = resp.KindPush; return v }
	b := resp.BulkString
	moving := resp.PushOf(b("MOVING"), b("3"), b("5"), resp.NullValue())
	return []resp.Value{
		push(resp.BulkStrings("MIGRATING", "1", "10", "a")),
		push(resp.BulkStrings("MIGRATED", "2", "a")),
		moving,
		push(resp.BulkStrings("MOVING", "4", "5", "r2:6379")),
		push(resp.BulkStrings("FAILING_OVER", "5", "10", "shard-1")),
		push(resp.BulkStrings("FAILED_OVER", "6", "shard-1")),
		push(resp.BulkStrings("SMIGRATING", "7", "0-100")),
		push(resp.BulkStrings("SMIGRATED", "8")),
	}
}

// TestSubscriberMaintNoticesAreNotMessages: a maintenance notice read by a RESP3 subscriber
// connection is a push of another kind (FramePush, for the push handler): never a message, an
// acknowledgement or a reply, so it is never delivered to a subscription, and it does not
// disturb the matching of a pending subscription's acknowledgement that follows it.
func TestSubscriberMaintNoticesAreNotMessages(t *testing.T) {
	var s Subscriber
	s.Init(engine.Endpoint{Host: "r1", Port: 6379}, 5, 3)
	a := fsm.Topic{Kind: fsm.TopicChannel, Name: "a"}
	s.Subscribe(nil, []fsm.Topic{a}, false)
	var recv recordingReceiver
	for _, v := range maintPushes() {
		if !IsMaintNotice(&v) {
			t.Fatalf("%s: not a maintenance notice", v.Elem(0).Str)
		}
		f := read(t, &s, v)
		f.ReportTo(&recv, 5)
		if f.Kind != FramePush || s.Owed() != 1 {
			t.Fatalf("%s: frame kind %d, owed %d; want a push, the acknowledgement still owed", v.Elem(0).Str, f.Kind, s.Owed())
		}
	}
	if len(recv.messages) != 0 || recv.acks != 0 || recv.rejections != 0 {
		t.Fatalf("notices reported as %d messages %v, %d acks, %d refusals", len(recv.messages), recv.messages, recv.acks, recv.rejections)
	}
	// The connection goes on: the acknowledgement, then a message, are what they are.
	for _, v := range []resp.Value{event(3, "subscribe", "a", "1"), event(3, "message", "a", "hi")} {
		f := read(t, &s, v)
		f.ReportTo(&recv, 5)
	}
	if recv.acks != 1 || len(recv.messages) != 1 || recv.messages[0].Payload != "hi" || s.Owed() != 0 {
		t.Fatalf("after the notices: %d acks, messages %v, owed %d", recv.acks, recv.messages, s.Owed())
	}
}
