package client

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/internal/command"
	"github.com/respire-go/respire/netio/resp"
)

// encodeArgs returns the frame of args as this package encodes commands.
func encodeArgs(args ...string) []byte {
	b := resp.AppendArrayHeader(nil, len(args))
	for _, a := range args {
		b = resp.AppendBulkString(b, a)
	}
	return b
}

// lookupArgs finds the table entry of a command given as its arguments.
func lookupArgs(args []string) *command.Info {
	sub := ""
	if len(args) > 1 {
		sub = args[1]
	}
	return command.Lookup(args[0], sub)
}

// rewriteArgs rewrites args in ns and returns the arguments sent.
func rewriteArgs(t *testing.T, ns *namespace, args ...string) ([]string, replyKeys, error) {
	t.Helper()
	info := lookupArgs(args)
	name := strings.ToUpper(args[0])
	if info != nil {
		name = info.Name()
	}
	out, rk, err := ns.rewrite(nil, encodeArgs(args...), info, name)
	if err != nil {
		return nil, rk, err
	}
	parts, ok := splitFrame(out, nil)
	if !ok {
		t.Fatalf("%v: the rewritten frame does not parse: %q", args, out)
	}
	got := make([]string, len(parts))
	for i, p := range parts {
		got[i] = string(p)
	}
	return got, rk, nil
}

// TestRewriteEveryKeyPositionKind checks the arguments sent for a command of every kind of
// key specification Redis has (a fixed index, ranges with a step and to the end, a keyword
// search forward and backward with a range divided by a limit, key counts at a fixed index and
// after a destination), and for the four commands the table cannot describe.
func TestRewriteEveryKeyPositionKind(t *testing.T) {
	ns := newNamespace("t:", "")
	cases := []struct {
		name string
		in   []string
		want []string
		rk   replyKeys
	}{
		{"index", []string{"GET", "k"}, []string{"GET", "t:k"}, replyNoKeys},
		{"index, lower case", []string{"get", "k"}, []string{"get", "t:k"}, replyNoKeys},
		{"two indexes", []string{"RENAME", "a", "b"}, []string{"RENAME", "t:a", "t:b"}, replyNoKeys},
		{"range to the end", []string{"DEL", "a", "b", "c"}, []string{"DEL", "t:a", "t:b", "t:c"}, replyNoKeys},
		{"range with a step", []string{"MSET", "a", "1", "b", "2"}, []string{"MSET", "t:a", "1", "t:b", "2"}, replyNoKeys},
		{"range before a trailing argument", []string{"BLPOP", "a", "b", "0"}, []string{"BLPOP", "t:a", "t:b", "0"}, replyFirstKey},
		{"subcommand's key", []string{"OBJECT", "ENCODING", "k"}, []string{"OBJECT", "ENCODING", "t:k"}, replyNoKeys},
		{"keyword with a divided range", []string{"XREAD", "COUNT", "2", "STREAMS", "s1", "s2", "0", "$"},
			[]string{"XREAD", "COUNT", "2", "STREAMS", "t:s1", "t:s2", "0", "$"}, replyStreams},
		{"keyword after a group", []string{"XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">"},
			[]string{"XREADGROUP", "GROUP", "g", "c", "STREAMS", "t:s", ">"}, replyStreams},
		{"keyword searched from an index", []string{"GEORADIUS", "g", "0", "0", "1", "km", "STORE", "dst"},
			[]string{"GEORADIUS", "t:g", "0", "0", "1", "km", "STORE", "t:dst"}, replyNoKeys},
		{"keyword absent", []string{"GEORADIUS", "g", "0", "0", "1", "km"},
			[]string{"GEORADIUS", "t:g", "0", "0", "1", "km"}, replyNoKeys},
		{"key count", []string{"EVAL", "return 1", "2", "a", "b", "arg"},
			[]string{"EVAL", "return 1", "2", "t:a", "t:b", "arg"}, replyNoKeys},
		{"key count zero", []string{"EVALSHA", "abc", "0", "arg"}, []string{"EVALSHA", "abc", "0", "arg"}, replyNoKeys},
		{"function key count", []string{"FCALL_RO", "f", "1", "a", "arg"}, []string{"FCALL_RO", "f", "1", "t:a", "arg"}, replyNoKeys},
		{"destination and key count", []string{"ZUNIONSTORE", "d", "2", "a", "b", "WEIGHTS", "1", "2"},
			[]string{"ZUNIONSTORE", "t:d", "2", "t:a", "t:b", "WEIGHTS", "1", "2"}, replyNoKeys},
		{"key count with options", []string{"LMPOP", "2", "a", "b", "LEFT", "COUNT", "2"},
			[]string{"LMPOP", "2", "t:a", "t:b", "LEFT", "COUNT", "2"}, replyFirstKey},
		{"key count after a timeout", []string{"BZMPOP", "0", "1", "z", "MIN"}, []string{"BZMPOP", "0", "1", "t:z", "MIN"}, replyFirstKey},
		{"KEYS pattern", []string{"KEYS", "user:*"}, []string{"KEYS", "t:user:*"}, replyKeyList},
		{"SCAN without MATCH", []string{"SCAN", "0", "COUNT", "10"}, []string{"SCAN", "0", "COUNT", "10", "MATCH", "t:*"}, replyScanPage},
		{"SCAN with MATCH", []string{"SCAN", "0", "MATCH", "a*", "TYPE", "string"},
			[]string{"SCAN", "0", "MATCH", "t:a*", "TYPE", "string"}, replyScanPage},
		{"HSCAN matches fields, not keys", []string{"HSCAN", "h", "0", "MATCH", "f*"}, []string{"HSCAN", "t:h", "0", "MATCH", "f*"}, replyNoKeys},
		{"SORT by, get, store", []string{"SORT", "l", "BY", "w_*", "LIMIT", "0", "5", "GET", "#", "GET", "o_*->f", "DESC", "STORE", "d"},
			[]string{"SORT", "t:l", "BY", "t:w_*", "LIMIT", "0", "5", "GET", "#", "GET", "t:o_*->f", "DESC", "STORE", "t:d"}, replyNoKeys},
		{"SORT by nosort", []string{"SORT_RO", "l", "BY", "nosort", "ALPHA"}, []string{"SORT_RO", "t:l", "BY", "nosort", "ALPHA"}, replyNoKeys},
		{"MIGRATE one key", []string{"MIGRATE", "h", "6379", "k", "0", "1000"}, []string{"MIGRATE", "h", "6379", "t:k", "0", "1000"}, replyNoKeys},
		{"MIGRATE KEYS", []string{"MIGRATE", "h", "6379", "", "0", "1000", "COPY", "KEYS", "a", "b"},
			[]string{"MIGRATE", "h", "6379", "", "0", "1000", "COPY", "KEYS", "t:a", "t:b"}, replyNoKeys},
		{"no keys", []string{"PING"}, []string{"PING"}, replyNoKeys},
		{"server-wide", []string{"DBSIZE"}, []string{"DBSIZE"}, replyNoKeys},
		{"shard channel is not a key", []string{"SPUBLISH", "ch", "m"}, []string{"SPUBLISH", "ch", "m"}, replyNoKeys},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, rk, err := rewriteArgs(t, ns, c.in...)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Fatalf("sent %q, want %q", got, c.want)
			}
			if rk != c.rk {
				t.Fatalf("reply keys %d, want %d", rk, c.rk)
			}
		})
	}
}

// TestRewriteGlobEscapesThePrefix: a prefix with glob metacharacters matches only itself in
// KEYS and SCAN patterns, and is sent as it is before keys.
func TestRewriteGlobEscapesThePrefix(t *testing.T) {
	ns := newNamespace(`a*b?[c]\:`, "")
	got, _, err := rewriteArgs(t, ns, "KEYS", "x*")
	if err != nil {
		t.Fatal(err)
	}
	if want := `a\*b\?\[c\]\\:x*`; got[1] != want {
		t.Fatalf("pattern %q, want %q", got[1], want)
	}
	got, _, _ = rewriteArgs(t, ns, "SCAN", "0")
	if want := `a\*b\?\[c\]\\:*`; got[len(got)-1] != want {
		t.Fatalf("pattern %q, want %q", got[len(got)-1], want)
	}
	got, _, _ = rewriteArgs(t, ns, "GET", "k")
	if want := `a*b?[c]\:k`; got[1] != want {
		t.Fatalf("key %q, want %q", got[1], want)
	}
}

// TestRewriteRefusals: RANDOMKEY, unknown commands and calls whose keys cannot be located are
// refused under a key prefix, naming the command and never the prefix; with only a channel
// prefix, an unknown command goes as it is.
func TestRewriteRefusals(t *testing.T) {
	ns := newNamespace("secret-tenant:", "")
	for _, args := range [][]string{
		{"RANDOMKEY"},
		{"MODULE.CMD", "k"},
		{"EVAL", "return 1", "many", "k"}, // the key count is not a number
		{"GET"},                           // too few arguments for a fixed arity
		{"KEYS"},
	} {
		_, _, err := rewriteArgs(t, ns, args...)
		var kp *KeyPrefixError
		if !errors.As(err, &kp) || !errors.Is(err, ErrKeyPrefix) {
			t.Fatalf("%q: want a *KeyPrefixError, got %v", args, err)
		}
		if strings.Contains(err.Error(), "secret-tenant") {
			t.Fatalf("%q: the error shows the prefix: %v", args, err)
		}
	}
	got, _, err := rewriteArgs(t, newNamespace("", "ev:"), "MODULE.CMD", "k")
	if err != nil || !reflect.DeepEqual(got, []string{"MODULE.CMD", "k"}) {
		t.Fatalf("channel prefix only: %q, %v", got, err)
	}
}

// TestRewriteChannels: PUBLISH and SPUBLISH take the channel prefix, not the key prefix.
func TestRewriteChannels(t *testing.T) {
	ns := newNamespace("k:", "c:")
	for _, cmd := range []string{"PUBLISH", "SPUBLISH"} {
		got, _, err := rewriteArgs(t, ns, cmd, "news", "hello")
		if err != nil || !reflect.DeepEqual(got, []string{cmd, "c:news", "hello"}) {
			t.Fatalf("%s: %q, %v", cmd, got, err)
		}
	}
	if got := ns.topic(fsm.TopicPattern, "n*"); got != "c:n*" {
		t.Fatalf("pattern %q", got)
	}
	star := newNamespace("", "c*:")
	if got := star.topic(fsm.TopicPattern, "n*"); got != `c\*:n*` {
		t.Fatalf("escaped pattern %q", got)
	}
	if got := star.untopic(fsm.TopicPattern, `c\*:n*`); got != "n*" {
		t.Fatalf("pattern back %q", got)
	}
	if got := star.untopic(fsm.TopicChannel, "c*:news"); got != "news" {
		t.Fatalf("channel back %q", got)
	}
}

// TestNamespaceComposes: views add to the root prefix, outer first, keep the channel prefix,
// and refuse a composed prefix beyond the bound.
func TestNamespaceComposes(t *testing.T) {
	root := newNamespace("app:", "ev:")
	ns := root.withKey("t1:").withKey("cart:")
	if ns.key != "app:t1:cart:" || ns.channel != "ev:" {
		t.Fatalf("composed %q %q", ns.key, ns.channel)
	}
	if got := (*namespace)(nil).withKey(""); got != nil {
		t.Fatal("an empty prefix on no namespace is no namespace")
	}
	long := root.withKey(strings.Repeat("x", MaxKeyPrefixLen))
	var ce *ConfigError
	if _, _, err := long.rewrite(nil, encodeArgs("GET", "k"), lookupArgs([]string{"GET", "k"}), "GET"); !errors.As(err, &ce) {
		t.Fatalf("want a *ConfigError, got %v", err)
	}
	if long.withKey("more") != long {
		t.Fatal("a failed namespace stays failed")
	}
}

// TestStripEveryReplyShape removes the prefix from the keys of every reply kind, under both
// protocols' shapes, and leaves the other elements alone.
func TestStripEveryReplyShape(t *testing.T) {
	ns := newNamespace("t:", "")
	b := resp.BulkString
	entries := resp.ArrayOf(resp.ArrayOf(b("1-0"), resp.ArrayOf(b("f"), b("t:v"))))
	cases := []struct {
		name  string
		where replyKeys
		in    resp.Value
		want  resp.Value
	}{
		{"KEYS", replyKeyList, resp.ArrayOf(b("t:a"), b("t:b")), resp.ArrayOf(b("a"), b("b"))},
		{"SCAN", replyScanPage, resp.ArrayOf(b("17"), resp.ArrayOf(b("t:a"))), resp.ArrayOf(b("17"), resp.ArrayOf(b("a")))},
		{"BLPOP", replyFirstKey, resp.ArrayOf(b("t:q"), b("t:job")), resp.ArrayOf(b("q"), b("t:job"))},
		{"LMPOP", replyFirstKey, resp.ArrayOf(b("t:q"), resp.ArrayOf(b("t:x"))), resp.ArrayOf(b("q"), resp.ArrayOf(b("t:x")))},
		{"XREAD RESP2", replyStreams, resp.ArrayOf(resp.ArrayOf(b("t:s"), entries)), resp.ArrayOf(resp.ArrayOf(b("s"), entries))},
		{"XREAD RESP3", replyStreams, resp.MapOf(b("t:s"), entries, b("t:u"), entries), resp.MapOf(b("s"), entries, b("u"), entries)},
		{"null", replyFirstKey, resp.NullValue(), resp.NullValue()},
		{"a key outside the prefix", replyKeyList, resp.ArrayOf(b("other")), resp.ArrayOf(b("other"))},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// Parse the wire form, as replies arrive.
			wire := resp.AppendValue(nil, c.in, 3)
			var v resp.Value
			if _, err := resp.Parse(wire, &v, nil); err != nil {
				t.Fatal(err)
			}
			if got := ns.strip(&v, c.where); !resp.Equal(got, c.want) {
				t.Fatalf("got %v, want %v", got, c.want)
			}
		})
	}
}

// TestRewriteAllocatesNothingIntoACall: a call's frame is rewritten into its second buffer,
// so a pooled call prefixes its keys without allocating.
func TestRewriteAllocatesNothingIntoACall(t *testing.T) {
	ns := newNamespace("tenant:", "")
	info := command.Lookup("MSET", "")
	cl := &call{}
	frame := encodeArgs("MSET", "a", "1", "b", "2")
	allocs := testing.AllocsPerRun(100, func() {
		cl.cmd.Frame = append(cl.cmd.Frame[:0], frame...)
		if _, err := ns.applyTo(cl, info); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per rewrite", allocs)
	}
	if parts, _ := splitFrame(cl.cmd.Frame, nil); string(parts[3]) != "tenant:b" {
		t.Fatalf("frame %q", cl.cmd.Frame)
	}
}
