package client

import (
	"context"
	"net"
	"strconv"

	"github.com/respire-go/respire/engine"
	"github.com/respire-go/respire/netio"
)

// Endpoint is a Redis destination: a host and a TCP port, or a Unix socket path in Host with
// Port 0.
type Endpoint struct {
	// Host is a DNS name, an IP literal (an IPv6 address without brackets) or a Unix socket path.
	Host string
	// Port is the TCP port (1 to 65535), or 0 for a Unix socket.
	Port int
}

// IsUnix reports whether the endpoint is a Unix socket (Port 0).
func (e Endpoint) IsUnix() bool { return e.Port == 0 }

// String returns "host:port", with an IPv6 host in brackets, or the socket path.
func (e Endpoint) String() string {
	if e.IsUnix() {
		return e.Host
	}
	return net.JoinHostPort(e.Host, strconv.Itoa(e.Port))
}

// engine returns e as the engine's endpoint. The two types have the same fields, so the
// conversion copies two words and never allocates.
func (e Endpoint) engine() engine.Endpoint { return engine.Endpoint(e) }

// endpointOf returns the engine's endpoint e as a client Endpoint.
func endpointOf(e engine.Endpoint) Endpoint { return Endpoint(e) }

// dialFunc adapts Options.Dialer to netio's dial hook: nil stays nil, so that netio dials itself.
func dialFunc(dial func(context.Context, Endpoint) (net.Conn, error)) netio.DialFunc {
	if dial == nil {
		return nil
	}
	return func(ctx context.Context, ep engine.Endpoint) (net.Conn, error) { return dial(ctx, endpointOf(ep)) }
}
