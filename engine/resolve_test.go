package engine_test

import (
	"context"
	"errors"
	"net"
	"slices"
	"testing"

	"github.com/respire-go/respire/engine"
)

type tableResolver map[string][]string

func (t tableResolver) LookupHost(_ context.Context, host string) ([]string, error) {
	a, ok := t[host]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	return a, nil
}

func TestDialAddresses(t *testing.T) {
	r := tableResolver{"cache": {"10.0.0.1", "fd00::2"}, "empty": {}}
	for _, tc := range []struct {
		ep   engine.Endpoint
		want []string
	}{
		{engine.Endpoint{Host: "cache", Port: 6379}, []string{"10.0.0.1:6379", "[fd00::2]:6379"}},
		{engine.Endpoint{Host: "10.9.9.9", Port: 7000}, []string{"10.9.9.9:7000"}},
		{engine.Endpoint{Host: "::1", Port: 7000}, []string{"[::1]:7000"}},
		{engine.Endpoint{Host: "/run/redis.sock"}, []string{"/run/redis.sock"}},
	} {
		got, err := engine.DialAddresses(context.Background(), r, tc.ep)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("%v: got %q, %v; want %q", tc.ep, got, err, tc.want)
		}
	}
	for _, host := range []string{"empty", "unknown"} {
		_, err := engine.DialAddresses(context.Background(), r, engine.Endpoint{Host: host, Port: 6379})
		var de *net.DNSError
		if !errors.As(err, &de) || !de.IsNotFound || de.Name != host {
			t.Errorf("%s: err %v, want a not-found *net.DNSError naming it", host, err)
		}
	}
}
