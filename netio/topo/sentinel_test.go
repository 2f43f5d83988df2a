package topo_test

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/netio/resp"
	"github.com/respire-go/respire/netio/topo"
)

// fields builds a Sentinel instance record in RESP2 (an array of alternating names and values)
// or RESP3 (a map), every value a bulk string as Sentinel sends them.
func fields(proto int, kv ...string) resp.Value {
	if proto == 2 {
		return resp.BulkStrings(kv...)
	}
	vals := make([]resp.Value, len(kv))
	for i, s := range kv {
		vals[i] = resp.BulkString(s)
	}
	return resp.MapOf(vals...)
}

// masterFields are a SENTINEL MASTER reply's fields as Redis 7.0 writes them.
func masterFields(ip, port, flags, epoch string) []string {
	return []string{"name", "mymaster", "ip", ip, "port", port, "runid", "0a3881d4f29c8f0af67d0bf976633201fdda319f",
		"flags", flags, "link-pending-commands", "0", "link-refcount", "1", "last-ping-sent", "0",
		"last-ok-ping-reply", "48", "last-ping-reply", "48", "down-after-milliseconds", "1000",
		"info-refresh", "4223", "role-reported", "master", "role-reported-time", "4292",
		"config-epoch", epoch, "num-slaves", "1", "num-other-sentinels", "2", "quorum", "2",
		"failover-timeout", "2000", "parallel-syncs", "1"}
}

func peerFields(ip, port, flags string) []string {
	return []string{"name", "beae4a5378d052f60a8fb5830e8c0cfeefdd8ba3", "ip", ip, "port", port,
		"runid", "beae4a5378d052f60a8fb5830e8c0cfeefdd8ba3", "flags", flags, "link-pending-commands", "0",
		"last-hello-message", "30", "voted-leader", "?", "voted-leader-epoch", "0"}
}

func replicaFields(ip, port, flags, status, mhost, mport, offset string) []string {
	return []string{"name", ip + ":" + port, "ip", ip, "port", port, "runid", "98761f25cad67e302a523c34240fb7b1a26b5c98",
		"flags", flags, "master-link-down-time", "0", "master-link-status", status, "master-host", mhost,
		"master-port", mport, "slave-priority", "100", "slave-repl-offset", offset, "replica-announced", "1"}
}

// checkTyped asserts the contract of every Sentinel parser error: a *ReplyError or
// *QueryRejectedError (or a sentinel value), matching the right sentinel, quoting nothing of
// the reply.
func checkTyped(t *testing.T, err error, secrets ...string) {
	t.Helper()
	var re *topo.ReplyError
	var qe *topo.QueryRejectedError
	switch {
	case errors.As(err, &re):
		if !errors.Is(err, topo.ErrMalformedReply) {
			t.Fatalf("%v does not match ErrMalformedReply", err)
		}
	case errors.As(err, &qe):
		if !errors.Is(err, topo.ErrQueryRejected) {
			t.Fatalf("%v does not match ErrQueryRejected", err)
		}
	case errors.Is(err, topo.ErrUnknownPrimary), errors.Is(err, topo.ErrNotSentinelEvent):
	default:
		t.Fatalf("untyped error %v (%T)", err, err)
	}
	if !strings.HasPrefix(err.Error(), "respire: ") {
		t.Fatalf("%q lacks the respire: prefix", err)
	}
	for _, s := range secrets {
		if strings.Contains(err.Error(), s) {
			t.Fatalf("%q quotes %q from the reply", err, s)
		}
	}
}

func TestParseSentinelPrimaryAddr(t *testing.T) {
	for _, proto := range []int{2, 3} {
		v := resp.BulkStrings("127.0.0.1", "16380")
		if ep, err := topo.ParseSentinelPrimaryAddr(v); err != nil || ep != fsm.MakeEndpoint("127.0.0.1", 16380) {
			t.Fatalf("RESP%d: %v %v", proto, ep, err)
		}
	}
	ep, err := topo.ParseSentinelPrimaryAddr(resp.BulkStrings("0:0:0:0:0:0:0:1", "6379"))
	if err != nil || ep.String() != "[::1]:6379" {
		t.Fatalf("IPv6: %v %v", ep, err)
	}
	ep, err = topo.ParseSentinelPrimaryAddr(resp.BulkStrings("Redis-1.Example", "6379"))
	if err != nil || ep.Host != "redis-1.example" {
		t.Fatalf("host name: %v %v", ep, err)
	}
	for _, null := range []resp.Value{resp.NullArray(), resp.NullValue(), resp.NullBulk()} {
		if _, err := topo.ParseSentinelPrimaryAddr(null); !errors.Is(err, topo.ErrUnknownPrimary) {
			t.Fatalf("null: %v", err)
		}
	}
	for name, v := range map[string]resp.Value{
		"one element":  resp.BulkStrings("10.0.0.1"),
		"three":        resp.BulkStrings("10.0.0.1", "1", "2"),
		"port zero":    resp.BulkStrings("10.0.0.1", "0"),
		"port big":     resp.BulkStrings("10.0.0.1", "65536"),
		"port word":    resp.BulkStrings("10.0.0.1", "secret-port"),
		"empty host":   resp.BulkStrings("", "6379"),
		"bad host":     resp.BulkStrings("secret host!", "6379"),
		"not an array": resp.BulkString("secret"),
		"int host":     resp.ArrayOf(resp.Int(1), resp.BulkString("6379")),
	} {
		_, err := topo.ParseSentinelPrimaryAddr(v)
		if err == nil {
			t.Fatalf("%s: accepted", name)
		}
		checkTyped(t, err, "secret")
	}
	_, err = topo.ParseSentinelPrimaryAddr(resp.ErrorValue("NOPERM User secret-user has no permissions"))
	checkTyped(t, err, "secret")
	if !errors.Is(err, topo.ErrPermissionDenied) {
		t.Fatalf("NOPERM: %v", err)
	}
}

func TestParseSentinelMaster(t *testing.T) {
	for _, proto := range []int{2, 3} {
		p, err := topo.ParseSentinelMaster(fields(proto, masterFields("127.0.0.1", "16379", "master", "7")...))
		if err != nil {
			t.Fatalf("RESP%d: %v", proto, err)
		}
		want := topo.SentinelPrimary{Name: "mymaster", Addr: fsm.MakeEndpoint("127.0.0.1", 16379),
			RunID: "0a3881d4f29c8f0af67d0bf976633201fdda319f", Flags: topo.FlagPrimary, ConfigEpoch: 7,
			HasConfigEpoch: true, Replicas: 1, OtherSentinels: 2, Quorum: 2}
		if p != want {
			t.Fatalf("RESP%d: %+v", proto, p)
		}
	}
	// Integers are accepted where Sentinel sends digits; flags it does not know are ignored; an
	// older Sentinel without config-epoch gives no epoch.
	v := resp.MapOf(resp.BulkString("ip"), resp.BulkString("::1"), resp.BulkString("port"), resp.Int(6379),
		resp.BulkString("flags"), resp.BulkString("master,s_down,o_down,new_flag"))
	p, err := topo.ParseSentinelMaster(v)
	if err != nil || p.HasConfigEpoch || p.Addr.String() != "[::1]:6379" ||
		p.Flags != topo.FlagPrimary|topo.FlagSubjectivelyDown|topo.FlagObjectivelyDown || !p.Flags.Down() {
		t.Fatalf("%+v %v", p, err)
	}
	if s := p.Flags.String(); s != "master,s_down,o_down" {
		t.Fatalf("flags print as %q", s)
	}
	bad := map[string][]string{
		"no ip":           {"port", "1", "flags", "master"},
		"no port":         {"ip", "10.0.0.1", "flags", "master"},
		"no flags":        {"ip", "10.0.0.1", "port", "1"},
		"not a primary":   {"ip", "10.0.0.1", "port", "1", "flags", "slave"},
		"negative epoch":  {"ip", "10.0.0.1", "port", "1", "flags", "master", "config-epoch", "-1"},
		"epoch word":      {"ip", "10.0.0.1", "port", "1", "flags", "master", "config-epoch", "secret"},
		"huge count":      {"ip", "10.0.0.1", "port", "1", "flags", "master", "quorum", "99999999999"},
		"odd fields":      {"ip", "10.0.0.1", "port"},
		"secret host":     {"ip", "secret host", "port", "1", "flags", "master"},
		"port out of use": {"ip", "10.0.0.1", "port", "70000", "flags", "master"},
	}
	for name, kv := range bad {
		_, err := topo.ParseSentinelMaster(resp.BulkStrings(kv...))
		if err == nil {
			t.Fatalf("%s: accepted", name)
		}
		checkTyped(t, err, "secret")
	}
	_, err = topo.ParseSentinelMaster(resp.ErrorValue("NOPERM this user has no permissions to run the 'sentinel|master' command"))
	checkTyped(t, err)
	if !errors.Is(err, topo.ErrPermissionDenied) || errors.Is(err, topo.ErrUnknownPrimary) {
		t.Fatalf("NOPERM: %v", err)
	}
	_, err = topo.ParseSentinelMaster(resp.ErrorValue("ERR No such master with that name"))
	checkTyped(t, err)
	if !errors.Is(err, topo.ErrUnknownPrimary) || errors.Is(err, topo.ErrPermissionDenied) {
		t.Fatalf("unknown name: %v", err)
	}
	// An error whose first word is not a code keeps no part of it.
	_, err = topo.ParseSentinelMaster(resp.ErrorValue("secret-key-material and more"))
	checkTyped(t, err, "secret")
}

func TestParseSentinelSentinelsAndReplicas(t *testing.T) {
	for _, proto := range []int{2, 3} {
		v := resp.ArrayOf(fields(proto, peerFields("127.0.0.1", "26393", "sentinel")...),
			fields(proto, peerFields("10.0.0.2", "26379", "s_down,sentinel,disconnected")...))
		peers, err := topo.ParseSentinelSentinels(v)
		if err != nil || len(peers) != 2 || peers[0].Addr != fsm.MakeEndpoint("127.0.0.1", 26393) ||
			!peers[1].Flags.Down() || peers[0].RunID != "beae4a5378d052f60a8fb5830e8c0cfeefdd8ba3" {
			t.Fatalf("RESP%d: %+v %v", proto, peers, err)
		}
		v = resp.ArrayOf(fields(proto, replicaFields("127.0.0.1", "16380", "slave", "ok", "127.0.0.1", "16379", "827")...),
			fields(proto, replicaFields("127.0.0.1", "16381", "s_down,slave,disconnected", "err", "?", "0", "0")...))
		reps, err := topo.ParseSentinelReplicas(v)
		if err != nil || len(reps) != 2 || !reps[0].LinkUp || reps[0].Primary != fsm.MakeEndpoint("127.0.0.1", 16379) ||
			reps[0].ReplOffset != 827 || reps[0].Priority != 100 || reps[1].LinkUp || !reps[1].Primary.IsZero() {
			t.Fatalf("RESP%d: %+v %v", proto, reps, err)
		}
	}
	if peers, err := topo.ParseSentinelSentinels(resp.ArrayOf()); err != nil || len(peers) != 0 {
		t.Fatalf("no peers: %v %v", peers, err)
	}
	// At most MaxSentinelPeers are parsed: a malformed 65th entry is never read.
	var many []resp.Value
	for i := 0; i < topo.MaxSentinelPeers; i++ {
		many = append(many, fields(2, peerFields("10.9.0."+strconv.Itoa(i), "26379", "sentinel")...))
	}
	many = append(many, resp.BulkString("garbage"))
	if peers, err := topo.ParseSentinelSentinels(resp.ArrayOf(many...)); err != nil || len(peers) != topo.MaxSentinelPeers {
		t.Fatalf("%d peers, %v", len(peers), err)
	}
	for name, v := range map[string]resp.Value{
		"not an array":   resp.BulkString("x"),
		"entry not map":  resp.ArrayOf(resp.Int(1)),
		"not a sentinel": resp.ArrayOf(fields(2, peerFields("10.0.0.1", "1", "master")...)),
		"no port":        resp.ArrayOf(fields(2, "ip", "10.0.0.1", "flags", "sentinel")),
	} {
		_, err := topo.ParseSentinelSentinels(v)
		if err == nil {
			t.Fatalf("%s: accepted", name)
		}
		checkTyped(t, err)
	}
	if _, err := topo.ParseSentinelReplicas(resp.ArrayOf(fields(2, replicaFields("10.0.0.1", "1", "sentinel", "ok", "?", "0", "0")...))); err == nil {
		t.Fatal("a replica without the slave flag was accepted")
	}
	_, err := topo.ParseSentinelReplicas(resp.ErrorValue("ERR No such master with that name"))
	checkTyped(t, err)
	if !errors.Is(err, topo.ErrUnknownPrimary) {
		t.Fatalf("unknown name: %v", err)
	}
	var where *topo.ReplyError
	_, err = topo.ParseSentinelReplicas(resp.ArrayOf(fields(2, replicaFields("10.0.0.1", "1", "slave", "ok", "10.0.0.2", "x", "0")...)))
	if !errors.As(err, &where) || where.Where != "entry 0, master-port" {
		t.Fatalf("location: %v", err)
	}
}

func TestParseRole(t *testing.T) {
	primary := resp.ArrayOf(resp.BulkString("master"), resp.Int(3129659), resp.ArrayOf(
		resp.BulkStrings("127.0.0.1", "9001", "3129242"), resp.BulkStrings("::1", "9002", "3129543")))
	r, err := topo.ParseRole(primary)
	if err != nil || r.Role != fsm.RolePrimary || r.ReplOffset != 3129659 || len(r.Replicas) != 2 ||
		r.Replicas[1].Addr.String() != "[::1]:9002" || r.Replicas[0].Offset != 3129242 {
		t.Fatalf("%+v %v", r, err)
	}
	replica := resp.ArrayOf(resp.BulkString("slave"), resp.BulkString("127.0.0.1"), resp.Int(16379),
		resp.BulkString("handshake"), resp.Int(-1))
	r, err = topo.ParseRole(replica)
	if err != nil || r.Role != fsm.RoleReplica || r.Primary != fsm.MakeEndpoint("127.0.0.1", 16379) ||
		r.LinkState != "handshake" || r.ReplOffset != -1 {
		t.Fatalf("%+v %v", r, err)
	}
	sentinel := resp.ArrayOf(resp.BulkString("sentinel"), resp.BulkStrings("mymaster", "other"))
	r, err = topo.ParseRole(sentinel)
	if err != nil || r.Role != fsm.RoleUnknown || !r.Sentinel || len(r.Primaries) != 2 {
		t.Fatalf("%+v %v", r, err)
	}
	for name, v := range map[string]resp.Value{
		"empty":            resp.ArrayOf(),
		"unknown role":     resp.BulkStrings("secret-role"),
		"short primary":    resp.ArrayOf(resp.BulkString("master"), resp.Int(1)),
		"negative offset":  resp.ArrayOf(resp.BulkString("master"), resp.Int(-5), resp.ArrayOf()),
		"bad replica":      resp.ArrayOf(resp.BulkString("master"), resp.Int(0), resp.ArrayOf(resp.BulkStrings("h"))),
		"short replica":    resp.ArrayOf(resp.BulkString("slave"), resp.BulkString("127.0.0.1")),
		"bad link state":   resp.ArrayOf(resp.BulkString("slave"), resp.BulkString("127.0.0.1"), resp.Int(1), resp.BulkString("secret state"), resp.Int(0)),
		"bad primary port": resp.ArrayOf(resp.BulkString("slave"), resp.BulkString("127.0.0.1"), resp.Int(0), resp.BulkString("connect"), resp.Int(0)),
		"sentinel no list": resp.BulkStrings("sentinel"),
		"not an array":     resp.BulkString("master"),
	} {
		_, err := topo.ParseRole(v)
		if err == nil {
			t.Fatalf("%s: accepted", name)
		}
		checkTyped(t, err, "secret")
	}
	_, err = topo.ParseRole(resp.ErrorValue("NOPERM this user has no permissions to run the 'role' command"))
	if !errors.Is(err, topo.ErrPermissionDenied) {
		t.Fatalf("NOPERM: %v", err)
	}
}

func TestParseSentinelMessage(t *testing.T) {
	cases := []struct {
		channel, payload string
		want             fsm.SentinelMessage
	}{
		{"+switch-master", "mymaster 127.0.0.1 16379 127.0.0.1 16380",
			fsm.SentinelMessage{Kind: fsm.MessageSwitchPrimary, Instance: fsm.InstancePrimary, Primary: "mymaster",
				Old: fsm.MakeEndpoint("127.0.0.1", 16379), Addr: fsm.MakeEndpoint("127.0.0.1", 16380)}},
		{"+sdown", "master mymaster 127.0.0.1 16380",
			fsm.SentinelMessage{Kind: fsm.MessageSubjectivelyDown, Instance: fsm.InstancePrimary, Primary: "mymaster", Addr: fsm.MakeEndpoint("127.0.0.1", 16380)}},
		{"+odown", "master mymaster 127.0.0.1 16380 #quorum 3/2",
			fsm.SentinelMessage{Kind: fsm.MessageObjectivelyDown, Instance: fsm.InstancePrimary, Primary: "mymaster", Addr: fsm.MakeEndpoint("127.0.0.1", 16380)}},
		{"+sdown", "slave 127.0.0.1:16380 127.0.0.1 16380 @ mymaster 127.0.0.1 16379",
			fsm.SentinelMessage{Kind: fsm.MessageSubjectivelyDown, Instance: fsm.InstanceReplica, Primary: "mymaster", Addr: fsm.MakeEndpoint("127.0.0.1", 16380)}},
		{"-sdown", "sentinel beae4a5378d052f60a8fb5830e8c0cfeefdd8ba3 ::1 26393 @ mymaster ::1 16380",
			fsm.SentinelMessage{Kind: fsm.MessageSubjectivelyUp, Instance: fsm.InstanceSentinel, Primary: "mymaster", Addr: fsm.MakeEndpoint("::1", 26393)}},
		{"-odown", "master mymaster Redis.Example 6379",
			fsm.SentinelMessage{Kind: fsm.MessageObjectivelyUp, Instance: fsm.InstancePrimary, Primary: "mymaster", Addr: fsm.MakeEndpoint("redis.example", 6379)}},
	}
	for _, c := range cases {
		m, err := topo.ParseSentinelMessage(c.channel, []byte(c.payload))
		if err != nil || m != c.want {
			t.Fatalf("%s %q: %+v %v", c.channel, c.payload, m, err)
		}
		d, err := topo.NotifySentinel(c.channel, []byte(c.payload))
		if err != nil || d.Message != c.want {
			t.Fatalf("NotifySentinel: %+v %v", d, err)
		}
	}
	if _, err := topo.ParseSentinelMessage("+new-epoch", []byte("1")); !errors.Is(err, topo.ErrNotSentinelEvent) {
		t.Fatalf("other channel: %v", err)
	}
	for _, c := range [][2]string{
		{"+switch-master", "mymaster 127.0.0.1 16379 127.0.0.1"},
		{"+switch-master", "mymaster 127.0.0.1 x 127.0.0.1 1"},
		{"+switch-master", "mymaster 127.0.0.1 1 secret!host 1"},
		{"+sdown", "master mymaster 127.0.0.1"},
		{"+sdown", "secret mymaster 127.0.0.1 1"},
		{"+sdown", "slave 127.0.0.1:1 127.0.0.1 1"},
		{"+sdown", "slave 127.0.0.1:1 127.0.0.1 1 @ mymaster 127.0.0.1"},
		{"+odown", "master mymaster 127.0.0.1 99999"},
		{"+odown", strings.Repeat("secret ", 1000)},
	} {
		_, err := topo.ParseSentinelMessage(c[0], []byte(c[1]))
		if err == nil {
			t.Fatalf("%s %q: accepted", c[0], c[1])
		}
		checkTyped(t, err, "secret")
	}
}

// TestAnswerSentinel: the payloads the resolution machine gets, for answers and refusals.
func TestAnswerSentinel(t *testing.T) {
	d, err := topo.AnswerSentinel(fsm.SentinelQueryPrimary, fields(3, masterFields("127.0.0.1", "16379", "master", "4")...))
	if err != nil || d.Primary != fsm.MakeEndpoint("127.0.0.1", 16379) || d.Epoch != 4 || !d.EpochKnown || d.Query != fsm.SentinelQueryPrimary || d.InFailover {
		t.Fatalf("%+v %v", d, err)
	}
	// The leader of a failover, between the promotion and the switch (issue 13): the new epoch
	// with the old address, flagged so that the resolution does not trust the pair.
	d, err = topo.AnswerSentinel(fsm.SentinelQueryPrimary, fields(3, masterFields("127.0.0.1", "16379", "master,failover_in_progress", "5")...))
	if err != nil || d.Primary != fsm.MakeEndpoint("127.0.0.1", 16379) || d.Epoch != 5 || !d.EpochKnown || !d.InFailover {
		t.Fatalf("in failover: %+v %v", d, err)
	}
	d, err = topo.AnswerSentinel(fsm.SentinelQueryPrimary, resp.ErrorValue("NOPERM no"))
	if err == nil || !d.Denied || d.Query != fsm.SentinelQueryPrimary {
		t.Fatalf("denied: %+v %v", d, err)
	}
	d, err = topo.AnswerSentinel(fsm.SentinelQueryPrimaryAddr, resp.NullArray())
	if !errors.Is(err, topo.ErrUnknownPrimary) || d.Denied {
		t.Fatalf("unknown: %+v %v", d, err)
	}
	d, err = topo.AnswerSentinel(fsm.SentinelQueryPeers, resp.ArrayOf(fields(2, peerFields("10.0.0.3", "26379", "sentinel")...)))
	if err != nil || len(d.Peers) != 1 || d.Peers[0] != fsm.MakeEndpoint("10.0.0.3", 26379) {
		t.Fatalf("peers: %+v %v", d, err)
	}
	d, err = topo.AnswerSentinel(fsm.SentinelQueryRole, resp.ArrayOf(resp.BulkString("sentinel"), resp.ArrayOf()))
	if err != nil || d.Role != fsm.RoleUnknown {
		t.Fatalf("a Sentinel's ROLE: %+v %v", d, err)
	}
	if _, err := topo.AnswerSentinel(fsm.SentinelQueryNone, resp.ArrayOf()); err == nil {
		t.Fatal("no query accepted")
	}
	for q, want := range map[fsm.SentinelQuery]string{
		fsm.SentinelQueryPrimary:     "SENTINEL MASTER mymaster",
		fsm.SentinelQueryPrimaryAddr: "SENTINEL GET-MASTER-ADDR-BY-NAME mymaster",
		fsm.SentinelQueryPeers:       "SENTINEL SENTINELS mymaster",
		fsm.SentinelQueryRole:        "ROLE",
	} {
		if got := strings.Join(topo.SentinelCommand(q, "mymaster"), " "); got != want {
			t.Fatalf("%v: %q", q, got)
		}
	}
}
