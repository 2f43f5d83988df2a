package wire_test

import (
	"errors"
	"testing"

	"github.com/respire-go/respire/engine"
	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/netio/resp"
	"github.com/respire-go/respire/netio/wire"
)

// FuzzSubscriberRead feeds arbitrary server frames to a subscriber connection that owes
// acknowledgements and a reply: whatever arrives, Read reports a known kind or an error, never
// completes a command twice, and what is owed only shrinks.
func FuzzSubscriberRead(f *testing.F) {
	for _, seed := range []string{
		"*3\r\n$9\r\nsubscribe\r\n$1\r\na\r\n:1\r\n",
		">4\r\n$8\r\npmessage\r\n$2\r\np*\r\n$2\r\npx\r\n$2\r\nhi\r\n",
		">3\r\n$8\r\npmessage\r\n$2\r\np*\r\n$2\r\npx\r\n",
		"-NOPERM no\r\n+PONG\r\n",
		">2\r\n$10\r\ninvalidate\r\n*1\r\n$1\r\nk\r\n",
	} {
		f.Add([]byte(seed), true)
		f.Add([]byte(seed), false)
	}
	f.Fuzz(func(t *testing.T, data []byte, resp3 bool) {
		proto := 2
		if resp3 {
			proto = 3
		}
		var s wire.Subscriber
		s.Init(engine.Endpoint{Host: "r1", Port: 6379}, 1, proto)
		s.Subscribe(nil, []fsm.Topic{{Kind: fsm.TopicChannel, Name: "a"}, {Kind: fsm.TopicPattern, Name: "p*"}}, false)
		replies := 0
		s.Send(&engine.Command{Name: "PING"})
		owed := s.Owed()
		var v resp.Value
		for len(data) > 0 {
			n, err := resp.Parse(data, &v, nil)
			if err != nil {
				return
			}
			data = data[n:]
			fr, err := s.Read(&v)
			if err != nil {
				var pe *resp.ProtocolError
				if !errors.As(err, &pe) {
					t.Fatalf("Read failed with %T: %v", err, err)
				}
				return
			}
			if fr.Kind > wire.FramePush {
				t.Fatalf("unknown frame kind %d", fr.Kind)
			}
			if fr.Kind == wire.FrameReply {
				if replies++; replies > 1 {
					t.Fatal("a command was answered twice")
				}
			}
			if s.Owed() > owed {
				t.Fatalf("owed grew from %d to %d", owed, s.Owed())
			}
			owed = s.Owed()
		}
	})
}

// FuzzPipelinePairing feeds arbitrary server frames to a connection with commands in flight: each
// frame that is not a push completes exactly the oldest command, in order, each once, and a reply
// with nothing in flight is a protocol error; pushes complete nothing.
func FuzzPipelinePairing(f *testing.F) {
	f.Add([]byte("+OK\r\n>2\r\n$10\r\ninvalidate\r\n*0\r\n:1\r\n$1\r\nv\r\n-ERR x\r\n+OK\r\n"), uint8(3))
	f.Add([]byte("*2\r\n$1\r\na\r\n_\r\n"), uint8(1))
	f.Fuzz(func(t *testing.T, data []byte, commands uint8) {
		var p wire.Pipeline
		p.Init(engine.Endpoint{Host: "r1", Port: 6379}, 1)
		var done []uint64
		for i := range int(commands % 8) {
			cmd := &engine.Command{Name: "GET", ID: uint64(i + 1), Done: func(c *engine.Command) { done = append(done, c.ID) }}
			cmd.Enqueued()
			if err := p.Accept(cmd); err != nil {
				t.Fatal(err)
			}
		}
		p.Hold(p.Take())
		first, last, _ := p.Handoff()
		p.Wrote(first, last)
		var v resp.Value
		for len(data) > 0 {
			n, err := resp.Parse(data, &v, nil)
			if err != nil {
				return
			}
			data = data[n:]
			if p.Unsolicited(&v) {
				if v.Kind != resp.KindPush {
					t.Fatal("a reply was taken for a push")
				}
				continue
			}
			cmd, err := p.Next()
			if err != nil {
				if p.InFlight() != 0 {
					t.Fatalf("Next failed with %d in flight: %v", p.InFlight(), err)
				}
				return
			}
			if _, err := wire.Deliver(cmd, &v); err != nil {
				t.Fatalf("a shapeless command rejected its reply: %v", err)
			}
			if want := uint64(len(done)); done[len(done)-1] != want {
				t.Fatalf("reply %d completed command %d", want, done[len(done)-1])
			}
		}
	})
}
