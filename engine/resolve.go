package engine

import (
	"context"
	"net"
	"strconv"
)

// Resolver answers the addresses of a host name: the name-resolution part of the dialer seam.
// *net.Resolver (net.DefaultResolver in production) implements it; the simulator answers from its
// own name table, so that a node that moves is reached by name the way DNS would reach it.
//
// LookupHost returns the host's addresses in the order they should be tried, or an error (a
// *net.DNSError for a name that does not resolve). It may be called concurrently.
type Resolver interface {
	LookupHost(ctx context.Context, host string) ([]string, error)
}

// DialAddresses turns a configured endpoint into the addresses to dial, in order: the one
// function both runtimes use between an endpoint and a connect. A Unix endpoint is its socket
// path; an IP literal is dialed as it is, without a lookup; any other host is looked up through r
// on every call (no caching here: the resolver's own, if any), and each answer gets the
// endpoint's port. The resolver's error is returned as it is; an empty answer is a *net.DNSError
// that says the name has no address. The endpoint's host, not an address, stays the name a TLS
// handshake verifies.
func DialAddresses(ctx context.Context, r Resolver, ep Endpoint) ([]string, error) {
	if ep.IsUnix() {
		return []string{ep.Host}, nil
	}
	if net.ParseIP(ep.Host) != nil {
		return []string{ep.String()}, nil
	}
	hosts, err := r.LookupHost(ctx, ep.Host)
	if err != nil {
		return nil, err
	}
	if len(hosts) == 0 {
		return nil, &net.DNSError{Err: "no such host", Name: ep.Host, IsNotFound: true}
	}
	port := strconv.Itoa(ep.Port)
	out := make([]string, len(hosts))
	for i, h := range hosts {
		out[i] = net.JoinHostPort(h, port)
	}
	return out, nil
}
