package command

import (
	"sort"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// TestTableSorted: binary search needs every level sorted by key, keys unique and lower case.
func TestTableSorted(t *testing.T) {
	check := func(level string, table []Info) {
		for i := range table {
			if k := table[i].key; k != strings.ToLower(k) || k == "" {
				t.Errorf("%s: key %q is not lower case", level, k)
			}
			if i > 0 && table[i-1].key >= table[i].key {
				t.Errorf("%s: %q before %q", level, table[i-1].key, table[i].key)
			}
		}
	}
	check("commands", commands[:])
	for i := range commands {
		if commands[i].Container() {
			check(commands[i].name, commands[i].subs)
		}
	}
	if len(commands) < 200 {
		t.Fatalf("only %d commands: the table looks truncated", len(commands))
	}
}

func TestLookup(t *testing.T) {
	for _, tc := range []struct {
		name, sub, want string
	}{
		{"GET", "", "GET"},
		{"get", "key", "GET"},
		{"gEt", "", "GET"},
		{"CLIENT", "REPLY", "CLIENT REPLY"},
		{"client", "reply", "CLIENT REPLY"},
		{"Client", "No-Evict", "CLIENT NO-EVICT"},
		{"CLIENT", "", "CLIENT"},
		{"CLIENT", "NOSUCH", "CLIENT"},
		{"CONFIG", "set", "CONFIG SET"},
		{"restore-ASKING", "", "RESTORE-ASKING"},
		{"sort_ro", "", "SORT_RO"},
		{"WAITAOF", "", "WAITAOF"},
		{"client", "no-touch", "CLIENT NO-TOUCH"},
		{"NOSUCH", "", ""},
		{"", "", ""},
		{"GETX", "", ""},
		{"GE", "", ""},
		{"client|reply", "", ""},
	} {
		got := Lookup(tc.name, tc.sub)
		gotBytes := Lookup([]byte(tc.name), []byte(tc.sub))
		if got != gotBytes {
			t.Errorf("Lookup(%q, %q): string and []byte disagree", tc.name, tc.sub)
		}
		switch {
		case tc.want == "" && got != nil:
			t.Errorf("Lookup(%q, %q) = %s, want nil", tc.name, tc.sub, got.Name())
		case tc.want != "" && (got == nil || got.Name() != tc.want):
			t.Errorf("Lookup(%q, %q) = %v, want %s", tc.name, tc.sub, got, tc.want)
		}
	}
}

func TestLookupDoesNotAllocate(t *testing.T) {
	name, sub := []byte("cLiEnT"), []byte("TRACKING")
	var found *Info
	allocs := testing.AllocsPerRun(100, func() {
		found = Lookup(name, sub)
	})
	if allocs != 0 || found == nil || found.Name() != "CLIENT TRACKING" {
		t.Fatalf("Lookup allocated %v times (found %v)", allocs, found)
	}
	args := [][]byte{[]byte("xread"), []byte("count"), []byte("1"), []byte("block"), []byte("0"), []byte("streams"), []byte("s"), []byte("0")}
	xread := Lookup(args[0], nil)
	allocs = testing.AllocsPerRun(100, func() {
		if !xread.MayBlock(args) {
			t.Fatal("XREAD BLOCK does not block")
		}
	})
	if allocs != 0 {
		t.Fatalf("MayBlock allocated %v times", allocs)
	}
}

// entry is one table row with the spelling an oracle uses.
type entry struct {
	name, sub string
	info      *Info
}

func entries() []entry {
	var out []entry
	for i := range commands {
		c := &commands[i]
		out = append(out, entry{name: c.key, info: c})
		for j := range c.subs {
			out = append(out, entry{name: c.key, sub: c.subs[j].key, info: &c.subs[j]})
		}
	}
	return out
}

// TestLookupProperty: any letter case of any table name, given as string or []byte, finds the
// same row; any other name finds nothing (the oracle is a map from lower-case names).
func TestLookupProperty(t *testing.T) {
	all := entries()
	oracle := map[string]*Info{}
	for _, e := range all {
		oracle[e.name+" "+e.sub] = e.info
	}
	mangle := func(t *rapid.T, s, label string) string {
		b := []byte(s)
		for i := range b {
			if rapid.Bool().Draw(t, label) {
				b[i] = upper(b[i])
			}
		}
		return string(b)
	}
	rapid.Check(t, func(t *rapid.T) {
		var name, sub string
		if rapid.Bool().Draw(t, "known") {
			e := rapid.SampledFrom(all).Draw(t, "entry")
			name, sub = mangle(t, e.name, "upper"), mangle(t, e.sub, "upper")
		} else {
			name = rapid.StringMatching(`[a-zA-Z_|-]{0,12}`).Draw(t, "name")
			sub = rapid.StringMatching(`[a-zA-Z_-]{0,12}`).Draw(t, "sub")
		}
		want := oracle[strings.ToLower(name)+" "+strings.ToLower(sub)]
		if want == nil {
			want = oracle[strings.ToLower(name)+" "] // a container, or a command ignoring sub
		}
		for _, got := range []*Info{Lookup(name, sub), Lookup([]byte(name), []byte(sub))} {
			if got != want {
				t.Fatalf("Lookup(%q, %q) = %v, want %v", name, sub, got, want)
			}
		}
	})
}

// adminWant is the admin set the rule must produce from Redis 7.0's categories and the
// overlay; a change to either shows up here for review.
var adminWant = []string{
	"ACL DELUSER", "ACL DRYRUN", "ACL GETUSER", "ACL LIST", "ACL LOAD", "ACL LOG", "ACL SAVE",
	"ACL SETUSER", "ACL USERS", "BGREWRITEAOF", "BGSAVE", "CLIENT KILL", "CLIENT LIST",
	"CLIENT NO-EVICT", "CLIENT PAUSE", "CLIENT UNBLOCK", "CLIENT UNPAUSE", "CLUSTER ADDSLOTS",
	"CLUSTER ADDSLOTSRANGE", "CLUSTER BUMPEPOCH", "CLUSTER COUNT-FAILURE-REPORTS",
	"CLUSTER DELSLOTS", "CLUSTER DELSLOTSRANGE", "CLUSTER FAILOVER", "CLUSTER FLUSHSLOTS",
	"CLUSTER FORGET", "CLUSTER MEET", "CLUSTER REPLICAS", "CLUSTER REPLICATE", "CLUSTER RESET",
	"CLUSTER SAVECONFIG", "CLUSTER SET-CONFIG-EPOCH", "CLUSTER SETSLOT", "CLUSTER SLAVES",
	"CONFIG GET", "CONFIG RESETSTAT", "CONFIG REWRITE", "CONFIG SET", "DEBUG", "FAILOVER",
	"FLUSHALL", "FLUSHDB", "FUNCTION DELETE", "FUNCTION FLUSH", "FUNCTION KILL",
	"FUNCTION RESTORE", "LATENCY DOCTOR", "LATENCY GRAPH", "LATENCY HISTOGRAM",
	"LATENCY HISTORY", "LATENCY LATEST", "LATENCY RESET", "MIGRATE", "MODULE LIST",
	"MODULE LOAD", "MODULE LOADEX", "MODULE UNLOAD", "MONITOR", "PFDEBUG", "PFSELFTEST",
	"PSYNC", "REPLCONF", "REPLICAOF", "RESTORE", "RESTORE-ASKING", "SAVE", "SCRIPT FLUSH",
	"SCRIPT KILL", "SENTINEL", "SENTINEL CONFIG", "SENTINEL DEBUG", "SENTINEL FAILOVER",
	"SENTINEL FLUSHCONFIG", "SENTINEL IS-MASTER-DOWN-BY-ADDR", "SENTINEL MONITOR",
	"SENTINEL REMOVE", "SENTINEL RESET", "SENTINEL SET", "SENTINEL SIMULATE-FAILURE",
	"SHUTDOWN", "SLAVEOF", "SLOWLOG GET", "SLOWLOG LEN", "SLOWLOG RESET", "SWAPDB", "SYNC",
}

func TestAdminRule(t *testing.T) {
	var got []string
	for _, e := range entries() {
		if e.info.Admin() {
			got = append(got, e.info.Name())
		}
	}
	sort.Strings(got)
	if strings.Join(got, ",") != strings.Join(adminWant, ",") {
		t.Errorf("admin commands changed:\n got %v\nwant %v", got, adminWant)
	}
	// The rule itself, on every row: @admin or @dangerous unless exempt, plus the additions.
	exempt := map[string]bool{"INFO": true, "ROLE": true, "LASTSAVE": true, "KEYS": true, "SORT": true, "SORT_RO": true,
		"SENTINEL MASTERS": true, "SENTINEL MASTER": true, "SENTINEL REPLICAS": true, "SENTINEL SLAVES": true,
		"SENTINEL SENTINELS": true, "SENTINEL GET-MASTER-ADDR-BY-NAME": true, "SENTINEL CKQUORUM": true,
		"SENTINEL MYID": true, "SENTINEL INFO-CACHE": true, "SENTINEL PENDING-SCRIPTS": true}
	for _, e := range entries() {
		i := e.info
		caught := i.Categories()&(CatAdmin|CatDangerous) != 0
		if caught && !exempt[i.Name()] && !i.Admin() {
			t.Errorf("%s is in @admin/@dangerous but not admin", i.Name())
		}
		if exempt[i.Name()] && (i.Admin() || !caught) {
			t.Errorf("%s: exemption not applied (admin=%v, caught=%v)", i.Name(), i.Admin(), caught)
		}
	}
}

// TestSessionCommands: every command the issue names, and the rest found by reading the 7.0
// command list, changes its connection; ordinary commands do not.
func TestSessionCommands(t *testing.T) {
	want := map[string]Session{
		"MULTI": SessionTransaction, "EXEC": SessionTransaction, "DISCARD": SessionTransaction,
		"WATCH": SessionWatch, "UNWATCH": SessionWatch,
		"SELECT": SessionState, "RESET": SessionState, "HELLO": SessionState, "AUTH": SessionState,
		"READONLY": SessionState, "READWRITE": SessionState, "ASKING": SessionState,
		"CLIENT SETNAME": SessionState, "CLIENT TRACKING": SessionState, "CLIENT CACHING": SessionState,
		"CLIENT NO-EVICT": SessionState, "CLIENT NO-TOUCH": SessionState, "CLIENT SETINFO": SessionState,
		"REPLCONF":  SessionState,
		"SUBSCRIBE": SessionSubscribe, "PSUBSCRIBE": SessionSubscribe, "SSUBSCRIBE": SessionSubscribe,
		"UNSUBSCRIBE": SessionSubscribe, "PUNSUBSCRIBE": SessionSubscribe, "SUNSUBSCRIBE": SessionSubscribe,
		"QUIT": SessionTakeover, "MONITOR": SessionTakeover, "CLIENT REPLY": SessionTakeover,
		"SYNC": SessionTakeover, "PSYNC": SessionTakeover, "SCRIPT DEBUG": SessionTakeover,
	}
	for _, e := range entries() {
		i := e.info
		if got := i.Session(); got != want[i.Name()] {
			t.Errorf("%s: session %v, want %v", i.Name(), got, want[i.Name()])
		}
		if i.SessionChanging() != (want[i.Name()] != SessionNone) {
			t.Errorf("%s: SessionChanging disagrees with Session", i.Name())
		}
		if i.SessionChanging() && i.Alternative() == "" {
			t.Errorf("%s: no alternative to name", i.Name())
		}
		delete(want, i.Name())
	}
	if len(want) > 0 {
		t.Errorf("not in the table: %v", want)
	}
	for _, name := range []string{"GET", "SET", "CLIENT ID", "CLIENT INFO", "PUBLISH", "SWAPDB", "EVAL"} {
		var i *Info
		if c, s, ok := strings.Cut(name, " "); ok {
			i = Lookup(c, s)
		} else {
			i = Lookup(name, "")
		}
		if i == nil || i.SessionChanging() {
			t.Errorf("%s must not change its connection (%v)", name, i)
		}
	}
}

func split(s string) [][]byte {
	var out [][]byte
	for _, f := range strings.Fields(s) {
		out = append(out, []byte(f))
	}
	return out
}

func TestMayBlock(t *testing.T) {
	for _, tc := range []struct {
		call string
		want bool
	}{
		{"BLPOP a 0", true},
		{"brpop a b 1.5", true},
		{"BZMPOP 0 1 z MIN", true},
		{"WAIT 1 0", true},
		{"WAITAOF 1 0 0", true},
		{"XREAD STREAMS s 0", false},
		{"XREAD COUNT 5 STREAMS s 0", false},
		{"XREAD BLOCK 100 STREAMS s 0", true},
		{"xread count 5 block 0 streams s 0", true},
		{"XREAD STREAMS BLOCK 0", false}, // BLOCK is a stream name here
		{"XREADGROUP GROUP g c BLOCK 0 STREAMS s >", true},
		{"XREADGROUP GROUP g c COUNT 1 STREAMS s >", false},
		{"GET k", false},
		{"LPOP k", false},
	} {
		args := split(tc.call)
		i := Lookup(args[0], nil)
		if i == nil {
			t.Fatalf("%s: unknown", tc.call)
		}
		if got := i.MayBlock(args); got != tc.want {
			t.Errorf("%s: MayBlock = %v, want %v", tc.call, got, tc.want)
		}
	}
	var always []string
	for _, e := range entries() {
		if e.info.Blocking() == BlockingAlways {
			always = append(always, e.info.Name())
		}
	}
	sort.Strings(always)
	want := "BLMOVE,BLMPOP,BLPOP,BRPOP,BRPOPLPUSH,BZMPOP,BZPOPMAX,BZPOPMIN,WAIT,WAITAOF"
	if got := strings.Join(always, ","); got != want {
		t.Errorf("always-blocking commands: %s, want %s", got, want)
	}
}

func TestPredicates(t *testing.T) {
	get, set, publish := Lookup("GET", ""), Lookup("SET", ""), Lookup("PUBLISH", "")
	if !get.ReadOnly() || get.Write() || !set.Write() || set.ReadOnly() || !publish.PubSub() {
		t.Fatal("flag predicates disagree with Redis's flags")
	}
	if !get.InCategory(CatRead|CatString) || get.InCategory(CatWrite) || !get.Has(FlagFast) {
		t.Fatal("category predicates disagree with Redis's categories")
	}
	if first, last, step := get.LegacyKeys(); first != 1 || last != 1 || step != 1 {
		t.Fatalf("GET legacy keys %d %d %d", first, last, step)
	}
	if get.Arity() != 2 || !Lookup("CLIENT", "").Container() || get.Container() {
		t.Fatal("arity or container wrong")
	}
	if !Lookup("CLIENT", "NO-TOUCH").Extra() || get.Extra() {
		t.Fatal("extra commands are not marked")
	}
	if RedisVersion == "" || len(Commands()) != len(commands) {
		t.Fatal("version or command list missing")
	}
}

// TestKeysSpecForms pins the evaluation of the forms the live comparison with COMMAND GETKEYS
// cannot reach: MIGRATE's backward keyword search (Redis's own key finder takes over for it),
// malformed key counts and short calls.
func TestKeysSpecForms(t *testing.T) {
	for _, tc := range []struct {
		call     string
		keys     []int
		complete bool
	}{
		// Searched backward from the second-to-last argument: the last KEYS wins.
		{"MIGRATE h 6379 x 0 5000 KEYS a KEYS b", []int{3, 9}, false},
		{"MIGRATE h 6379 x 0 5000 KEYS a b", []int{3, 7, 8}, false},
		{"MIGRATE h 6379 k 0 5000", []int{3}, false},
		{"EVAL s 2 k1 k2", []int{3, 4}, true},
		{"EVAL s 02 k1 k2", nil, false},
		{"EVAL s -1 k1", nil, false},
		{"EVAL s x", nil, false},
		{"EVAL s", nil, false},
		{"EVAL s 3 k1", []int{3}, true}, // variadic: fewer keys, the server complains
		{"GET", nil, false},             // fixed arity: not a valid call
		{"MSET k1 v1 k2", []int{1, 3}, true},
		{"XREAD STREAMS a b c 0 0 0", []int{2, 3, 4}, true},
		{"XREAD COUNT 2 STREAMS a 0", []int{4}, true},
		{"XREAD COUNT 2", nil, true},
		{"GEORADIUS k 0 0 1 m STORE d", []int{1, 7}, true},
		{"SPUBLISH ch msg", nil, true}, // a shard channel is not a key
		{"SORT k BY w", []int{1}, false},
	} {
		args := split(tc.call)
		var sub []byte
		if len(args) > 1 {
			sub = args[1]
		}
		keys, complete := Lookup(args[0], sub).Keys(args, nil)
		if !slicesEqual(keys, tc.keys) || complete != tc.complete {
			t.Errorf("%s: keys %v complete %v, want %v %v", tc.call, keys, complete, tc.keys, tc.complete)
		}
	}
}

func slicesEqual(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
