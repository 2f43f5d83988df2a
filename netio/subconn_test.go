package netio_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/respire-go/respire/engine"
	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/netio"
	"github.com/respire-go/respire/netio/redistest"
	"github.com/respire-go/respire/netio/resp"
)

// pubsubRecorder is a PubSubReceiver that records what a subscriber connection read.
type pubsubRecorder struct {
	mu       sync.Mutex
	acks     []fsm.Topic
	rejected []error
	messages []engine.PubSubMessage
}

func (r *pubsubRecorder) Acked(_ fsm.ConnID, t fsm.Topic) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.acks = append(r.acks, t)
}

func (r *pubsubRecorder) Rejected(_ fsm.ConnID, _ fsm.Topic, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rejected = append(r.rejected, err)
}

func (r *pubsubRecorder) Message(_ fsm.ConnID, m engine.PubSubMessage) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.messages = append(r.messages, m)
}

func (r *pubsubRecorder) counts() (acks, rejected, messages int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.acks), len(r.rejected), len(r.messages)
}

// subSink records the outcome of a pub/sub connection attempt.
type subSink struct {
	ready chan engine.Conn
	fail  chan error
	lost  chan error
}

func newSubSink() *subSink {
	return &subSink{ready: make(chan engine.Conn, 1), fail: make(chan error, 1), lost: make(chan error, 1)}
}

func (s *subSink) Dialed(fsm.ConnID)                                  {}
func (s *subSink) Ready(_ fsm.ConnID, c engine.Conn)                  { s.ready <- c }
func (s *subSink) Failed(_ fsm.ConnID, err error, _ fsm.FailureClass) { s.fail <- err }
func (s *subSink) Lost(_ fsm.ConnID, err error)                       { s.lost <- err }

func openSubscriber(t *testing.T, cfg netio.TransportConfig, ep engine.Endpoint) (*netio.SubConn, *subSink) {
	t.Helper()
	s := newSubSink()
	netio.NewTransport(cfg).Open(context.Background(), engine.OpenRequest{
		Conn: fsm.ConnID(fsm.IDBase(fsm.MachinePubSub) + connIDs.Add(1)), Slot: -1, Endpoint: ep,
		Machine: fsm.MachinePubSub, Sink: s})
	select {
	case c := <-s.ready:
		sc, ok := c.(*netio.SubConn)
		if !ok {
			t.Fatalf("a pub/sub attempt gave a %T", c)
		}
		t.Cleanup(sc.Close)
		return sc, s
	case err := <-s.fail:
		t.Fatal(err)
	case <-time.After(waitBound):
		t.Fatal("no outcome")
	}
	return nil, nil
}

// TestSubConnBothProtocols: acknowledgements, messages of channels, patterns and shard channels,
// a command answered in the middle of pub/sub events, unsubscription, refusal and loss, over
// RESP2 (arrays outside the request/reply flow) and RESP3 (pushes).
func TestSubConnBothProtocols(t *testing.T) {
	redistest.Require(t)
	srv := redistest.Start(t, redistest.Config{Extra: []string{"user limited on >pw ~* +@all resetchannels &allowed*"}})
	ep := tcp(t, srv.Addr())
	for _, proto := range []netio.Protocol{netio.ProtocolRESP2, netio.ProtocolRESP3} {
		t.Run(proto.String(), func(t *testing.T) {
			rec := &pubsubRecorder{}
			cfg := netio.TransportConfig{Handshake: netio.HandshakeConfig{Protocol: proto}, PubSub: rec}
			sc, sink := openSubscriber(t, cfg, ep)
			if want := map[netio.Protocol]int{netio.ProtocolRESP2: 2, netio.ProtocolRESP3: 3}[proto]; sc.Protocol() != want {
				t.Fatalf("protocol %d", sc.Protocol())
			}
			topics := []fsm.Topic{{Kind: fsm.TopicChannel, Name: "news"}, {Kind: fsm.TopicPattern, Name: "ev.*"},
				{Kind: fsm.TopicShard, Name: "s1"}, {Kind: fsm.TopicShard, Name: "s2"}, {Kind: fsm.TopicChannel, Name: "sports"}}
			sc.Subscribe(topics, false)
			if !waitFor(func() bool { a, _, _ := rec.counts(); return a == len(topics) }) {
				t.Fatalf("acks %v", rec.acks)
			}
			// A command in the middle of pub/sub events completes with its own reply.
			ping := &engine.Command{Name: "PING", Frame: resp.AppendCommand(nil, "PING")}
			done := make(chan struct{})
			ping.Done = func(*engine.Command) { close(done) }
			ping.Enqueued()
			sc.Send(ping)
			srv.Do(t, "PUBLISH", "news", "n1")
			srv.Do(t, "PUBLISH", "ev.a", "e1")
			srv.Do(t, "SPUBLISH", "s2", "x1")
			srv.Do(t, "PUBLISH", "sports", "p1")
			<-done
			if ping.Err != nil {
				t.Fatalf("PING: %v", ping.Err)
			}
			if !waitFor(func() bool { _, _, m := rec.counts(); return m == 4 }) {
				t.Fatalf("messages %v", rec.messages)
			}
			rec.mu.Lock()
			got := rec.messages
			want := []engine.PubSubMessage{
				{Topic: topics[0], Channel: "news", Payload: "n1"},
				{Topic: topics[1], Channel: "ev.a", Payload: "e1"},
				{Topic: topics[3], Channel: "s2", Payload: "x1"},
				{Topic: topics[4], Channel: "sports", Payload: "p1"},
			}
			for i := range want {
				if got[i] != want[i] {
					t.Errorf("message %d: %+v, want %+v", i, got[i], want[i])
				}
			}
			rec.mu.Unlock()
			// Unsubscribing is acknowledged without reporting anything.
			sc.Subscribe(topics[:1], true)
			if !waitFor(func() bool { return srv.Do(t, "PUBLISH", "news", "n2") == "0" }) {
				t.Fatal("news still subscribed after UNSUBSCRIBE")
			}
			// The server goes away: Lost, once.
			if n := srv.Do(t, "CLIENT", "KILL", "TYPE", "pubsub"); n == "0" {
				t.Fatalf("CLIENT KILL TYPE pubsub killed %s", n)
			}
			select {
			case err := <-sink.lost:
				var ioe *netio.IOError
				if !errors.As(err, &ioe) {
					t.Fatalf("lost with %v", err)
				}
			case <-time.After(waitBound):
				t.Fatal("no Lost")
			}
		})
	}
	t.Run("refused", func(t *testing.T) {
		rec := &pubsubRecorder{}
		cfg := netio.TransportConfig{Handshake: netio.HandshakeConfig{Username: "limited", Password: "pw"}, PubSub: rec}
		sc, _ := openSubscriber(t, cfg, ep)
		sc.Subscribe([]fsm.Topic{{Kind: fsm.TopicChannel, Name: "forbidden"}, {Kind: fsm.TopicChannel, Name: "allowed.a"}}, false)
		sc.Subscribe([]fsm.Topic{{Kind: fsm.TopicChannel, Name: "allowed.b"}}, false)
		if !waitFor(func() bool { a, r, _ := rec.counts(); return r == 2 && a == 1 }) {
			t.Fatalf("acks %v refused %v", rec.acks, rec.rejected)
		}
		var se *netio.SubscribeError
		if !errors.As(rec.rejected[0], &se) || se.Code != "NOPERM" || se.Command != "SUBSCRIBE" {
			t.Fatalf("refusal %v", rec.rejected[0])
		}
		if rec.acks[0].Name != "allowed.b" {
			t.Fatalf("ack %v", rec.acks)
		}
	})
}

// TestSubConnIdleReadBound: a subscriber connection that owes nothing may stay quiet for any
// time, but one that waits for acknowledgements fails after IdleReadTimeout without a byte.
func TestSubConnIdleReadBound(t *testing.T) {
	redistest.Require(t)
	srv := redistest.Start(t, redistest.Config{})
	rec := &pubsubRecorder{}
	cfg := netio.TransportConfig{PubSub: rec, IdleReadTimeout: 150 * time.Millisecond}
	sc, sink := openSubscriber(t, cfg, tcp(t, srv.Addr()))
	sc.Subscribe([]fsm.Topic{{Kind: fsm.TopicChannel, Name: "quiet"}}, false)
	if !waitFor(func() bool { a, _, _ := rec.counts(); return a == 1 }) {
		t.Fatal("no acknowledgement")
	}
	select {
	case err := <-sink.lost:
		t.Fatalf("a quiet subscriber connection owing nothing failed: %v", err)
	case <-time.After(400 * time.Millisecond):
	}
	srv.Pause()
	defer srv.Resume()
	sc.Subscribe([]fsm.Topic{{Kind: fsm.TopicChannel, Name: "never-acked"}}, false)
	select {
	case err := <-sink.lost:
		var ioe *netio.IOError
		if !errors.As(err, &ioe) || !ioe.Timeout() {
			t.Fatalf("want an idle-read timeout, got %v", err)
		}
	case <-time.After(waitBound):
		t.Fatal("a connection owing an acknowledgement never timed out")
	}
}
