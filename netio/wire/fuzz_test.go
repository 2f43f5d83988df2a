package wire_test

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/respire-go/respire/engine"
	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/netio/resp"
	"github.com/respire-go/respire/netio/wire"
)

// baseline is a complete topology that fuzzed replies are applied to.
var baseline = func() fsm.Topology {
	r := fsm.TopologyReply{Query: fsm.QueryClusterSlots, Shards: []fsm.ReplyShard{
		{Ranges: []fsm.SlotRange{{First: 0, Last: 8191}}, Nodes: []fsm.Node{{ID: idA, Addr: fsm.MakeEndpoint("10.0.0.1", 7000), Role: fsm.RolePrimary}}},
		{Ranges: []fsm.SlotRange{{First: 8192, Last: 16383}}, Nodes: []fsm.Node{{ID: idB, Addr: fsm.MakeEndpoint("10.0.0.2", 7000), Role: fsm.RolePrimary}}},
	}}
	top, _ := fsm.Topology{}.Apply(r)
	return top
}()

// checkTopologyResult asserts the contract of the topology parsers on one result: a typed error,
// or a valid reply that can never wipe ownership.
func checkTopologyResult(t *testing.T, r fsm.TopologyReply, err error) {
	t.Helper()
	if err != nil {
		var re *wire.ReplyError
		var rej *wire.TopologyRejectedError
		if !errors.As(err, &re) && !errors.As(err, &rej) {
			t.Fatalf("untyped error %v (%T)", err, err)
		}
		if !errors.Is(err, wire.ErrMalformedReply) && !errors.Is(err, wire.ErrTopologyRejected) {
			t.Fatalf("error %v wraps no sentinel", err)
		}
		return
	}
	if verr := r.Validate(); verr != nil {
		t.Fatalf("a parser returned an invalid reply: %v\n%s", verr, r.String())
	}
	next, ch := baseline.Apply(r)
	if !next.Complete() {
		t.Fatalf("applying a parsed reply left slots unserved: %v\n%s", ch.String(), r.String())
	}
	switch ch.Verdict {
	case fsm.VerdictInconclusive:
		if !next.Equal(baseline) || ch.Changed() {
			t.Fatalf("an inconclusive reply changed the topology: %v", ch.String())
		}
	case fsm.VerdictConclusive:
		again, ch2 := next.Apply(r)
		if ch2.Changed() || !again.Equal(next) {
			t.Fatalf("a conclusive reply applied twice changed again: %v", ch2.String())
		}
	}
	for i := range r.Shards {
		for _, n := range r.Shards[i].Nodes {
			if n.Addr.Host != fsm.CanonicalHost(n.Addr.Host) || n.IP != fsm.CanonicalHost(n.IP) || n.Hostname != fsm.CanonicalHost(n.Hostname) {
				t.Fatalf("a host is not canonical: %v", n)
			}
		}
	}
}

// fuzzLimits keep fuzzed RESP values small.
var fuzzLimits = &resp.Limits{MaxBulkLen: 256, MaxElements: 64, MaxValues: 512, MaxDepth: 8, MaxReplyLen: 8192}

// addCaptures seeds f with the raw captured replies of a kind.
func addCaptures(f *testing.F, kind string, add func(c capturedReply, raw []byte)) {
	for _, c := range loadCaptures(f, filepath.Join("testdata", "cluster", "real")) {
		if c.kind == kind {
			add(c, resp.AppendValue(nil, c.value, 3))
			add(c, resp.AppendValue(nil, c.value, 2))
		}
	}
}

func fuzzRESP(f *testing.F, kind string, parse func(resp.Value, fsm.Endpoint) (fsm.TopologyReply, error)) {
	addCaptures(f, kind, func(_ capturedReply, raw []byte) { f.Add(raw) })
	f.Add([]byte("*0\r\n"))
	f.Add([]byte("-ERR unknown command\r\n"))
	f.Add([]byte("$7\r\ngarbage\r\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		var v resp.Value
		if _, err := resp.Parse(data, &v, fuzzLimits); err != nil {
			return
		}
		r, err := parse(v, seed)
		checkTopologyResult(t, r, err)
		r2, err2 := parse(v, seed)
		if (err == nil) != (err2 == nil) || (err == nil && r.String() != r2.String()) {
			t.Fatal("parsing twice gave different results")
		}
	})
}

func FuzzParseClusterSlots(f *testing.F) { fuzzRESP(f, "slots", wire.ParseClusterSlots) }

func FuzzParseClusterShards(f *testing.F) { fuzzRESP(f, "shards", wire.ParseClusterShards) }

func FuzzParseClusterNodes(f *testing.F) {
	addCaptures(f, "nodes", func(c capturedReply, _ []byte) { f.Add(string(c.value.Str)) })
	for _, s := range []string{
		"", "garbage", "\n", selfLine,
		selfLine + nodesLine(idB, "::1:7000@17000,node-b,shard-id="+idE, "slave,fail?", idA, "0", "0", "1", "connected"),
		selfLine + nodesLine(idB, ":0@0", "master,fail,noaddr", "-", "0", "0", "2", "disconnected"),
		nodesLine(idA, "[::1]:7000@17000,,tls-port=0", "myself,master", "-", "0", "0", "1", "connected", "0-10", "[11->-"+idB+"]"),
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		r, err := wire.ParseClusterNodesText(text, seed)
		checkTopologyResult(t, r, err)
		if err == nil && r.Self == "" {
			t.Fatal("a CLUSTER NODES reply without myself was accepted")
		}
	})
}

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
			if err := wire.Deliver(cmd, &v); err != nil {
				t.Fatalf("a shapeless command rejected its reply: %v", err)
			}
			if want := uint64(len(done)); done[len(done)-1] != want {
				t.Fatalf("reply %d completed command %d", want, done[len(done)-1])
			}
		}
	})
}
