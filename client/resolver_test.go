package client_test

import (
	"context"
	"errors"
	"net"
	"slices"
	"sync"
	"testing"

	"github.com/respire-go/respire/client"
	"github.com/respire-go/respire/netio/redistest"
)

// fixedResolver answers every name in names with its addresses and records the names asked.
type fixedResolver struct {
	names map[string][]string
	mu    sync.Mutex
	asked []string
}

func (r *fixedResolver) LookupHost(_ context.Context, host string) ([]string, error) {
	r.mu.Lock()
	r.asked = append(r.asked, host)
	r.mu.Unlock()
	if a, ok := r.names[host]; ok {
		return a, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

func (r *fixedResolver) askedFor() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.asked)
}

// TestResolverOption: with Options.Resolver the client dials what the resolver answers for an
// endpoint's name, with and without a dial hook, and a name the resolver does not know fails the
// connect with the resolver's error. The name is in the reserved .invalid domain: the system
// resolver could never answer it, so a connection proves the option was used.
func TestResolverOption(t *testing.T) {
	redistest.Require(t)
	srv := redistest.Start(t, redistest.Config{})
	const name = "redis-primary.respire.invalid"
	ep := []client.Endpoint{{Host: name, Port: srv.Port()}}
	hooked := client.Hook{Dial: func(next client.DialFunc) client.DialFunc {
		return func(ctx context.Context, e client.Endpoint) (net.Conn, error) { return next(ctx, e) }
	}}
	for _, hooks := range [][]client.Hook{nil, {hooked}} {
		r := &fixedResolver{names: map[string][]string{name: {"127.0.0.1"}}}
		c, err := client.Connect(context.Background(), client.Options{Endpoints: ep, Resolver: r, Hooks: hooks})
		if err != nil {
			t.Fatalf("%d hooks: connect through the resolver: %v", len(hooks), err)
		}
		if err := c.Set(context.Background(), "resolver:k", "v"); err != nil {
			t.Fatalf("%d hooks: SET: %v", len(hooks), err)
		}
		_ = c.Close()
		if asked := r.askedFor(); len(asked) == 0 || asked[0] != name {
			t.Fatalf("%d hooks: the resolver was asked %q, want %q", len(hooks), asked, name)
		}
	}

	// Without the option the system resolver cannot find the name: the control.
	if c, err := client.Connect(context.Background(), client.Options{Endpoints: ep, ConnectTimeout: 2e9}); err == nil {
		_ = c.Close()
		t.Fatal("connected to a .invalid name without the resolver")
	}
	r := &fixedResolver{}
	_, err := client.Connect(context.Background(), client.Options{Endpoints: ep, Resolver: r})
	var dnsErr *net.DNSError
	if !errors.As(err, &dnsErr) || dnsErr.Name != name {
		t.Fatalf("connect with a resolver that does not know the name: %v, want its *net.DNSError", err)
	}
}
