package client_test

import (
	"context"
	"errors"
	"net"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/respire-go/respire/client"
	"github.com/respire-go/respire/netio/redistest"
)

// rawID matches a connection id printed with its machine in its top bits (72057594037927937).
var rawID = regexp.MustCompile(`[0-9]{12,}`)

// TestErrorTextsNameTheEndpointOnce provokes each kind of failure against real servers and checks
// that its text names the endpoint (and its host) once and starts with a single "respire: ",
// however deeply the errors nest (a reconnect limit keeping a connection error keeping a
// connect error keeping a *net.OpError).
func TestErrorTextsNameTheEndpointOnce(t *testing.T) {
	redistest.Require(t)
	ctx := ctxT(t)
	check := func(what string, err error, ep client.Endpoint, target any) {
		t.Helper()
		if err == nil || !errors.As(err, target) {
			t.Fatalf("%s: got %v, want a %T", what, err, target)
		}
		text := err.Error()
		if n := strings.Count(text, ep.String()); n != 1 {
			t.Errorf("%s names %s %d times: %s", what, ep, n, text)
		}
		if n := strings.Count(text, ep.Host); n != 1 {
			t.Errorf("%s names %s %d times: %s", what, ep.Host, n, text)
		}
		if n := strings.Count(text, "respire:"); n != 1 || !strings.HasPrefix(text, "respire: ") {
			t.Errorf("%s repeats the prefix: %s", what, text)
		}
		if rawID.MatchString(text) {
			t.Errorf("%s prints a raw connection id: %s", what, text)
		}
	}

	// A refused connection: a connection error keeping a connect error keeping a *net.OpError.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := client.Endpoint{Host: "127.0.0.1", Port: l.Addr().(*net.TCPAddr).Port}
	l.Close()
	_, err = client.Connect(ctx, client.Options{Endpoints: []client.Endpoint{refused}})
	var connErr *client.ConnectionError
	check("refused connect", err, refused, &connErr)
	if !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("the cause is lost: %v", err)
	}

	// A rejected handshake, and then the reconnect limit that keeps it.
	srv := redistest.Start(t, redistest.Config{Extra: []string{"user app on >" + firstSecret + " ~* &* +@all"}})
	ep := endpointOf(srv)
	_, err = client.Connect(ctx, client.Options{Endpoints: []client.Endpoint{ep}, Username: "app", Password: badSecret})
	check("rejected handshake", err, ep, &connErr)
	if !strings.Contains(err.Error(), "WRONGPASS") {
		t.Errorf("the cause is lost: %v", err)
	}
	c, err := client.Connect(ctx, client.Options{Endpoints: []client.Endpoint{ep}, Username: "app", Password: firstSecret,
		ReconnectPolicy: &client.ReconnectPolicy{MaxAttempts: 1}, CommandTimeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	// A command that timed out, and one whose connection was killed.
	srv.Pause()
	err = c.Ping(ctx)
	srv.Resume()
	var timeoutErr *client.TimeoutError
	check("command timeout", err, ep, &timeoutErr)
	// The kill must meet the BLPOP blocked on the server, not its connection before it is sent
	// (a definite failure): it waits until the server holds a blocked client.
	go func() {
		for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
			if out, err := srv.TryDo("INFO", "clients"); err == nil && containsField(out, "blocked_clients:1") {
				break
			}
		}
		_, _ = srv.TryDo("CLIENT", "KILL", "TYPE", "normal")
	}()
	_, err = c.Do(ctx, "BLPOP", "never-pushed", "0")
	var unknown *client.UnknownOutcomeError
	check("killed connection", err, ep, &unknown)
	if !strings.Contains(err.Error(), "connection dedicated#") {
		t.Errorf("the dedicated connection is not named as one: %v", err)
	}

	// CLIENT KILL TYPE normal also closed the shared connection: let its replacement finish its
	// handshake first, so that the KILL USER below cannot cut that handshake (an EOF would
	// then be the slot's last error instead of the rejection).
	waitUntil(t, "the shared connection back", func() bool { return c.Ping(ctx) == nil })

	// The shared connection's replacement is rejected (a permanent failure): its slot exhausts.
	srv.Do(t, "ACL", "SETUSER", "app", "resetpass", ">"+secondSecret)
	srv.Do(t, "CLIENT", "KILL", "USER", "app")
	var limitErr *client.ReconnectLimitError
	waitUntil(t, "the reconnect limit", func() bool {
		err = c.Ping(ctx)
		return errors.As(err, &limitErr)
	})
	check("reconnect limit", err, ep, &limitErr)
	if !strings.Contains(err.Error(), "last error") || !strings.Contains(err.Error(), "WRONGPASS") {
		t.Errorf("the last error is lost: %v", err)
	}

	// A connect timeout through a dialer that never answers.
	hang := client.Endpoint{Host: "10.255.255.1", Port: 6379}
	_, err = client.Connect(ctx, client.Options{Endpoints: []client.Endpoint{hang}, ConnectTimeout: 100 * time.Millisecond,
		Dialer: func(ctx context.Context, _ client.Endpoint) (net.Conn, error) { <-ctx.Done(); return nil, ctx.Err() }})
	check("connect timeout", err, hang, &timeoutErr)
}
