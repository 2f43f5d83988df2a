package client_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

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
		{[]any{"getx", []byte(key)}, "ERR", "ERR unknown command 'GETX'"},
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
