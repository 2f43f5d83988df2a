package client_test

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode"

	"pgregory.net/rapid"

	"github.com/respire-go/respire/client"
	"github.com/respire-go/respire/netio/redistest"
)

// commandCalls returns the server's call count per command (INFO commandstats), keyed like
// "select" or "client|reply".
func commandCalls(t *testing.T, srv *redistest.Server) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	for _, line := range strings.Split(srv.Do(t, "INFO", "commandstats"), "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":calls=")
		if !ok {
			continue
		}
		calls, _, _ := strings.Cut(rest, ",")
		n, err := strconv.ParseInt(calls, 10, 64)
		if err != nil {
			t.Fatalf("INFO commandstats line %q", line)
		}
		out[strings.TrimPrefix(name, "cmdstat_")] = n
	}
	return out
}

// waitCalls waits until the server counted at least n calls of command.
func waitCalls(t *testing.T, srv *redistest.Server, command string, n int64) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for commandCalls(t, srv)[command] < n {
		if time.Now().After(deadline) {
			t.Fatalf("the server never counted %d %s calls", n, command)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// sessionCalls are raw calls that change their connection, with the commandstats key of
// each; the command name and subcommand come in every carrier type and letter case.
var sessionCalls = []struct {
	stat string
	args []any
}{
	{"multi", []any{"MULTI"}},
	{"exec", []any{[]byte("exec")}},
	{"discard", []any{"Discard"}},
	{"watch", []any{"WATCH", "k"}},
	{"unwatch", []any{[]byte("UnWatch")}},
	{"select", []any{"SELECT", "5"}},
	{"select", []any{"select", 5}},
	{"reset", []any{[]byte("RESET")}},
	{"hello", []any{"hello", "3"}},
	{"auth", []any{"AUTH", "someone", "s3cr3t-arg"}},
	{"quit", []any{"QUIT"}},
	{"client|reply", []any{"CLIENT", "REPLY", "SKIP"}},
	{"client|reply", []any{"client", []byte("reply"), "off"}},
	{"client|tracking", []any{"CLIENT", []byte("TRACKING"), "ON"}},
	{"client|setname", []any{[]byte("Client"), "SetName", "renamed-xyz"}},
	{"client|caching", []any{"CLIENT", "CACHING", "YES"}},
	{"client|no-evict", []any{"CLIENT", "NO-EVICT", "ON"}},
	{"readonly", []any{"READONLY"}},
	{"readwrite", []any{"readwrite"}},
	{"asking", []any{"ASKING"}},
	{"monitor", []any{"MONITOR"}},
	{"subscribe", []any{"SUBSCRIBE", "c"}},
	{"psubscribe", []any{"psubscribe", "p*"}},
	{"ssubscribe", []any{"SSUBSCRIBE", "s"}},
	{"unsubscribe", []any{"UNSUBSCRIBE"}},
	{"punsubscribe", []any{"PUNSUBSCRIBE"}},
	{"sunsubscribe", []any{"SUNSUBSCRIBE"}},
	{"script|debug", []any{"SCRIPT", []byte("debug"), "YES"}},
	{"sync", []any{"SYNC"}},
	{"psync", []any{"PSYNC", "?", "-1"}},
	{"replconf", []any{"REPLCONF", "listening-port", "1"}},
}

// TestDoRefusesSessionCommands: every command whose effect outlives it is refused on the shared
// connection before anything is sent, with an error that names the alternative, whatever the
// Go type and letter case of its name and subcommand. AllowAdmin is on, so that the admin
// guard (MONITOR, CLIENT NO-EVICT, SYNC, ...) is not what refuses them.
func TestDoRefusesSessionCommands(t *testing.T) {
	checkNoLeaks(t)
	srv := redistest.Start(t, redistest.Config{})
	ctx := ctxT(t)
	c, err := client.Connect(ctx, client.Options{Endpoints: []client.Endpoint{endpointOf(srv)}, AllowAdmin: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	before := commandCalls(t, srv)
	for _, tc := range sessionCalls {
		_, err := c.Do(ctx, tc.args...)
		var se *client.SessionCommandError
		if !errors.Is(err, client.ErrSessionCommand) || !errors.As(err, &se) {
			t.Errorf("%v: %v, want a *SessionCommandError", tc.args, err)
			continue
		}
		if se.Path != "Client.Do" || se.Alternative == "" || se.Reason == "" ||
			se.Command != strings.ToUpper(strings.ReplaceAll(tc.stat, "|", " ")) {
			t.Errorf("%v: incomplete refusal %#v", tc.args, se)
		}
		if strings.Contains(err.Error(), "s3cr3t-arg") || strings.Contains(err.Error(), "renamed-xyz") {
			t.Errorf("%v: the refusal repeats an argument: %v", tc.args, err)
		}
	}
	var se *client.SessionCommandError
	if _, err := c.Do(ctx, "SELECT", "5"); !errors.As(err, &se) || !strings.Contains(err.Error(), "Options.Database") {
		t.Errorf("SELECT's refusal must name Options.Database: %v", err)
	}
	if _, err := c.Do(ctx, "MULTI"); !strings.Contains(fmt.Sprint(err), "DedicatedConn.Exec") {
		t.Errorf("MULTI's refusal must name the transaction API: %v", err)
	}
	if _, err := c.Do(ctx, "SUBSCRIBE", "x"); !strings.Contains(fmt.Sprint(err), "Client.Subscribe") {
		t.Errorf("SUBSCRIBE's refusal must name Client.Subscribe: %v", err)
	}
	after := commandCalls(t, srv)
	for _, tc := range sessionCalls {
		if after[tc.stat] != before[tc.stat] {
			t.Errorf("%s reached the server (%d calls before, %d after)", tc.stat, before[tc.stat], after[tc.stat])
		}
	}
	// Commands that only read their connection's state are not refused.
	for _, args := range [][]any{{"CLIENT", "ID"}, {"client", []byte("info")}, {"CLIENT", "GETNAME"}, {"ECHO", "x"}} {
		if _, err := c.Do(ctx, args...); err != nil {
			t.Errorf("%v: %v", args, err)
		}
	}
}

// TestSharedConnectionKeepsCallersApart runs the five raw calls of issue 10 (CLIENT REPLY SKIP,
// MULTI, SELECT 5, RESET, CLIENT REPLY OFF) again and again against one shared connection
// while eight callers write and read their own keys and counters, checking every reply
// against what they asked for. On the code before the refusals, the first MULTI made GETs
// return QUEUED, SELECT moved every caller to database 5, RESET logged the connection out and
// CLIENT REPLY made replies go to the wrong callers or never come.
func TestSharedConnectionKeepsCallersApart(t *testing.T) {
	checkNoLeaks(t)
	srv := redistest.Start(t, redistest.Config{})
	ctx := ctxT(t)
	c, err := client.Connect(ctx, client.Options{Endpoints: []client.Endpoint{endpointOf(srv)}, Connections: 1,
		CommandTimeout: 3 * time.Second, ClientName: "shared"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	bad := [][]any{
		{"CLIENT", "REPLY", "SKIP"},
		{"MULTI"},
		{"SELECT", "5"},
		{"RESET"},
		{"CLIENT", "REPLY", "OFF"},
	}
	const callers, rounds = 8, 150
	var wg sync.WaitGroup
	errs := make(chan error, callers+1)
	stop := make(chan struct{})
	refused := 0
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			for _, args := range bad {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := c.Do(ctx, args...); !errors.Is(err, client.ErrSessionCommand) {
					errs <- fmt.Errorf("%v was not refused: %v", args, err)
					return
				}
				refused++
			}
		}
	}()
	var callersWG sync.WaitGroup
	for i := range callers {
		callersWG.Add(1)
		go func() {
			defer callersWG.Done()
			key, ctr := "caller:"+strconv.Itoa(i), "counter:"+strconv.Itoa(i)
			for n := 1; n <= rounds; n++ {
				want := key + ":" + strconv.Itoa(n)
				if err := c.Set(ctx, key, want); err != nil {
					errs <- fmt.Errorf("caller %d SET: %w", i, err)
					return
				}
				if got, ok, err := c.Get(ctx, key); err != nil || !ok || got != want {
					errs <- fmt.Errorf("caller %d GET %s = %q %v %v, want %q", i, key, got, ok, err, want)
					return
				}
				if got, err := c.Incr(ctx, ctr); err != nil || got != int64(n) {
					errs <- fmt.Errorf("caller %d INCR %s = %d %v, want %d", i, ctr, got, err, n)
					return
				}
			}
		}()
	}
	callersWG.Wait()
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if refused < len(bad) {
		t.Fatalf("only %d refusals: the session commands did not run alongside the callers", refused)
	}
	// The server agrees: everything in database 0, the connection untouched.
	for i := range callers {
		if got := srv.Do(t, "GET", "caller:"+strconv.Itoa(i)); got != "caller:"+strconv.Itoa(i)+":"+strconv.Itoa(rounds) {
			t.Errorf("server GET caller:%d = %q", i, got)
		}
	}
	if ks := srv.Do(t, "INFO", "keyspace"); strings.Contains(ks, "db5") {
		t.Errorf("keys reached database 5:\n%s", ks)
	}
	var line string
	for _, l := range strings.Split(srv.Do(t, "CLIENT", "LIST"), "\n") {
		if strings.Contains(l, " name=shared ") {
			line = l
		}
	}
	if !strings.Contains(line, " db=0 ") || !strings.Contains(line, " flags=N ") || !strings.Contains(line, " multi=-1 ") {
		t.Errorf("the shared connection's state changed: %q", line)
	}
}

// TestUnguardedSessionCommandMixesUpReplies is the positive control of the refusals: the same
// CLIENT REPLY SKIP, sent the way Client.Do used to send it, makes a later GET return another
// caller's value. The server receives the commands in a fixed order (each is counted before
// the next is sent): CLIENT REPLY SKIP (no reply of its own), GET a (reply skipped), GET b,
// GET c.
func TestUnguardedSessionCommandMixesUpReplies(t *testing.T) {
	checkNoLeaks(t)
	srv := redistest.Start(t, redistest.Config{})
	ctx := ctxT(t)
	c, err := client.Connect(ctx, client.Options{Endpoints: []client.Endpoint{endpointOf(srv)}, Connections: 1,
		CommandTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, k := range []string{"a", "b", "c"} {
		must(t, c.Set(ctx, k, "value-of-"+k))
	}
	type result struct {
		value string
		err   error
	}
	skip := make(chan result, 1)
	go func() {
		v, err := client.DoUnguarded(ctx, c, "CLIENT", "REPLY", "SKIP")
		skip <- result{string(v.Str), err}
	}()
	waitCalls(t, srv, "client|reply", 1)
	gets := map[string]chan result{}
	base := commandCalls(t, srv)["get"]
	for i, k := range []string{"a", "b", "c"} {
		ch := make(chan result, 1)
		gets[k] = ch
		go func() {
			v, _, err := c.Get(ctx, k)
			ch <- result{v, err}
		}()
		waitCalls(t, srv, "get", base+int64(i)+1)
	}
	if r := <-skip; r.err != nil || r.value != "value-of-b" {
		t.Fatalf("unguarded CLIENT REPLY SKIP returned %q, %v; want GET b's reply", r.value, r.err)
	}
	if r := <-gets["a"]; r.err != nil || r.value != "value-of-c" {
		t.Fatalf("GET a returned %q, %v; want GET c's reply (the mix-up)", r.value, r.err)
	}
	for _, k := range []string{"b", "c"} {
		if r := <-gets[k]; !errors.Is(r.err, client.ErrUnknownOutcome) {
			t.Fatalf("GET %s: %q, %v; want a timeout with unknown outcome (its reply went to another caller)", k, r.value, r.err)
		}
	}
}

// TestQueuedIsNotOK: after a MULTI that reached the shared connection (sent unguarded, as
// Client.Do used to), SET's reply is QUEUED. Set must not report success: it fails with a
// protocol error and an unknown outcome, the connection is closed (so the server discards
// the transaction and the key is never written), and the client goes on with a new one. On
// the code before the reply shapes, Set returned nil for a key that never reached the
// database.
func TestQueuedIsNotOK(t *testing.T) {
	checkNoLeaks(t)
	srv := redistest.Start(t, redistest.Config{})
	ctx := ctxT(t)
	c, err := client.Connect(ctx, client.Options{Endpoints: []client.Endpoint{endpointOf(srv)}, Connections: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	id, err := c.Do(ctx, "CLIENT", "ID")
	must(t, err)
	if v, err := client.DoUnguarded(ctx, c, "MULTI"); err != nil || string(v.Str) != "OK" {
		t.Fatalf("unguarded MULTI: %v %v", v, err)
	}
	err = c.Set(ctx, "queued", "v")
	if !errors.Is(err, client.ErrProtocol) || !errors.Is(err, client.ErrUnknownOutcome) {
		t.Fatalf("SET answered QUEUED: %v; want a protocol error with an unknown outcome", err)
	}
	if got := srv.Do(t, "GET", "queued"); got != "(nil)" {
		t.Fatalf("the key was written: %q", got)
	}
	// The connection is closed; the next command goes to its replacement, even when it meets the
	// failed connection before the client processed its loss (the engine parks it until then).
	must(t, c.Set(ctx, "after", "v"))
	id2, err := c.Do(ctx, "CLIENT", "ID")
	must(t, err)
	if id2.Int == id.Int {
		t.Fatalf("the connection that answered QUEUED (CLIENT ID %d) is still in use", id.Int)
	}
	if got := srv.Do(t, "GET", "after"); got != "v" {
		t.Fatalf("SET on the new connection: %q", got)
	}
	if strings.Contains(srv.Do(t, "CLIENT", "LIST"), "id="+strconv.FormatInt(id.Int, 10)+" ") {
		t.Fatal("the connection that answered QUEUED was not closed")
	}
}

// TestAdminGuardSeesBytes: the admin guard classifies the subcommand (and the name) from its
// bytes, on every raw path. Before, CONFIG []byte("SET") changed maxmemory-policy and
// ACL []byte("SETUSER") created a user with every permission.
func TestAdminGuardSeesBytes(t *testing.T) {
	checkNoLeaks(t)
	srv := redistest.Start(t, redistest.Config{})
	ctx := ctxT(t)
	c, err := client.Connect(ctx, client.Options{Endpoints: []client.Endpoint{endpointOf(srv)}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	configSet := []any{"CONFIG", []byte("SET"), "maxmemory-policy", "allkeys-lru"}
	aclSetUser := []any{"ACL", []byte("SETUSER"), "intruder", "on", ">pw", "+@all", "~*"}
	for _, args := range [][]any{configSet, aclSetUser,
		{[]byte("config"), "set", "maxmemory-policy", "allkeys-lru"},
		{[]byte("Acl"), []byte("SetUser"), "intruder", "on"},
		{"FLUSHALL"}, {[]byte("flushall")}} {
		if _, err := c.Do(ctx, args...); !errors.Is(err, client.ErrAdminDisabled) {
			t.Errorf("Client.Do %v: %v", args, err)
		}
	}
	err = c.WithDedicated(ctx, func(d *client.DedicatedConn) error {
		for _, args := range [][]any{configSet, aclSetUser} {
			if _, err := d.Do(ctx, args...); !errors.Is(err, client.ErrAdminDisabled) {
				t.Errorf("DedicatedConn.Do %v: %v", args, err)
			}
		}
		for _, args := range [][]any{configSet, aclSetUser} {
			_, err := d.Exec(ctx, func(tx *client.Tx) {
				tx.Do("SET", "k", "v")
				tx.Do(args...)
			})
			if !errors.Is(err, client.ErrAdminDisabled) {
				t.Errorf("Tx.Do %v: %v", args, err)
			}
		}
		return nil
	})
	must(t, err)
	if got := srv.Do(t, "CONFIG", "GET", "maxmemory-policy"); !strings.HasSuffix(got, "noeviction") {
		t.Errorf("maxmemory-policy changed: %q", got)
	}
	if got := srv.Do(t, "ACL", "USERS"); strings.Contains(got, "intruder") {
		t.Errorf("the user was created: %q", got)
	}
	if got := srv.Do(t, "GET", "k"); got != "(nil)" {
		t.Errorf("a refused transaction ran: k = %q", got)
	}
}

// clientLine returns the CLIENT LIST line of the connection with the given CLIENT ID.
func clientLine(t *testing.T, srv *redistest.Server, id int64) string {
	t.Helper()
	for _, l := range strings.Split(srv.Do(t, "CLIENT", "LIST"), "\n") {
		if strings.HasPrefix(l, "id="+strconv.FormatInt(id, 10)+" ") {
			return l
		}
	}
	return ""
}

// TestDedicatedStateIsNotInherited: a dedicated connection whose state a raw command changed,
// directly or inside a transaction, is discarded at Close instead of being handed to the next
// renter. Before, a SELECT queued in a transaction left the pooled connection in database 5.
func TestDedicatedStateIsNotInherited(t *testing.T) {
	checkNoLeaks(t)
	srv := redistest.Start(t, redistest.Config{})
	ctx := ctxT(t)
	c, err := client.Connect(ctx, client.Options{Endpoints: []client.Endpoint{endpointOf(srv)}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	rentID := func() int64 {
		var id int64
		must(t, c.WithDedicated(ctx, func(d *client.DedicatedConn) error {
			v, err := d.Do(ctx, "CLIENT", "ID")
			id = v.Int
			return err
		}))
		return id
	}
	clean := rentID()
	if rentID() != clean {
		t.Fatal("a clean dedicated connection was not reused: the test cannot tell discarding from churn")
	}
	for _, tc := range []struct {
		name string
		use  func(d *client.DedicatedConn) error
	}{
		{"SELECT", func(d *client.DedicatedConn) error {
			_, err := d.Do(ctx, []byte("select"), 5)
			return err
		}},
		{"CLIENT SETNAME", func(d *client.DedicatedConn) error {
			_, err := d.Do(ctx, "client", []byte("SETNAME"), "renamed")
			return err
		}},
		{"SELECT in a transaction", func(d *client.DedicatedConn) error {
			_, err := d.Exec(ctx, func(tx *client.Tx) {
				tx.Do("SELECT", "5")
				tx.Set("in-db5", "v")
			})
			return err
		}},
	} {
		var used int64
		must(t, c.WithDedicated(ctx, func(d *client.DedicatedConn) error {
			v, err := d.Do(ctx, "CLIENT", "ID")
			used = v.Int
			if err != nil {
				return err
			}
			return tc.use(d)
		}))
		next := rentID()
		if next == used {
			t.Errorf("%s: the next renter got the changed connection (CLIENT ID %d)", tc.name, used)
		}
		if line := clientLine(t, srv, next); !strings.Contains(line, " db=0 ") || strings.Contains(line, "name=renamed") {
			t.Errorf("%s: the next renter's connection: %q", tc.name, line)
		}
	}
	if ks := srv.Do(t, "INFO", "keyspace"); !strings.Contains(ks, "db5") {
		t.Fatalf("the transaction's SELECT did not run, so the test proved nothing:\n%s", ks)
	}
}

// TestDedicatedDoRules: DedicatedConn.Do runs WATCH and state changes but refuses what Exec,
// the pub/sub API or nothing at all must handle; Tx.Do refuses the transaction commands.
func TestDedicatedDoRules(t *testing.T) {
	checkNoLeaks(t)
	srv := redistest.Start(t, redistest.Config{})
	ctx := ctxT(t)
	c, err := client.Connect(ctx, client.Options{Endpoints: []client.Endpoint{endpointOf(srv)}, AllowAdmin: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	before := commandCalls(t, srv)
	must(t, c.WithDedicated(ctx, func(d *client.DedicatedConn) error {
		for _, args := range [][]any{{"MULTI"}, {[]byte("exec")}, {"DISCARD"}, {"SUBSCRIBE", "c"}, {"MONITOR"},
			{"CLIENT", []byte("reply"), "SKIP"}, {"QUIT"}, {"SCRIPT", "DEBUG", "YES"}} {
			var se *client.SessionCommandError
			if _, err := d.Do(ctx, args...); !errors.As(err, &se) || se.Path != "DedicatedConn.Do" {
				t.Errorf("DedicatedConn.Do %v: %v", args, err)
			}
		}
		if _, err := d.Do(ctx, "watch", "w"); err != nil {
			return err
		}
		for _, args := range [][]any{{"MULTI"}, {"WATCH", "x"}, {[]byte("unwatch")}, {"SUBSCRIBE", "c"}, {"CLIENT", "REPLY", "OFF"}} {
			_, err := d.Exec(ctx, func(tx *client.Tx) { tx.Do(args...) })
			var se *client.SessionCommandError
			if !errors.As(err, &se) || se.Path != "Tx.Do" {
				t.Errorf("Tx.Do %v: %v", args, err)
			}
		}
		return nil
	}))
	// The UNWATCH at Close is pipelined ahead of the next renter's commands, not awaited:
	// wait (boundedly) until the server has run it before reading the counts.
	after := commandCalls(t, srv)
	for deadline := time.Now().Add(5 * time.Second); after["unwatch"] == before["unwatch"] && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
		after = commandCalls(t, srv)
	}
	for _, stat := range []string{"multi", "exec", "discard", "subscribe", "monitor", "client|reply", "quit", "script|debug"} {
		if after[stat] != before[stat] {
			t.Errorf("%s reached the server", stat)
		}
	}
	if after["watch"] != before["watch"]+1 || after["unwatch"] != before["unwatch"]+1 {
		t.Errorf("WATCH ran %d times and the UNWATCH at Close %d times, want once each",
			after["watch"]-before["watch"], after["unwatch"]-before["unwatch"])
	}
}

// TestBlockingRawCommandRoutedFromBytes: a blocking command given as []byte, or XREAD with a
// BLOCK option in any case, goes to a dedicated connection and does not hold up the shared one.
func TestBlockingRawCommandRoutedFromBytes(t *testing.T) {
	checkNoLeaks(t)
	srv := redistest.Start(t, redistest.Config{})
	ctx := ctxT(t)
	c, err := client.Connect(ctx, client.Options{Endpoints: []client.Endpoint{endpointOf(srv)}, Connections: 1,
		CommandTimeout: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, args := range [][]any{
		{[]byte("blpop"), "empty-list", 1},
		{"XREAD", []byte("block"), 1000, "STREAMS", "empty-stream", "$"},
	} {
		done := make(chan error, 1)
		go func() {
			_, err := c.Do(ctx, args...)
			done <- err
		}()
		// The block lasts a second, twice CommandTimeout: on a shared connection it would
		// time out, and the PINGs below would wait behind it.
		time.Sleep(100 * time.Millisecond)
		for range 5 {
			must(t, c.Ping(ctx))
		}
		if err := <-done; err != nil {
			t.Errorf("%v: %v", args, err)
		}
	}
}

// TestSetFailsOnQueuedReply: a server (a loopback fake) that answers SET with +QUEUED makes
// Set fail with a protocol error and an unknown outcome, never nil, and the connection is
// closed.
func TestSetFailsOnQueuedReply(t *testing.T) {
	checkNoLeaks(t)
	fake := startQueuedFake(t)
	ctx := ctxT(t)
	c, err := client.Connect(ctx, client.Options{Endpoints: []client.Endpoint{fake.endpoint()}, Protocol: client.ProtocolRESP2,
		DisableLibraryInfo: true, Connections: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	must(t, c.Ping(ctx))
	err = c.Set(ctx, "k", "v")
	var ue *client.UnknownOutcomeError
	if !errors.Is(err, client.ErrProtocol) || !errors.As(err, &ue) {
		t.Fatalf("SET answered +QUEUED: %v; want a protocol error with an unknown outcome", err)
	}
	if !fake.waitClosed(1) {
		t.Fatal("the connection that answered QUEUED was not closed")
	}
	must(t, c.Ping(ctx)) // a new connection
	if n := fake.accepted(); n < 2 {
		t.Fatalf("%d connections accepted, want a replacement", n)
	}
	if _, err := c.Do(ctx, "SET", "raw", "v"); err != nil {
		t.Fatalf("raw SET accepts any reply: %v", err)
	}
}

// refusedEverywhere are raw calls refused on every path (admin commands without AllowAdmin,
// and the session commands DedicatedConn.Do and Tx.Do refuse too); refusedShared are refused
// by Client.Do only. stat is the commandstats key.
var (
	refusedEverywhere = []struct {
		stat  string
		words []string
		admin bool
	}{
		{"config|set", []string{"config", "set", "maxmemory-policy", "allkeys-lru"}, true},
		{"acl|setuser", []string{"acl", "setuser", "intruder", "on", ">pw", "+@all", "~*"}, true},
		{"flushall", []string{"flushall"}, true},
		{"client|kill", []string{"client", "kill", "type", "normal"}, true},
		{"swapdb", []string{"swapdb", "0", "1"}, true},
		{"client|reply", []string{"client", "reply", "off"}, false},
		{"multi", []string{"multi"}, false},
		{"subscribe", []string{"subscribe", "news"}, false},
	}
	refusedShared = []struct {
		stat  string
		words []string
	}{
		{"select", []string{"select", "5"}},
		{"reset", []string{"reset"}},
		{"client|setname", []string{"client", "setname", "x"}},
		{"watch", []string{"watch", "k"}},
	}
)

// TestRefusalsHoldForEveryCarrier is a property over argument types and letter case: whichever
// of string or []byte carries each word, in whatever case, the admin guard and the session
// refusals hold on Client.Do, DedicatedConn.Do and Tx.Do, and nothing reaches the server.
func TestRefusalsHoldForEveryCarrier(t *testing.T) {
	checkNoLeaks(t)
	srv := redistest.Start(t, redistest.Config{})
	ctx := ctxT(t)
	c, err := client.Connect(ctx, client.Options{Endpoints: []client.Endpoint{endpointOf(srv)}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	d, err := c.Dedicated(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	before := commandCalls(t, srv)
	args := func(rt *rapid.T, words []string) []any {
		out := make([]any, len(words))
		for i, w := range words {
			b := []byte(w)
			for j := range b {
				if rapid.Bool().Draw(rt, "upper") {
					b[j] = byte(unicode.ToUpper(rune(b[j])))
				}
			}
			if rapid.Bool().Draw(rt, "bytes") {
				out[i] = b
			} else {
				out[i] = string(b)
			}
		}
		return out
	}
	rapid.Check(t, func(rt *rapid.T) {
		var a []any
		var want error
		path := rapid.SampledFrom([]string{"Client.Do", "DedicatedConn.Do", "Tx.Do"}).Draw(rt, "path")
		if path == "Client.Do" && rapid.Bool().Draw(rt, "shared-only") {
			r := rapid.SampledFrom(refusedShared).Draw(rt, "call")
			a, want = args(rt, r.words), client.ErrSessionCommand
		} else {
			r := rapid.SampledFrom(refusedEverywhere).Draw(rt, "call")
			a, want = args(rt, r.words), client.ErrSessionCommand
			if r.admin {
				want = client.ErrAdminDisabled
			}
		}
		var err error
		switch path {
		case "Client.Do":
			_, err = c.Do(ctx, a...)
		case "DedicatedConn.Do":
			_, err = d.Do(ctx, a...)
		default:
			_, err = d.Exec(ctx, func(tx *client.Tx) { tx.Do(a...) })
		}
		if !errors.Is(err, want) {
			rt.Fatalf("%s %v: %v, want %v", path, a, err, want)
		}
	})
	after := commandCalls(t, srv)
	for _, r := range refusedEverywhere {
		if after[r.stat] != before[r.stat] {
			t.Errorf("%s reached the server", r.stat)
		}
	}
	for _, r := range refusedShared {
		if after[r.stat] != before[r.stat] {
			t.Errorf("%s reached the server", r.stat)
		}
	}
	if after["exec"] != before["exec"] {
		t.Error("a refused transaction was sent")
	}
}
