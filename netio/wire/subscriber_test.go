package wire

import (
	"errors"
	"strings"
	"testing"

	"github.com/respire-go/respire/engine"
	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/netio/resp"
)

// event builds a pub/sub event frame: a push on RESP3, an array on RESP2.
func event(proto int, words ...string) resp.Value {
	v := resp.BulkStrings(words...)
	if proto == 3 {
		v.Kind = resp.KindPush
	}
	return v
}

func read(t *testing.T, s *Subscriber, v resp.Value) Frame {
	t.Helper()
	f, err := s.Read(&v)
	if err != nil {
		t.Fatalf("Read: %v", err)
	}
	return f
}

func TestSubscriberAcksAndMessagesInBothProtocols(t *testing.T) {
	for _, proto := range []int{2, 3} {
		var s Subscriber
		s.Init(engine.Endpoint{Host: "r1", Port: 6379}, 5, proto)
		a := fsm.Topic{Kind: fsm.TopicChannel, Name: "a"}
		p := fsm.Topic{Kind: fsm.TopicPattern, Name: "p*"}
		frames := s.Subscribe(nil, []fsm.Topic{a, p}, false)
		if got := string(frames); !strings.Contains(got, "SUBSCRIBE") || !strings.Contains(got, "PSUBSCRIBE") || s.Owed() != 2 {
			t.Fatalf("proto %d: frames %q, owed %d", proto, got, s.Owed())
		}
		if f := read(t, &s, event(proto, "subscribe", "a", "1")); f.Kind != FrameAcked || f.Topic != a {
			t.Fatalf("proto %d: subscribe ack: %+v", proto, f)
		}
		// A duplicate acknowledgement nobody asked for is ignored.
		if f := read(t, &s, event(proto, "subscribe", "a", "1")); f.Kind != FrameIgnored {
			t.Fatalf("proto %d: duplicate ack: %+v", proto, f)
		}
		if f := read(t, &s, event(proto, "psubscribe", "p*", "2")); f.Kind != FrameAcked || f.Topic != p || s.Owed() != 0 {
			t.Fatalf("proto %d: psubscribe ack: %+v owed %d", proto, f, s.Owed())
		}
		f := read(t, &s, event(proto, "pmessage", "p*", "px", "hello"))
		if f.Kind != FrameMessage || f.Message.Topic != p || f.Message.Channel != "px" || f.Message.Payload != "hello" {
			t.Fatalf("proto %d: pmessage: %+v", proto, f)
		}
		f = read(t, &s, event(proto, "message", "a", "hi"))
		if f.Kind != FrameMessage || f.Message.Topic != a || f.Message.Payload != "hi" {
			t.Fatalf("proto %d: message: %+v", proto, f)
		}
		// A short pmessage is a protocol error in both protocols.
		short := event(proto, "pmessage", "p*", "px")
		var pe *resp.ProtocolError
		if _, err := s.Read(&short); !errors.As(err, &pe) {
			t.Fatalf("proto %d: short pmessage: %v", proto, err)
		}
		// Unsubscription acknowledgements are matched but not reported.
		s.Subscribe(nil, []fsm.Topic{a}, true)
		if f := read(t, &s, event(proto, "unsubscribe", "a", "0")); f.Kind != FrameIgnored || s.Owed() != 0 {
			t.Fatalf("proto %d: unsubscribe ack: %+v owed %d", proto, f, s.Owed())
		}
	}
}

func TestSubscriberAckMatchesTheOldestBatchOfItsDirectionThatNamesIt(t *testing.T) {
	var s Subscriber
	s.Init(engine.Endpoint{Host: "r1", Port: 6379}, 5, 3)
	a := fsm.Topic{Kind: fsm.TopicChannel, Name: "a"}
	b := fsm.Topic{Kind: fsm.TopicChannel, Name: "b"}
	s.Subscribe(nil, []fsm.Topic{a}, true)  // UNSUBSCRIBE a
	s.Subscribe(nil, []fsm.Topic{a}, false) // SUBSCRIBE a
	s.Subscribe(nil, []fsm.Topic{b}, false) // SUBSCRIBE b
	// The subscribe acknowledgement of a skips the unsubscription and goes to SUBSCRIBE a.
	if f := read(t, &s, event(3, "subscribe", "a", "1")); f.Kind != FrameAcked || f.Topic != a {
		t.Fatalf("ack: %+v", f)
	}
	if s.Owed() != 3 {
		t.Fatalf("the unsubscription still heads the queue: owed %d", s.Owed())
	}
	// A refusal goes to the oldest command without acknowledgements: the unsubscription, which
	// reports no topics.
	refusal := resp.ErrorValue("ERR nope")
	if f := read(t, &s, refusal); f.Kind != FrameRejected || len(f.Topics) != 0 || s.Owed() != 1 {
		t.Fatalf("refused unsubscription: %+v owed %d", f, s.Owed())
	}
	// Then SUBSCRIBE b is the oldest without acknowledgements.
	f := read(t, &s, resp.ErrorValue("NOPERM this user has no permissions to access one of the channels used as arguments"))
	var se *SubscribeError
	if f.Kind != FrameRejected || len(f.Topics) != 1 || f.Topics[0] != b || !errors.As(f.Err, &se) || se.Code != "NOPERM" || s.Owed() != 0 {
		t.Fatalf("refused subscription: %+v", f)
	}
}

func TestSubscriberCommandsAndStrayReplies(t *testing.T) {
	var s Subscriber
	s.Init(engine.Endpoint{Host: "r1", Port: 6379}, 5, 3)
	var pe *resp.ProtocolError
	stray := resp.SimpleString("PONG")
	if _, err := s.Read(&stray); !errors.As(err, &pe) {
		t.Fatalf("reply with nothing owed: %v", err)
	}
	a := fsm.Topic{Kind: fsm.TopicChannel, Name: "a"}
	s.Subscribe(nil, []fsm.Topic{a}, false)
	ping := &engine.Command{Name: "PING"}
	s.Send(ping)
	if s.CommandsPending() != 1 || s.Owed() != 2 {
		t.Fatalf("pending %d owed %d", s.CommandsPending(), s.Owed())
	}
	// A plain reply while the subscription has no acknowledgement is not the command's: it is a
	// protocol error (the subscription command heads the queue).
	pong := resp.SimpleString("PONG")
	if _, err := s.Read(&pong); !errors.As(err, &pe) {
		t.Fatalf("reply before the acknowledgement: %v", err)
	}
	read(t, &s, event(3, "subscribe", "a", "1"))
	// A push that is no pub/sub event goes to the push handler, completing nothing.
	if f := read(t, &s, resp.Value{Kind: resp.KindPush}); f.Kind != FramePush || s.CommandsPending() != 1 {
		t.Fatalf("push: %+v", f)
	}
	if f := read(t, &s, resp.SimpleString("PONG")); f.Kind != FrameReply || f.Cmd != ping || s.Owed() != 0 {
		t.Fatalf("command reply: %+v", f)
	}
	s.Send(&engine.Command{Name: "PING"})
	if cmds := s.TakeCommands(); len(cmds) != 1 || s.Owed() != 0 {
		t.Fatalf("take: %d commands, owed %d", len(cmds), s.Owed())
	}
}
