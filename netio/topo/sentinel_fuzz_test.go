package topo_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/netio/resp"
	"github.com/respire-go/respire/netio/topo"
)

// addSentinelCaptures seeds f with the captured replies of a kind, in RESP2 and RESP3.
func addSentinelCaptures(f *testing.F, kind string) {
	for _, c := range loadCaptures(f, sentinelDir) {
		if c.kind == kind {
			f.Add(resp.AppendValue(nil, c.value, 3))
			f.Add(resp.AppendValue(nil, c.value, 2))
		}
	}
	f.Add([]byte("*0\r\n"))
	f.Add([]byte("_\r\n"))
	f.Add([]byte("-NOPERM no permissions\r\n"))
	f.Add([]byte("-ERR No such master with that name\r\n"))
	f.Add([]byte("%1\r\n$2\r\nip\r\n$2\r\n::\r\n"))
}

// checkEndpoint fails unless ep is a dialable endpoint in canonical form.
func checkEndpoint(t *testing.T, ep fsm.Endpoint) {
	t.Helper()
	if !ep.Dialable() || ep.Port > 65535 || ep.Host != fsm.CanonicalHost(ep.Host) {
		t.Fatalf("endpoint %#v is not canonical and dialable", ep)
	}
}

// fuzzSentinel runs parse on every RESP value the fuzzer finds, checking that errors are typed,
// that parsing is deterministic and that AnswerSentinel agrees for query q (none: no query
// answers with this reply); check validates a result.
func fuzzSentinel[T any](f *testing.F, kind string, q fsm.SentinelQuery, parse func(resp.Value) (T, error), check func(*testing.T, T)) {
	addSentinelCaptures(f, kind)
	f.Fuzz(func(t *testing.T, data []byte) {
		var v resp.Value
		if _, err := resp.Parse(data, &v, fuzzLimits); err != nil {
			return
		}
		got, err := parse(v)
		again, err2 := parse(v)
		if (err == nil) != (err2 == nil) || fmt.Sprint(got) != fmt.Sprint(again) {
			t.Fatal("parsing twice gave different results")
		}
		if q != fsm.SentinelQueryNone {
			// The payload the resolution gets agrees with the parse.
			d, aerr := topo.AnswerSentinel(q, v)
			if d == nil || d.Query != q || (aerr == nil) != (err == nil) || d.Denied != errors.Is(aerr, topo.ErrPermissionDenied) {
				t.Fatalf("AnswerSentinel disagrees: %+v %v, parse %v", d, aerr, err)
			}
		}
		if err != nil {
			checkTyped(t, err)
			return
		}
		check(t, got)
	})
}

func FuzzParseSentinelPrimaryAddr(f *testing.F) {
	fuzzSentinel(f, "sentinel-addr", fsm.SentinelQueryPrimaryAddr, topo.ParseSentinelPrimaryAddr, checkEndpoint)
}

func FuzzParseSentinelMaster(f *testing.F) {
	fuzzSentinel(f, "sentinel-master", fsm.SentinelQueryPrimary, topo.ParseSentinelMaster, func(t *testing.T, p topo.SentinelPrimary) {
		checkEndpoint(t, p.Addr)
		if !p.Flags.Has(topo.FlagPrimary) || p.Replicas < 0 || p.OtherSentinels < 0 || p.Quorum < 0 {
			t.Fatalf("accepted %+v", p)
		}
	})
}

func FuzzParseSentinelSentinels(f *testing.F) {
	fuzzSentinel(f, "sentinel-sentinels", fsm.SentinelQueryPeers, topo.ParseSentinelSentinels, func(t *testing.T, peers []topo.SentinelPeer) {
		if len(peers) > topo.MaxSentinelPeers {
			t.Fatalf("%d peers", len(peers))
		}
		for _, p := range peers {
			checkEndpoint(t, p.Addr)
			if !p.Flags.Has(topo.FlagSentinel) {
				t.Fatalf("accepted %+v", p)
			}
		}
	})
}

func FuzzParseSentinelReplicas(f *testing.F) {
	fuzzSentinel(f, "sentinel-replicas", fsm.SentinelQueryNone, topo.ParseSentinelReplicas, func(t *testing.T, reps []topo.SentinelReplica) {
		if len(reps) > topo.MaxSentinelReplicas {
			t.Fatalf("%d replicas", len(reps))
		}
		for _, r := range reps {
			checkEndpoint(t, r.Addr)
			if !r.Primary.IsZero() {
				checkEndpoint(t, r.Primary)
			}
			if !r.Flags.Has(topo.FlagReplica) || r.Priority < 0 || r.ReplOffset < 0 {
				t.Fatalf("accepted %+v", r)
			}
		}
	})
}

func FuzzParseRole(f *testing.F) {
	fuzzSentinel(f, "role", fsm.SentinelQueryRole, topo.ParseRole, func(t *testing.T, r topo.RoleReply) {
		switch {
		case r.Role == fsm.RolePrimary:
			for _, rep := range r.Replicas {
				checkEndpoint(t, rep.Addr)
			}
		case r.Role == fsm.RoleReplica:
			checkEndpoint(t, r.Primary)
		case !r.Sentinel:
			t.Fatalf("accepted %+v", r)
		}
	})
}

func FuzzParseSentinelMessage(f *testing.F) {
	for _, c := range loadCaptures(f, sentinelDir) {
		if c.kind != "message" {
			continue
		}
		if ch, payload, ok := message(c.value); ok {
			f.Add(ch, payload)
		}
	}
	f.Add("+sdown", []byte("slave 127.0.0.1:16380 127.0.0.1 16380 @ mymaster 127.0.0.1 16379"))
	f.Add("-odown", []byte("sentinel 5c1b 2001:db8::1 26379 @ mymaster 2001:db8::2 6379 #quorum 1/2"))
	f.Add("+new-epoch", []byte("3"))
	f.Fuzz(func(t *testing.T, channel string, payload []byte) {
		m, err := topo.ParseSentinelMessage(channel, payload)
		if err != nil {
			checkTyped(t, err)
			return
		}
		checkEndpoint(t, m.Addr)
		if m.Primary == "" || m.Instance == fsm.InstanceUnknown || m.Kind == fsm.MessageUnknown {
			t.Fatalf("accepted %+v", m)
		}
		if m.Kind == fsm.MessageSwitchPrimary {
			checkEndpoint(t, m.Old)
		}
	})
}
