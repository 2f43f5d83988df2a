package client_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/respire-go/respire/client"
	"github.com/respire-go/respire/netio/redistest"
)

const (
	firstSecret  = "s3cr3t-one-Q7"
	secondSecret = "s3cr3t-two-Z9"
	badSecret    = "s3cr3t-bad-K4"
)

// secretWatch collects every text respire produced (logs, observed errors, returned errors) and
// fails the test if a password appears in any of them.
type secretWatch struct {
	logs *syncBuffer
	mu   sync.Mutex
	text []string
}

func newSecretWatch() *secretWatch { return &secretWatch{logs: &syncBuffer{}} }

func (w *secretWatch) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(w.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

func (w *secretWatch) add(s string) {
	w.mu.Lock()
	w.text = append(w.text, s)
	w.mu.Unlock()
}

func (w *secretWatch) observe(ch client.ConnectionStateChange) {
	if ch.Err != nil {
		w.add(ch.Err.Error())
	}
	w.add(fmt.Sprintf("%+v", ch))
}

func (w *secretWatch) check(t *testing.T) {
	t.Helper()
	w.mu.Lock()
	all := strings.Join(w.text, "\n") + "\n" + w.logs.String()
	w.mu.Unlock()
	for _, secret := range []string{firstSecret, secondSecret, badSecret} {
		if strings.Contains(all, secret) {
			t.Fatalf("a password leaked into errors or logs:\n%s", all)
		}
	}
}

// waitUntil polls cond for up to 10 s.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestCredentialRotationWithACL rotates an ACL user's password through an admin connection while
// a workload runs. The provider's renewal re-authenticates the live connections with AUTH (the
// workload sees no error), connections created afterwards authenticate with the new password,
// a renewal the server rejects fails and replaces the connections, and no password ever appears
// in an error or a log line.
func TestCredentialRotationWithACL(t *testing.T) {
	redistest.Require(t)
	checkNoLeaks(t)
	srv := redistest.Start(t, redistest.Config{Extra: []string{"user app on >" + firstSecret + " ~* &* +@all"}})
	watch := newSecretWatch()
	src := client.NewCredentialSource(client.Credentials{Username: "app", Password: firstSecret})
	const name = "renewing"
	c, err := client.Connect(ctxT(t), client.Options{
		Endpoints: []client.Endpoint{endpointOf(srv)}, Connections: 2, ClientName: name, Credentials: src,
		Logger: watch.logger(), OnConnectionStateChange: watch.observe,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := ctxT(t)

	// A workload runs across the rotation and the renewal.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var ops atomic.Int64
	workErr := make(chan error, 4)
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := c.Incr(ctx, "renew:counter"); err != nil {
					workErr <- err
					return
				}
				ops.Add(1)
			}
		}()
	}
	time.Sleep(50 * time.Millisecond)
	srv.Do(t, "ACL", "SETUSER", "app", "resetpass", ">"+secondSecret)
	src.Set(client.Credentials{Username: "app", Password: secondSecret})
	waitUntil(t, "the background renewal", func() bool { return strings.Contains(watch.logs.String(), "event=CredentialsRenewed") })
	if err := c.RenewCredentials(ctx); err != nil {
		t.Fatalf("explicit renewal: %v", err)
	}
	time.Sleep(50 * time.Millisecond)
	close(stop)
	wg.Wait()
	close(workErr)
	for err := range workErr {
		t.Fatalf("the workload failed across the renewal: %v", err)
	}
	if ops.Load() == 0 {
		t.Fatal("no workload ran")
	}

	// New connections authenticate with the provider's current password.
	before := clientIDs(t, srv, name)
	srv.Do(t, "CLIENT", "KILL", "USER", "app")
	waitUntil(t, "replacement connections", func() bool { return c.Ping(ctx) == nil })
	for i := 0; i < 10; i++ {
		must(t, c.Ping(ctx))
	}
	after := clientIDs(t, srv, name)
	if len(after) == 0 || strings.Join(after, ",") == strings.Join(before, ",") {
		t.Fatalf("connections were not replaced: %v -> %v", before, after)
	}
	if list := srv.Do(t, "CLIENT", "LIST"); !strings.Contains(list, "name="+name) || !strings.Contains(list, "user=app") {
		t.Fatalf("new connections are not authenticated as app:\n%s", list)
	}

	// A renewal the server rejects fails the connections (the background renewal logs it); they
	// are replaced, and connect again once the provider has the right password.
	src.Set(client.Credentials{Username: "app", Password: badSecret})
	waitUntil(t, "the failed renewal", func() bool {
		out := watch.logs.String()
		return strings.Contains(out, "event=CredentialRenewalFailed") && strings.Contains(out, "WRONGPASS")
	})
	watch.add(fmt.Sprintf("%v %+v %#v %v %#v", src, src, src, client.Credentials{Password: badSecret},
		client.Credentials{Username: "app", Password: badSecret}))
	waitUntil(t, "the rejected connections to close", func() bool { return len(clientIDs(t, srv, name)) == 0 })
	if err := c.Ping(ctx); err == nil {
		t.Fatal("a connection authenticated with a wrong password")
	} else {
		watch.add(err.Error())
	}
	src.Set(client.Credentials{Username: "app", Password: secondSecret})
	waitUntil(t, "a connection with the restored password", func() bool { return c.Ping(ctx) == nil })
	c.Close()
	// The journal (the client's trace) records the rejected renewals, without the password.
	journal := client.JournalText(c)
	if !strings.Contains(journal, "renewing the credentials") || !strings.Contains(journal, "WRONGPASS") {
		t.Fatalf("the journal does not record the rejected renewal:\n%s", journal)
	}
	watch.add(journal)
	watch.check(t)
}

// TestCredentialRotationWithRequirepass rotates the default user's password with CONFIG SET
// requirepass through an admin client, and renews through RenewCredentials.
func TestCredentialRotationWithRequirepass(t *testing.T) {
	redistest.Require(t)
	srv := redistest.Start(t, redistest.Config{Password: firstSecret})
	ctx := ctxT(t)
	admin, err := client.Connect(ctx, client.Options{Endpoints: []client.Endpoint{endpointOf(srv)}, Password: firstSecret, AllowAdmin: true})
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	var secret atomic.Value
	secret.Store(firstSecret)
	provider := providerFunc(func(context.Context) (client.Credentials, error) {
		return client.Credentials{Password: secret.Load().(string)}, nil
	})
	watch := newSecretWatch()
	c, err := client.Connect(ctx, client.Options{Endpoints: []client.Endpoint{endpointOf(srv)}, Connections: 2,
		Credentials: provider, Logger: watch.logger(), OnConnectionStateChange: watch.observe})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	defer func() { _, _ = admin.Do(context.Background(), "CONFIG", "SET", "requirepass", firstSecret) }()
	if _, err := admin.Do(ctx, "CONFIG", "SET", "requirepass", secondSecret); err != nil {
		t.Fatal(err)
	}
	secret.Store(secondSecret)
	if err := c.RenewCredentials(ctx); err != nil {
		t.Fatalf("renewal: %v", err)
	}
	must(t, c.Set(ctx, "after-rotation", "ok"))
	// A renewal with a wrong password fails with the server's rejection, without the password,
	// and the rejected connections are replaced with the provider's (restored) password.
	secret.Store(badSecret)
	err = c.RenewCredentials(ctx)
	var re *client.CredentialRenewalError
	var se *client.ServerError
	if !errors.As(err, &re) || !errors.As(err, &se) || se.Code != "WRONGPASS" || re.Conn == 0 {
		t.Fatalf("renewal with a wrong password: %v, want WRONGPASS in a *CredentialRenewalError", err)
	}
	watch.add(err.Error())
	secret.Store(secondSecret)
	waitUntil(t, "replacements of the rejected connections", func() bool { return c.Ping(ctx) == nil })
	// Live connections were renewed; new ones use the new password too.
	if _, err := admin.Do(ctx, "CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes"); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "replacement connections", func() bool { return c.Ping(ctx) == nil })
	c.Close()
	watch.check(t)
}

// TestCredentialsValidation: a provider cannot be combined with static credentials, and
// RenewCredentials needs a provider.
func TestCredentialsValidation(t *testing.T) {
	src := client.NewCredentialSource(client.Credentials{Password: firstSecret})
	o := client.Options{Endpoints: []client.Endpoint{{Host: "cache", Port: 6379}}, Credentials: src, Password: "x"}
	var ce *client.ConfigError
	if err := o.Validate(); !errors.As(err, &ce) || ce.Option != "Credentials" {
		t.Fatalf("Validate: %v", err)
	}
	c, err := client.Create(client.Options{Endpoints: []client.Endpoint{{Host: "127.0.0.1", Port: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.RenewCredentials(context.Background()); !errors.Is(err, client.ErrNoCredentialProvider) {
		t.Fatalf("RenewCredentials without a provider: %v", err)
	}
}

// TestCredentialProviderFailureIsTransient: a failing provider fails the connection attempt with
// its error; a use during the slot's rest that follows (250 ms) fails at once without asking
// again; the first use after the rest asks again and connects.
func TestCredentialProviderFailureIsTransient(t *testing.T) {
	redistest.Require(t)
	srv := redistest.Start(t, redistest.Config{Password: firstSecret})
	var fail atomic.Bool
	fail.Store(true)
	boom := errors.New("vault unavailable")
	provider := providerFunc(func(context.Context) (client.Credentials, error) {
		if fail.Load() {
			return client.Credentials{}, boom
		}
		return client.Credentials{Password: firstSecret}, nil
	})
	c, err := client.Create(client.Options{Endpoints: []client.Endpoint{endpointOf(srv)}, Credentials: provider})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := ctxT(t)
	if err := c.Ping(ctx); !errors.Is(err, boom) {
		t.Fatalf("Ping with a failing provider: %v", err)
	}
	fail.Store(false)
	if err := c.Ping(ctx); !errors.Is(err, boom) {
		t.Fatalf("Ping during the rest must fail at once with the last error, got %v", err)
	}
	time.Sleep(250*time.Millisecond + 50*time.Millisecond)
	must(t, c.Ping(ctx))
}

type providerFunc func(context.Context) (client.Credentials, error)

func (f providerFunc) Credentials(ctx context.Context) (client.Credentials, error) { return f(ctx) }
