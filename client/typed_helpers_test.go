package client_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/respire-go/respire/client"
	"github.com/respire-go/respire/netio/redistest"
)

// A group test runs a table of steps against a real redis-server, once over RESP2 and once
// over RESP3, and checks each step's typed result. The steps of a table run in order and may
// depend on each other; keys are prefixed per protocol so that the two runs do not meet.

// step is one typed call and its expected result.
type step struct {
	name string
	// do runs the call; k prefixes a key.
	do func(ctx context.Context, c *client.Client, k func(string) string) (any, error)
	// want is compared with reflect.DeepEqual, unless check is set.
	want  any
	check func(got any) error
}

// opt packs a (value, ok, err) result.
func opt[T any](v T, ok bool, err error) (any, error) {
	return client.Optional[T]{Value: v, Valid: ok}, err
}

// val packs a (value, err) result.
func val[T any](v T, err error) (any, error) { return v, err }

// none packs an error-only result.
func none(err error) (any, error) { return nil, err }

// some is an Optional that is present.
func some[T any](v T) client.Optional[T] { return client.Optional[T]{Value: v, Valid: true} }

// groupOptions configures a group's clients.
type groupOptions struct {
	admin bool
	// fresh starts a server per protocol, for steps that change the whole server.
	fresh bool
}

// runGroup runs the steps over both protocols against srv (a fresh server when nil).
func runGroup(t *testing.T, srv *redistest.Server, g groupOptions, steps []step) {
	t.Helper()
	redistest.Require(t)
	if srv == nil {
		srv = redistest.Start(t, redistest.Config{})
	}
	for _, proto := range []client.Protocol{client.ProtocolRESP2, client.ProtocolRESP3} {
		t.Run(proto.String(), func(t *testing.T) {
			ctx := ctxT(t)
			srv := srv
			if g.fresh {
				srv = redistest.Start(t, redistest.Config{})
			}
			c, err := client.Connect(ctx, client.Options{Endpoints: []client.Endpoint{endpointOf(srv)}, Protocol: proto, AllowAdmin: g.admin})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			prefix := proto.String() + ":"
			k := func(s string) string { return prefix + s }
			for _, s := range steps {
				got, err := s.do(ctx, c, k)
				if err != nil {
					var pe *client.ProtocolError
					if errors.As(err, &pe) {
						t.Fatalf("%s: the reply did not fit its typed form: %v", s.name, err)
					}
					t.Fatalf("%s: %v", s.name, err)
				}
				if s.check != nil {
					if err := s.check(got); err != nil {
						t.Errorf("%s: %v (got %#v)", s.name, err, got)
					}
					continue
				}
				if !reflect.DeepEqual(got, s.want) {
					t.Errorf("%s:\n got %#v\nwant %#v", s.name, got, s.want)
				}
			}
			// No reply was mistaken for another: the connection the steps ran on was never
			// failed for a shape mismatch, and still answers.
			if err := c.Ping(ctx); err != nil {
				t.Fatalf("after the group: %v", err)
			}
		})
	}
}

// expectErr is a step whose call must fail with a server error of code.
func expectErr(name, code string, do func(ctx context.Context, c *client.Client, k func(string) string) error) step {
	return step{name: name, do: func(ctx context.Context, c *client.Client, k func(string) string) (any, error) {
		err := do(ctx, c, k)
		var se *client.ServerError
		if !errors.As(err, &se) || se.Code != code {
			return nil, fmt.Errorf("got %v, want a %s server error", err, code)
		}
		return nil, nil
	}, want: nil}
}

// lenIs checks the length of a slice or map result.
func lenIs(n int) func(any) error {
	return func(got any) error {
		if l := reflect.ValueOf(got).Len(); l != n {
			return fmt.Errorf("length %d, want %d", l, n)
		}
		return nil
	}
}

// nonEmpty checks that a string, slice or map result is not empty.
func nonEmpty(got any) error {
	if reflect.ValueOf(got).Len() == 0 {
		return errors.New("empty")
	}
	return nil
}
