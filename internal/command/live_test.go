package command_test

import (
	"bytes"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/respire-go/respire/internal/command"
	"github.com/respire-go/respire/internal/command/internal/capture"
	"github.com/respire-go/respire/netio/redistest"
)

// TestCaptureMatchesServer: the checked-in capture is exactly what the redis-server the tests
// run describes (so the table is Redis's own word, not an edited copy). When the project moves
// to another Redis version, re-run go run ./internal/command/capture and go generate.
func TestCaptureMatchesServer(t *testing.T) {
	srv := redistest.Start(t, redistest.Config{})
	got, err := capture.Capture(srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("testdata/commands.json")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("testdata/commands.json (Redis %s) differs from what redis-server %s describes: "+
			"run go run ./internal/command/capture and go generate ./internal/command", command.RedisVersion, redistest.RedisVersion())
	}
}

// TestSentinelCaptureMatchesSentinel: testdata/sentinel.json is exactly what a
// redis-sentinel says of the commands only sentinels have.
func TestSentinelCaptureMatchesSentinel(t *testing.T) {
	group := redistest.StartSentinelGroup(t, redistest.SentinelConfig{})
	got, err := capture.CaptureSentinel(group.SentinelAddrs()[0])
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("testdata/sentinel.json")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("testdata/sentinel.json differs from what redis-sentinel %s describes: "+
			"run go run ./internal/command/capture and go generate ./internal/command", redistest.RedisVersion())
	}
	info := command.Lookup("SENTINEL", "GET-MASTER-ADDR-BY-NAME")
	if info == nil || !info.Sentinel() || info.Admin() {
		t.Fatalf("SENTINEL GET-MASTER-ADDR-BY-NAME: %+v, want a sentinel command exempt from the admin rule", info)
	}
	if set := command.Lookup("SENTINEL", "SET"); set == nil || !set.Admin() {
		t.Fatal("SENTINEL SET must be an admin command")
	}
}

// keyCalls are calls for the key specifications that depend on the arguments' contents
// (keywords, key counts) or that need valid arguments to be evaluated by the server.
var keyCalls = []string{
	"EVAL s 2 k1 k2 a1",
	"EVAL s 0 a1",
	"EVALSHA_RO s 1 k1 a1 a2",
	"FCALL f 3 k1 k2 k3",
	"ZUNIONSTORE d 2 k1 k2 WEIGHTS 1 2",
	"ZINTER 3 k1 k2 k3 WITHSCORES",
	"ZDIFFSTORE d 1 k1",
	"SINTERCARD 2 k1 k2 LIMIT 1",
	"LMPOP 2 k1 k2 LEFT COUNT 3",
	"BLMPOP 0 2 k1 k2 RIGHT",
	"BZMPOP 1 1 k1 MIN",
	"XREAD COUNT 1 STREAMS s1 s2 0 0",
	"XREAD BLOCK 10 STREAMS s1 0",
	"XREADGROUP GROUP g c COUNT 1 STREAMS s1 s2 s3 > > >",
	"MIGRATE h 6379 k1 0 5000",
	"MIGRATE h 6379 \"\" 0 5000 KEYS k1 k2 k3",
	"MIGRATE h 6379 \"\" 0 5000 COPY REPLACE KEYS k1",
	"GEORADIUS k1 0 0 1 m STORE d1",
	"GEORADIUS k1 0 0 1 m STOREDIST d1",
	"GEORADIUSBYMEMBER k1 m 1 km STORE d1 STOREDIST d2",
	"SORT k1 BY w* GET o* STORE d1",
	"MSET k1 v1 k2 v2 k3 v3",
	"MSETNX k1 v1 k2 v2",
	"SET k1 v1 GET",
	"BITOP AND d k1 k2 k3",
	"BITFIELD k1 GET u8 0",
	"OBJECT ENCODING k1",
	"MEMORY USAGE k1 SAMPLES 5",
	"XINFO STREAM s1 FULL",
	"XGROUP CREATE s1 g $ MKSTREAM",
	"LCS k1 k2",
	"COPY k1 k2 DB 1",
	"PFCOUNT k1 k2",
	"PFMERGE d k1 k2",
	"RENAME k1 k2",
	"SMOVE k1 k2 m",
	"DEL k1 k2 k3",
	"WATCH k1 k2",
	"BLPOP k1 k2 0",
	"TOUCH k1",
	"EVAL_RO s 1 k1",
	"EVALSHA s 2 k1 k2",
	"FCALL_RO f 2 k1 k2 a1",
	"SORT_RO k1 BY w* GET o*",
	"SORT_RO k1",
	"ZDIFF 2 k1 k2",
	"ZINTERCARD 2 k1 k2 LIMIT 3",
	"ZINTERSTORE d 2 k1 k2 AGGREGATE MAX",
	"ZMPOP 1 k1 MAX COUNT 2",
	"ZUNION 2 k1 k2 WITHSCORES",
}

// TestKeysMatchServer: Keys gives the keys COMMAND GETKEYS gives, for every command with key
// specifications: a call filled with distinct tokens (its arity, or three more than its
// minimum) for the commands whose keys sit at fixed positions, and the calls above for the
// others, which must all be covered.
func TestKeysMatchServer(t *testing.T) {
	srv := redistest.Start(t, redistest.Config{})
	calls := slices.Clone(keyCalls)
	covered := map[string]bool{}
	for _, call := range keyCalls {
		args := strings.Fields(call)
		covered[strings.ToUpper(args[0])] = true
		covered[strings.ToUpper(args[0]+" "+args[1])] = true
	}
	for _, c := range command.Commands() {
		for _, i := range append([]command.Info{c}, c.Subcommands()...) {
			if len(i.KeySpecs()) == 0 || i.Extra() {
				continue
			}
			if !positional(&i) {
				if !covered[i.Name()] {
					t.Errorf("%s: keys depend on the arguments; add a call to keyCalls", i.Name())
				}
				continue
			}
			calls = append(calls, filled(&i))
		}
	}
	checked := 0
	for _, call := range calls {
		args := fields(call)
		var sub []byte
		if len(args) > 1 {
			sub = args[1]
		}
		info := command.Lookup(args[0], sub)
		if info == nil {
			t.Fatalf("%s: not in the table", call)
		}
		keys, complete := info.Keys(args, nil)
		var ours []string
		for _, k := range keys {
			ours = append(ours, string(args[k]))
		}
		strs := make([]string, len(args))
		for i, a := range args {
			strs[i] = string(a)
		}
		out, err := srv.TryDo(append([]string{"COMMAND", "GETKEYS"}, strs...)...)
		if err != nil {
			t.Fatal(err)
		}
		var server []string
		switch {
		case strings.HasPrefix(out, "(error)"):
			// Redis could not tell: ours must say so too, or find no keys.
			if complete && len(ours) > 0 {
				t.Errorf("%s: the server could not find keys (%s); ours %v", call, out, ours)
			}
			continue
		case out != "(empty array)":
			server = strings.Split(out, "\n")
		}
		if !complete {
			// Redis used the command's own key finder: only the commands whose specifications
			// Redis marks unknown or incomplete may end here.
			if n := info.Name(); n != "SORT" && n != "SORT_RO" && n != "MIGRATE" {
				t.Errorf("%s: incomplete keys %v (server %v) for a command with exact specifications", call, ours, server)
			}
			continue
		}
		if !slices.Equal(ours, server) {
			t.Errorf("%s: keys %v, COMMAND GETKEYS says %v", call, ours, server)
		}
		checked++
	}
	if checked < 150 {
		t.Fatalf("only %d calls compared", checked)
	}
}

// positional reports whether every key specification of i begins at an index and spans a
// range: the keys' positions depend on the number of arguments only.
func positional(i *command.Info) bool {
	for _, s := range i.KeySpecs() {
		if s.Begin != command.BeginIndex || s.Find != command.FindRange {
			return false
		}
	}
	return true
}

// filled builds a call of command i with a distinct token per argument: its subcommand if it
// has one, then a0, a1, ...
func filled(i *command.Info) string {
	n := i.Arity()
	if n < 0 {
		n = -n + 3
	}
	words := strings.Fields(strings.ToLower(i.Name()))
	for len(words) < n {
		words = append(words, fmt.Sprintf("a%d", len(words)))
	}
	return strings.Join(words, " ")
}

// fields splits a call; "" is an empty argument.
func fields(call string) [][]byte {
	var out [][]byte
	for _, f := range strings.Fields(call) {
		if f == `""` {
			f = ""
		}
		out = append(out, []byte(f))
	}
	return out
}
