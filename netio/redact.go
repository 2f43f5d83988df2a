package netio

import (
	"encoding/json"
	"fmt"
	"log/slog"

	"github.com/respire-go/respire/netio/wire"
)

// redacted replaces a secret wherever respire prints a configuration or an error.
const redacted = "[redacted]"

// Format makes every fmt verb, flag and width print the redacted form.
func (c TransportConfig) Format(f fmt.State, verb rune) { wire.FormatRedacted(f, verb, c.String()) }

// LogValue makes log/slog print the redacted form with every handler.
func (c TransportConfig) LogValue() slog.Value { return slog.StringValue(c.String()) }

// MarshalJSON encodes the handshake configuration (its password redacted) and whether
// credentials come from a provider; the dialer, its TLS configuration and the callbacks are left
// out.
func (c TransportConfig) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Handshake          HandshakeConfig `json:"handshake"`
		CredentialProvider bool            `json:"credentialProvider,omitempty"`
		TLS                bool            `json:"tls,omitempty"`
	}{c.Handshake, c.Credentials != nil, c.Dialer.TLS != nil})
}

// GoString makes %#v print the redacted form too.
func (t *Transport) GoString() string { return t.String() }

// Format makes every fmt verb, flag and width print the redacted form.
func (t *Transport) Format(f fmt.State, verb rune) { wire.FormatRedacted(f, verb, t.String()) }

// LogValue makes log/slog print the redacted form with every handler.
func (t *Transport) LogValue() slog.Value { return slog.StringValue(t.String()) }

// MarshalJSON encodes the transport's configuration as TransportConfig does.
func (t *Transport) MarshalJSON() ([]byte, error) { return t.cfg.MarshalJSON() }
