package topo_test

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/netio/resp"
	"github.com/respire-go/respire/netio/topo"
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
		var re *topo.ReplyError
		var rej *topo.TopologyRejectedError
		if !errors.As(err, &re) && !errors.As(err, &rej) {
			t.Fatalf("untyped error %v (%T)", err, err)
		}
		if !errors.Is(err, topo.ErrMalformedReply) && !errors.Is(err, topo.ErrTopologyRejected) {
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

func FuzzParseClusterSlots(f *testing.F) { fuzzRESP(f, "slots", topo.ParseClusterSlots) }

func FuzzParseClusterShards(f *testing.F) { fuzzRESP(f, "shards", topo.ParseClusterShards) }

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
		r, err := topo.ParseClusterNodesText(text, seed)
		checkTopologyResult(t, r, err)
		if err == nil && r.Self == "" {
			t.Fatal("a CLUSTER NODES reply without myself was accepted")
		}
	})
}
