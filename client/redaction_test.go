package client_test

import (
	"context"
	"crypto/ed25519"
	"crypto/tls"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/respire-go/respire/client"
	"github.com/respire-go/respire/netio/redistest"
)

// TestServerErrorsCarryNoKeysOrValues sends commands whose error replies echo their arguments
// to a real server, with a password equal to a key name, and checks that each *ServerError keeps
// the code and the reason while no key, value or password reaches its text.
func TestServerErrorsCarryNoKeysOrValues(t *testing.T) {
	redistest.Require(t)
	const (
		password = "counter" // also a key name
		key      = "user:4711:email"
		value    = "alice@example.com"
	)
	srv := redistest.Start(t, redistest.Config{Password: password})
	ctx := ctxT(t)
	c, err := client.Connect(ctx, client.Options{Endpoints: []client.Endpoint{endpointOf(srv)}, Password: password})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Incr(ctx, password); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		args []any
		code string
		want string
	}{
		{[]any{"GETX", key, value, password}, "ERR", "ERR unknown command 'GETX'"},
		{[]any{"getx", []byte(key)}, "ERR", "ERR unknown command 'getx'"},
		{[]any{"CONFIG", key}, "ERR", "ERR unknown subcommand '[redacted]'. Try CONFIG HELP."},
		{[]any{"XREADGROUP", "GROUP", "group-" + value, "consumer", "STREAMS", key, ">"}, "NOGROUP",
			"NOGROUP No such key '[redacted]' in XREADGROUP with GROUP option"},
		{[]any{"GET"}, "ERR", "ERR wrong number of arguments for 'get' command"},
		{[]any{"HSET", password, "field"}, "ERR", "ERR wrong number of arguments for 'hset' command"},
	}
	for _, tc := range cases {
		_, err := c.Do(ctx, tc.args...)
		var se *client.ServerError
		if !errors.As(err, &se) || se.Code != tc.code || se.Message != tc.want {
			t.Errorf("Do%q: got %v, want a *ServerError %q", tc.args, err, tc.want)
			continue
		}
		for _, secret := range []string{key, value, "4711", password + "'"} {
			if strings.Contains(err.Error(), secret) || strings.Contains(se.Message, secret) {
				t.Errorf("Do%q: the error carries %q: %v", tc.args, secret, err)
			}
		}
	}

	// A command the server refuses to queue inside MULTI.
	err = c.WithDedicated(ctx, func(d *client.DedicatedConn) error {
		_, err := d.Exec(ctx, func(tx *client.Tx) {
			tx.Set(password, "1")
			tx.Do("GETX", key, value)
		})
		return err
	})
	var qe *client.TxQueueError
	var se *client.ServerError
	if !errors.As(err, &qe) || !errors.As(err, &se) || se.Message != "ERR unknown command 'GETX'" {
		t.Fatalf("transaction: %v, want a *TxQueueError without the echo", err)
	}
	if strings.Contains(err.Error(), key) || strings.Contains(err.Error(), value) {
		t.Fatalf("the transaction error carries a key or a value: %v", err)
	}
}

// TestRenewalRejectionKeepsTheServersMessage renews credentials with wrong passwords that are
// parts of the server's reply (a prefix of the code, one letter, a word of the message): the
// *ServerError keeps WRONGPASS and its message intact.
func TestRenewalRejectionKeepsTheServersMessage(t *testing.T) {
	redistest.Require(t)
	srv := redistest.Start(t, redistest.Config{Password: firstSecret})
	var current atomic.Value
	current.Store(firstSecret)
	provider := providerFunc(func(context.Context) (client.Credentials, error) {
		return client.Credentials{Password: current.Load().(string)}, nil
	})
	ctx := ctxT(t)
	c, err := client.Connect(ctx, client.Options{Endpoints: []client.Endpoint{endpointOf(srv)}, Credentials: provider})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, pw := range []string{"WRONG", "a", "invalid", "ERR"} {
		waitUntil(t, "a connection with the right password", func() bool {
			current.Store(firstSecret)
			return c.Ping(ctx) == nil
		})
		current.Store(pw)
		err := c.RenewCredentials(ctx)
		var se *client.ServerError
		if !errors.As(err, &se) || se.Code != "WRONGPASS" ||
			se.Message != "WRONGPASS invalid username-password pair or user is disabled." {
			t.Fatalf("renewal with %q: %v, want WRONGPASS with its message intact", pw, err)
		}
	}
}

// leakyProvider is an application's provider that prints its own secret.
type leakyProvider struct{ Token string }

func (p leakyProvider) Credentials(context.Context) (client.Credentials, error) {
	return client.Credentials{Password: p.Token}, nil
}

// TestPrintedValuesNeverRevealSecrets prints every type that holds a secret (options given or
// parsed, clients, credentials, credential sources, on their own and nested, as values and
// pointers) with every fmt verb and flag, both slog handlers and encoding/json, and checks that no
// password, token or private key appears, raw or hex-encoded.
func TestPrintedValuesNeverRevealSecrets(t *testing.T) {
	const (
		password         = "pw-Alpha-7731"
		sentinelPassword = "pw-Bravo-8842"
		token            = "pw-Charlie-9953"
		sourcePassword   = "pw-Delta-0064"
	)
	_, key, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	tlsConfig := &tls.Config{ServerName: "cache.internal", Certificates: []tls.Certificate{{Certificate: [][]byte{{1, 2, 3}}, PrivateKey: key}}}
	opts := client.Options{
		Endpoints: []client.Endpoint{{Host: "cache.internal", Port: 6380}}, Username: "alice", Password: password,
		SentinelUsername: "watcher", SentinelPassword: sentinelPassword, TLS: tlsConfig, ClientName: "billing",
		ReconnectPolicy: &client.ReconnectPolicy{MaxAttempts: 3},
		Dialer:          func(context.Context, client.Endpoint) (net.Conn, error) { return nil, errors.New("no") },
		Logger:          slog.New(slog.DiscardHandler),
	}
	withProvider := client.Options{Endpoints: opts.Endpoints, Credentials: leakyProvider{Token: token}}
	uri, err := client.ParseURI("rediss://alice:" + password + "@cache.internal:6380/2?sentinelPassword=" + sentinelPassword)
	if err != nil {
		t.Fatal(err)
	}
	connString, err := client.ParseConnectionString("cache.internal:6380,user=alice,password=" + password +
		",sentinelPassword=" + sentinelPassword + ",ssl=true")
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.Create(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	creds := client.Credentials{Username: "alice", Password: sourcePassword}
	source := client.NewCredentialSource(creds)
	type nested struct {
		Options  client.Options
		Pointer  *client.Options
		Client   *client.Client
		Creds    client.Credentials
		CredsPtr *client.Credentials
		Source   *client.CredentialSource
		Provider client.Options
	}
	all := nested{opts, &uri, c, creds, &creds, source, withProvider}
	var queued *client.Tx
	ts := client.NewTxForTest(c)
	ts.Do("SET", "tx-key-"+password, "tx-value-"+token)
	ts.Do("AUTH", "alice", sourcePassword)
	queued = ts
	values := map[string]any{
		"Options": opts, "*Options": &opts, "parsed URI": uri, "*parsed URI": &uri,
		"parsed connection string": connString, "*parsed connection string": &connString,
		"Options with a provider": withProvider, "*Client": c, "Credentials": creds, "*Credentials": &creds,
		"*CredentialSource": source, "nested": all, "*nested": &all, "slice": []client.Options{opts, uri},
		"map": map[string]any{"opts": opts, "client": c}, "*Tx": queued,
		"*Future": client.SettledFutureForTest("future-value-" + token),
	}
	secrets := []string{password, sentinelPassword, token, sourcePassword}
	leaks := func(form, out string) {
		t.Helper()
		for _, s := range secrets {
			if strings.Contains(out, s) || strings.Contains(out, hex.EncodeToString([]byte(s))) ||
				strings.Contains(strings.ToLower(out), strings.ToLower(s)) {
				t.Errorf("%s reveals %q:\n%s", form, s, out)
			}
		}
		raw := []byte(key)
		for _, k := range []string{fmt.Sprint(raw[:8])[1:20], hex.EncodeToString(raw[:8]), base64.StdEncoding.EncodeToString(raw[:9])} {
			if strings.Contains(out, k) {
				t.Errorf("%s reveals the TLS private key:\n%s", form, out)
			}
		}
	}
	verbs := []string{"%v", "%+v", "%#v", "%s", "%q", "%#q", "%x", "%X", "%d", "%t", "%30v", "%-60s", "%.200v", "%+#v", "% x"}
	for name, v := range values {
		for _, verb := range verbs {
			leaks(name+" "+verb, fmt.Sprintf(verb, v))
		}
		leaks(name+" Sprint", fmt.Sprint(v))
		leaks(name+" Sprintln", fmt.Sprintln(v, v))
		var text, js strings.Builder
		slog.New(slog.NewTextHandler(&text, nil)).Info("config", "value", v)
		slog.New(slog.NewJSONHandler(&js, nil)).Info("config", "value", v)
		leaks(name+" slog text", text.String())
		leaks(name+" slog json", js.String())
		out, err := json.Marshal(v)
		if err != nil {
			t.Errorf("%s: json.Marshal: %v", name, err)
		}
		leaks(name+" json", string(out))
	}

	// Positive controls: the forms describe the values, and say that secrets are set.
	for _, form := range []string{fmt.Sprintf("%v", opts), fmt.Sprintf("%+v", &uri), fmt.Sprint(c), fmt.Sprintf("%#v", connString)} {
		if !strings.Contains(form, "Password:[redacted]") || !strings.Contains(form, "SentinelPassword:[redacted]") ||
			!strings.Contains(form, "cache.internal:6380") || !strings.Contains(form, "alice") {
			t.Errorf("description lacks its fields: %s", form)
		}
	}
	if got := fmt.Sprintf("%v", opts); !strings.Contains(got, "TLS:{ServerName:cache.internal Certificates:1}") ||
		!strings.Contains(got, "Dialer:set") || !strings.Contains(got, "attempts=3") {
		t.Errorf("Options description: %s", got)
	}
	if got := fmt.Sprintf("%v", withProvider); !strings.Contains(got, "Credentials:<client_test.leakyProvider>") {
		t.Errorf("a provider prints as its type: %s", got)
	}
	if got := fmt.Sprintf("[%-70v]", creds); !strings.HasPrefix(got, "[user=alice password=[redacted]") || len(got) != 72 {
		t.Errorf("width is honoured: %q", got)
	}
	if got := fmt.Sprint(queued); got != "client.Batch{SET AUTH}" {
		t.Errorf("a transaction prints its command names only: %s", got)
	}
	if got := fmt.Sprintf("%q", creds); got != `"user=alice password=[redacted]"` {
		t.Errorf("%%q quotes the redacted form: %s", got)
	}
	if out, _ := json.Marshal(opts); !json.Valid(out) || !strings.Contains(string(out), `"Password":"[redacted]"`) {
		t.Errorf("JSON: %s", out)
	}
	var js strings.Builder
	slog.New(slog.NewJSONHandler(&js, nil)).Info("config", "options", opts)
	if !strings.Contains(js.String(), `"options":{"Endpoints":"cache.internal:6380","Username":"alice","Password":"[redacted]"`) {
		t.Errorf("slog JSON: %s", js.String())
	}
}

// TestRenewCredentialsFailsWhenNoConnectionCanAuthenticate: with no ready connection (a lazily
// created client, or one whose connections were killed and wait for their replacement), a renewal
// to credentials the server rejects fails with a *CredentialRenewalError reaching WRONGPASS,
// instead of returning nil; with credentials the server accepts it succeeds and leaves the client
// connected.
func TestRenewCredentialsFailsWhenNoConnectionCanAuthenticate(t *testing.T) {
	redistest.Require(t)
	checkNoLeaks(t)
	srv := redistest.Start(t, redistest.Config{Password: firstSecret})
	ctx := ctxT(t)
	src := client.NewCredentialSource(client.Credentials{Password: badSecret})
	c, err := client.Create(client.Options{Endpoints: []client.Endpoint{endpointOf(srv)}, Credentials: src, Connections: 2,
		ReconnectPolicy: &client.ReconnectPolicy{InitialDelay: 400 * time.Millisecond, MaxDelay: 400 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	expectRejected := func(what string) {
		t.Helper()
		err := c.RenewCredentials(ctx)
		var re *client.CredentialRenewalError
		var se *client.ServerError
		if !errors.As(err, &re) || re.Conn != 0 || !errors.As(err, &se) || se.Code != "WRONGPASS" {
			t.Fatalf("%s: RenewCredentials = %v, want a *CredentialRenewalError reaching WRONGPASS", what, err)
		}
		if strings.Contains(err.Error(), badSecret) {
			t.Fatalf("%s: the error reveals the password: %v", what, err)
		}
	}
	if c.IsConnected() {
		t.Fatal("precondition: a lazily created client has no connection")
	}
	expectRejected("lazy client")
	src.Set(client.Credentials{Password: firstSecret})
	waitUntil(t, "a renewal with the right password", func() bool { return c.RenewCredentials(ctx) == nil && c.IsConnected() })
	srv.Do(t, "CLIENT", "KILL", "TYPE", "normal")
	waitUntil(t, "the connections to be lost", func() bool { return !c.IsConnected() })
	// The replacements wait for the policy's delay: no connection is ready during the renewal.
	src.Set(client.Credentials{Password: badSecret})
	expectRejected("killed connections")
	src.Set(client.Credentials{Password: firstSecret})
	waitUntil(t, "a renewal with the restored password", func() bool { return c.RenewCredentials(ctx) == nil })
	must(t, c.Ping(ctx))
}

// TestPlaintextPasswordWarnsOnce: a client whose password (or credential provider) would cross
// the network without TLS, to a host that is not loopback, logs one warning through
// Options.Logger, naming the endpoint and never the password; secured, local and password-less
// clients do not.
func TestPlaintextPasswordWarnsOnce(t *testing.T) {
	const pw = "pw-Echo-1175"
	parse := func(s string) client.Options {
		t.Helper()
		o, err := client.Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		return o
	}
	remote := []client.Endpoint{{Host: "cache.internal", Port: 6379}}
	cases := []struct {
		name string
		opts client.Options
		warn bool
	}{
		{"options", client.Options{Endpoints: remote, Password: pw}, true},
		{"IPv4", client.Options{Endpoints: []client.Endpoint{{Host: "10.1.2.3", Port: 6379}}, Password: pw}, true},
		{"IPv6", client.Options{Endpoints: []client.Endpoint{{Host: "2001:db8::1", Port: 6379}}, Username: "u", Password: pw}, true},
		{"provider", client.Options{Endpoints: remote, Credentials: client.NewCredentialSource(client.Credentials{Password: pw})}, true},
		{"URI", parse("redis://app:" + pw + "@cache.internal:6379/0"), true},
		{"connection string", parse("cache.internal:6379,password=" + pw), true},
		{"TLS URI", parse("rediss://app:" + pw + "@cache.internal:6380"), false},
		{"TLS connection string", parse("cache.internal,password=" + pw + ",ssl=true"), false},
		{"loopback", client.Options{Endpoints: []client.Endpoint{{Host: "127.0.0.2", Port: 6379}}, Password: pw}, false},
		{"IPv6 loopback", client.Options{Endpoints: []client.Endpoint{{Host: "::1", Port: 6379}}, Password: pw}, false},
		{"localhost", parse("redis://:" + pw + "@localhost:6379"), false},
		{"unix socket", parse("unix://:" + pw + "@/run/redis.sock"), false},
		{"no password", client.Options{Endpoints: remote, Username: "app"}, false},
		{"custom dialer", client.Options{Endpoints: remote, Password: pw,
			Dialer: func(context.Context, client.Endpoint) (net.Conn, error) { return nil, errors.New("unused") }}, false},
	}
	for _, tc := range cases {
		var logs strings.Builder
		tc.opts.Logger = slog.New(slog.NewTextHandler(&logs, nil))
		c, err := client.Create(tc.opts)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		_ = c.Close()
		got := strings.Count(logs.String(), "event=PlaintextCredentials")
		switch {
		case tc.warn && (got != 1 || !strings.Contains(logs.String(), "endpoint="+tc.opts.Endpoints[0].String())):
			t.Errorf("%s: want one warning naming the endpoint, got:\n%s", tc.name, logs.String())
		case !tc.warn && got != 0:
			t.Errorf("%s: want no warning, got:\n%s", tc.name, logs.String())
		case strings.Contains(logs.String(), pw):
			t.Errorf("%s: the warning reveals the password:\n%s", tc.name, logs.String())
		}
	}
}
