package client

import (
	"context"
	"crypto/tls"
	"net"
	"testing"
	"time"

	"github.com/respire-go/respire/engine"
	"github.com/respire-go/respire/netio"
)

// nameResolver answers one name with one address, and fails any other.
type nameResolver struct{ name, addr string }

func (r nameResolver) LookupHost(_ context.Context, host string) ([]string, error) {
	if host == r.name {
		return []string{r.addr}, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

// TestResolverReachesEveryDialer: the dialers the client builds beside the transport's own
// carry Options.Resolver too: the TLS dialer with certificate revocation checks (which opens
// the connection itself) and the Sentinel clients' dialer. Each dials a name only the resolver
// knows, and the listener sees the connection (the TLS handshake then fails: it speaks no TLS).
func TestResolverReachesEveryDialer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ln.Close() }()
	accepted := make(chan struct{}, 4)
	go func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- struct{}{}
			_ = nc.Close()
		}
	}()
	const name = "tls-node.respire.invalid"
	ep := engine.Endpoint{Host: name, Port: ln.Addr().(*net.TCPAddr).Port}
	o := &Options{Endpoints: []Endpoint{{Host: name, Port: ep.Port}}, Resolver: nameResolver{name, "127.0.0.1"},
		TLS: &tls.Config{}, CheckCertificateRevocation: true, ConnectTimeout: 2 * time.Second}
	base := netio.Dialer{ConnectTimeout: 2 * time.Second, TLS: &tls.Config{}, Resolver: o.Resolver}
	dialers := map[string]netio.Dialer{
		"revocation": revocationDialer(base),
		"sentinel":   o.sentinelTransportConfig(netio.TransportConfig{}, nil).Dialer,
	}
	for what, d := range dialers {
		if d.Resolver == nil && d.Dial == nil {
			t.Fatalf("%s: the dialer has no resolver", what)
		}
		nc, err := d.DialContext(context.Background(), ep)
		if err == nil {
			_ = nc.Close()
		}
		select {
		case <-accepted:
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: no connection reached the address the resolver answered (dial: %v)", what, err)
		}
	}
}
