package client

import "context"

// Resolver looks up the addresses of a host name for the client's built-in TCP dialing
// (Options.Resolver). *net.Resolver implements it, so a resolver with its own DNS server,
// timeouts or Go's pure resolver fits as it is; a service-discovery table or a test's fixed
// answers fit as well.
//
// LookupHost returns the addresses of host ("10.0.0.7", "::1") in the order they should be
// tried, or an error (a *net.DNSError for a name that does not resolve). It is called on every
// connection attempt, possibly from several goroutines at once, with the attempt's context
// (its cancellation and ConnectTimeout). The client adds the endpoint's port to each answer and
// tries them in turn, each within a share of the attempt's remaining budget. The endpoint's
// host, never an answered address, remains the name a TLS handshake verifies.
type Resolver interface {
	LookupHost(ctx context.Context, host string) ([]string, error)
}
