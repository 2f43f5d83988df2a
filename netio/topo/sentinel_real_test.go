package topo_test

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/netio/redistest"
	"github.com/respire-go/respire/netio/resp"
	"github.com/respire-go/respire/netio/topo"
)

// sentinelDir holds the replies TestRealSentinel captures (go test ./netio/wire -run
// TestRealSentinel -capture, then -run TestCapturedSentinelReplies -update for the goldens).
var sentinelDir = filepath.Join("testdata", "sentinel", "real")

// realSentinel drives TestRealSentinel and records its replies.
type realSentinel struct {
	t        *testing.T
	captures []captured
}

// query sends a command over a fresh connection speaking proto (after AUTH when auth is set)
// and records the reply under name when name is not empty.
func (rs *realSentinel) query(node *redistest.Server, proto int, auth []string, name, kind string, args ...string) resp.Value {
	rs.t.Helper()
	c := dialRaw(rs.t, node.Addr(), proto)
	if auth != nil {
		if _, v := c.do(append([]string{"AUTH"}, auth...)...); v.IsError() {
			rs.t.Fatalf("AUTH: %v", v)
		}
	}
	raw, v := c.do(args...)
	rs.record(node, name, kind, raw)
	return v
}

func (rs *realSentinel) record(node *redistest.Server, name, kind string, raw []byte) {
	if name != "" {
		rs.captures = append(rs.captures, captured{name: name, kind: kind, asked: endpointOf(rs.t, node), raw: raw})
	}
}

// read waits up to timeout for the next value on c (a pushed message).
func (c *rawConn) read(timeout time.Duration) ([]byte, resp.Value, bool) {
	c.t.Helper()
	if err := c.conn.SetReadDeadline(time.Now().Add(timeout)); err != nil {
		c.t.Fatal(err)
	}
	var chunk [64 << 10]byte
	for {
		var v resp.Value
		n, err := resp.Parse(c.buf, &v, nil)
		if err == nil {
			raw := slices.Clone(c.buf[:n])
			c.buf = c.buf[n:]
			return raw, v, true
		}
		if err != resp.ErrIncomplete {
			c.t.Fatal(err)
		}
		k, err := c.conn.Read(chunk[:])
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return nil, resp.Value{}, false
		}
		if err != nil {
			c.t.Fatal(err)
		}
		c.buf = append(c.buf, chunk[:k]...)
	}
}

// message returns the channel and payload of a pushed pub/sub message.
func message(v resp.Value) (string, []byte, bool) {
	if (v.Kind != resp.KindArray && v.Kind != resp.KindPush) || v.Len() != 3 {
		return "", nil, false
	}
	kind, ch, payload := v.Elem(0), v.Elem(1), v.Elem(2)
	if string(kind.Str) != "message" {
		return "", nil, false
	}
	return string(ch.Str), slices.Clone(payload.Str), true
}

// TestRealSentinel checks the Sentinel parsers against a real primary, replica and three
// redis-sentinel processes: every query in RESP2 and RESP3, a name the Sentinels do not monitor,
// SENTINEL MASTER refused by ACL (NOPERM) with GET-MASTER-ADDR-BY-NAME still permitted, ROLE on
// each kind of instance, and the +switch-master, +sdown and +odown messages of a SENTINEL
// FAILOVER and of a killed primary, with the configuration epoch growing at each failover.
func TestRealSentinel(t *testing.T) {
	start := time.Now()
	g := redistest.StartSentinelGroup(t, redistest.SentinelConfig{})
	t.Logf("sentinel group up in %v", time.Since(start))
	rs := &realSentinel{t: t}
	name := g.MasterName()
	sentinels := g.Sentinels()
	s := sentinels[0]
	primary, replica := g.Nodes()[0], g.Nodes()[1]
	ep := func(n *redistest.Server) fsm.Endpoint { return endpointOf(t, n) }

	for _, proto := range []int{2, 3} {
		p := fmt.Sprint(proto)
		v := rs.query(s, proto, nil, "addr-resp"+p, "sentinel-addr", "SENTINEL", "GET-MASTER-ADDR-BY-NAME", name)
		if addr, err := topo.ParseSentinelPrimaryAddr(v); err != nil || addr != ep(primary) {
			t.Fatalf("RESP%d GET-MASTER-ADDR-BY-NAME: %v %v", proto, addr, err)
		}
		v = rs.query(s, proto, nil, "master-resp"+p, "sentinel-master", "SENTINEL", "MASTER", name)
		m, err := topo.ParseSentinelMaster(v)
		if err != nil || m.Addr != ep(primary) || m.Name != name || !m.HasConfigEpoch || m.ConfigEpoch != 0 ||
			m.Flags != topo.FlagPrimary || m.Replicas != 1 || m.OtherSentinels != 2 || m.Quorum != 2 {
			t.Fatalf("RESP%d SENTINEL MASTER: %+v %v", proto, m, err)
		}
		v = rs.query(s, proto, nil, "sentinels-resp"+p, "sentinel-sentinels", "SENTINEL", "SENTINELS", name)
		peers, err := topo.ParseSentinelSentinels(v)
		if err != nil || len(peers) != 2 {
			t.Fatalf("RESP%d SENTINEL SENTINELS: %+v %v", proto, peers, err)
		}
		for _, o := range sentinels[1:] {
			if !slices.ContainsFunc(peers, func(p topo.SentinelPeer) bool { return p.Addr == ep(o) && p.Flags == topo.FlagSentinel }) {
				t.Fatalf("RESP%d SENTINEL SENTINELS lacks %s: %+v", proto, o.Addr(), peers)
			}
		}
		v = rs.query(s, proto, nil, "replicas-resp"+p, "sentinel-replicas", "SENTINEL", "REPLICAS", name)
		reps, err := topo.ParseSentinelReplicas(v)
		if err != nil || len(reps) != 1 || reps[0].Addr != ep(replica) || !reps[0].LinkUp ||
			reps[0].Primary != ep(primary) || reps[0].Flags != topo.FlagReplica {
			t.Fatalf("RESP%d SENTINEL REPLICAS: %+v %v", proto, reps, err)
		}
		v = rs.query(primary, proto, nil, "role-primary-resp"+p, "role", "ROLE")
		if r, err := topo.ParseRole(v); err != nil || r.Role != fsm.RolePrimary || len(r.Replicas) != 1 || r.Replicas[0].Addr != ep(replica) {
			t.Fatalf("RESP%d ROLE of the primary: %+v %v", proto, r, err)
		}
		v = rs.query(replica, proto, nil, "role-replica-resp"+p, "role", "ROLE")
		if r, err := topo.ParseRole(v); err != nil || r.Role != fsm.RoleReplica || r.Primary != ep(primary) || r.LinkState != "connected" {
			t.Fatalf("RESP%d ROLE of the replica: %+v %v", proto, r, err)
		}
		v = rs.query(s, proto, nil, "role-sentinel-resp"+p, "role", "ROLE")
		if r, err := topo.ParseRole(v); err != nil || !r.Sentinel || !slices.Equal(r.Primaries, []string{name}) {
			t.Fatalf("RESP%d ROLE of a Sentinel: %+v %v", proto, r, err)
		}
		v = rs.query(s, proto, nil, "unknown-addr-resp"+p, "sentinel-addr", "SENTINEL", "GET-MASTER-ADDR-BY-NAME", "unknown")
		if _, err := topo.ParseSentinelPrimaryAddr(v); !errors.Is(err, topo.ErrUnknownPrimary) {
			t.Fatalf("RESP%d GET-MASTER-ADDR-BY-NAME of an unknown name: %v", proto, err)
		}
	}
	v := rs.query(s, 2, nil, "unknown-master", "sentinel-master", "SENTINEL", "MASTER", "unknown")
	if _, err := topo.ParseSentinelMaster(v); !errors.Is(err, topo.ErrUnknownPrimary) {
		t.Fatalf("SENTINEL MASTER of an unknown name: %v", err)
	}

	// A user without SENTINEL MASTER: NOPERM, recognised as a permission refusal, while
	// GET-MASTER-ADDR-BY-NAME still answers (the resolution's fallback).
	if got := s.Do(t, "ACL", "SETUSER", "limited", "on", ">limited-pass", "+@all", "-sentinel|master"); got != "OK" {
		t.Fatalf("ACL SETUSER: %s", got)
	}
	auth := []string{"limited", "limited-pass"}
	v = rs.query(s, 2, auth, "master-noperm", "sentinel-master", "SENTINEL", "MASTER", name)
	d, err := topo.AnswerSentinel(fsm.SentinelQueryPrimary, v)
	if !errors.Is(err, topo.ErrPermissionDenied) || !d.Denied || strings.Contains(err.Error(), "limited") {
		t.Fatalf("SENTINEL MASTER without permission: %+v %v", d, err)
	}
	v = rs.query(s, 2, auth, "", "", "SENTINEL", "GET-MASTER-ADDR-BY-NAME", name)
	if d, err := topo.AnswerSentinel(fsm.SentinelQueryPrimaryAddr, v); err != nil || d.Primary != ep(primary) {
		t.Fatalf("GET-MASTER-ADDR-BY-NAME without SENTINEL MASTER: %+v %v", d, err)
	}

	// Watch every Sentinel's events, then fail over by command.
	subs := make([]*rawConn, len(sentinels))
	for i, o := range sentinels {
		subs[i] = dialRaw(t, o.Addr(), 2)
		subs[i].do("SUBSCRIBE", "+switch-master", "+sdown", "+odown", "-sdown", "-odown")
		for range 4 {
			if _, v, ok := subs[i].read(5 * time.Second); !ok || v.Len() != 3 {
				t.Fatalf("SUBSCRIBE on %s: %v", o.Addr(), v)
			}
		}
	}
	seen := map[string]bool{}
	// await reads every Sentinel's messages until want was parsed from one of them (each kind
	// is captured once), for up to 30 s.
	await := func(label string, want func(fsm.SentinelMessage) bool) fsm.SentinelMessage {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for time.Now().Before(deadline) {
			for i, c := range subs {
				raw, v, ok := c.read(20 * time.Millisecond)
				if !ok {
					continue
				}
				ch, payload, ok := message(v)
				if !ok {
					t.Fatalf("not a message: %v", v)
				}
				m, err := topo.ParseSentinelMessage(ch, payload)
				if err != nil {
					t.Fatalf("%s %q from %s: %v", ch, payload, sentinels[i].Addr(), err)
				}
				key := label + ch + m.Instance.String()
				if !seen[key] {
					seen[key] = true
					rs.record(sentinels[i], label+"-"+strings.TrimLeft(ch, "+-")+map[bool]string{true: "-cleared"}[ch[0] == '-']+"-"+m.Instance.String(), "message", raw)
				}
				if want(m) {
					return m
				}
			}
		}
		t.Fatalf("%s: no such message within 30 s", label)
		return fsm.SentinelMessage{}
	}
	if got := s.Do(t, "SENTINEL", "FAILOVER", name); got != "OK" {
		t.Fatalf("SENTINEL FAILOVER: %s", got)
	}
	m := await("failover", func(m fsm.SentinelMessage) bool { return m.Kind == fsm.MessageSwitchPrimary })
	if m.Primary != name || m.Old != ep(primary) || m.Addr != ep(replica) {
		t.Fatalf("+switch-master: %+v", m)
	}
	promoted := g.WaitForFailover(t, primary.Addr())
	// Let the other Sentinels' announcements of this failover go by, so that the messages
	// captured after the kill are the kill's.
	for quiet := time.Now(); time.Since(quiet) < time.Second && time.Since(start) < time.Minute; {
		for _, c := range subs {
			if _, _, ok := c.read(20 * time.Millisecond); ok {
				quiet = time.Now()
			}
		}
	}
	v = rs.query(s, 3, nil, "master-after-failover", "sentinel-master", "SENTINEL", "MASTER", name)
	after, err := topo.ParseSentinelMaster(v)
	if err != nil || after.Addr != ep(promoted) || after.ConfigEpoch < 1 {
		t.Fatalf("SENTINEL MASTER after the failover: %+v %v", after, err)
	}

	// Kill the new primary: the Sentinels see it down, agree, and fail over again under a newer
	// epoch.
	killed := g.KillPrimary(t)
	await("kill", func(m fsm.SentinelMessage) bool {
		return m.Kind == fsm.MessageSubjectivelyDown && m.Instance == fsm.InstancePrimary && m.Addr == ep(killed)
	})
	await("kill", func(m fsm.SentinelMessage) bool {
		return m.Kind == fsm.MessageObjectivelyDown && m.Instance == fsm.InstancePrimary
	})
	m = await("kill", func(m fsm.SentinelMessage) bool { return m.Kind == fsm.MessageSwitchPrimary })
	if m.Old != ep(killed) || m.Addr != ep(primary) {
		t.Fatalf("+switch-master after the kill: %+v", m)
	}
	// The +switch-master may come from another Sentinel, the leader of the failover: s learns
	// the new configuration from the leader's hello messages a moment later.
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		v = rs.query(s, 2, nil, "", "", "SENTINEL", "MASTER", name)
		if m, err := topo.ParseSentinelMaster(v); err == nil && m.ConfigEpoch > after.ConfigEpoch {
			break
		}
	}
	v = rs.query(s, 2, nil, "master-after-kill", "sentinel-master", "SENTINEL", "MASTER", name)
	last, err := topo.ParseSentinelMaster(v)
	if err != nil || last.ConfigEpoch <= after.ConfigEpoch {
		t.Fatalf("the epoch did not grow: %+v then %+v (%v)", after, last, err)
	}
	if *capture {
		rs.write()
	}
	t.Logf("done in %v", time.Since(start))
}

// write stores the captured replies and their manifest.
func (rs *realSentinel) write() {
	t := rs.t
	if err := os.RemoveAll(sentinelDir); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(sentinelDir, 0o755); err != nil {
		t.Fatal(err)
	}
	var manifest strings.Builder
	manifest.WriteString("# Replies of real Redis " + redistest.RedisVersion() + " Sentinels, captured by TestRealSentinel -capture.\n")
	manifest.WriteString("# file kind asked-endpoint\n")
	for _, c := range rs.captures {
		file := c.name + ".resp"
		if err := os.WriteFile(filepath.Join(sentinelDir, file), c.raw, 0o644); err != nil {
			t.Fatal(err)
		}
		manifest.WriteString(file + " " + c.kind + " " + c.asked.String() + "\n")
	}
	if err := os.WriteFile(filepath.Join(sentinelDir, "manifest.txt"), []byte(manifest.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %d captures to %s", len(rs.captures), sentinelDir)
}

// describeSentinel renders what this package makes of a captured Sentinel reply.
func describeSentinel(c capturedReply) string {
	var out any
	var err error
	switch c.kind {
	case "sentinel-addr":
		out, err = topo.ParseSentinelPrimaryAddr(c.value)
	case "sentinel-master":
		out, err = topo.ParseSentinelMaster(c.value)
	case "sentinel-sentinels":
		out, err = topo.ParseSentinelSentinels(c.value)
	case "sentinel-replicas":
		out, err = topo.ParseSentinelReplicas(c.value)
	case "role":
		out, err = topo.ParseRole(c.value)
	case "message":
		ch, payload, ok := message(c.value)
		if !ok {
			return "not a message\n"
		}
		var m fsm.SentinelMessage
		m, err = topo.ParseSentinelMessage(ch, payload)
		out = string(m.AppendTo(nil))
	default:
		return "unknown kind " + c.kind + "\n"
	}
	if err != nil {
		return "error: " + err.Error() + "\n"
	}
	return fmt.Sprintf("%+v\n", out)
}

// TestCapturedSentinelReplies checks the parse of every reply captured from real Sentinels
// against its golden description (-update rewrites them).
func TestCapturedSentinelReplies(t *testing.T) {
	for _, c := range loadCaptures(t, sentinelDir) {
		t.Run(c.file, func(t *testing.T) {
			got := describeSentinel(c)
			golden := filepath.Join(sentinelDir, strings.TrimSuffix(c.file, ".resp")+".golden")
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(want, []byte(got)) {
				t.Errorf("%s differs from %s:\n%s", c.file, golden, got)
			}
		})
	}
}
