package client

import (
	"crypto/tls"
	"testing"

	"github.com/respire-go/respire/engine"
	"github.com/respire-go/respire/netio"
)

// TestSentinelTransportConfig: Sentinel connections speak RESP2 without a database, inherit the
// data credentials unless they have their own or auth is disabled, and follow SentinelTLS.
func TestSentinelTransportConfig(t *testing.T) {
	base := Options{Endpoints: []Endpoint{{Host: "10.0.0.1", Port: 26379}}, SentinelPrimaryName: "m",
		Username: "app", Password: "data-pw", Database: 3, ClientName: "svc", Protocol: ProtocolRESP3}
	build := func(o Options) netio.TransportConfig {
		t.Helper()
		if err := o.Validate(); err != nil {
			t.Fatal(err)
		}
		r, resolved, err := o.resolve()
		if err != nil {
			t.Fatal(err)
		}
		return r.sentinelTransportConfig(r.transportConfig(&resolved), &engine.SentinelReceiver{})
	}
	cfg := build(base)
	if h := cfg.Handshake; h.Protocol != netio.ProtocolRESP2 || h.Database != 0 || h.ClientName != "svc" || h.LibraryName != "" {
		t.Fatalf("handshake %+v: want RESP2, database 0, the client name, no library info", h)
	}
	if h := cfg.Handshake; h.Username != "app" || h.Password != "data-pw" {
		t.Fatal("the Sentinels did not inherit the data credentials")
	}
	if cfg.PubSub == nil || cfg.Dialer.TLS != nil {
		t.Fatal("want a monitor receiver and plaintext")
	}

	own := base
	own.SentinelUsername, own.SentinelPassword = "watcher", "sent-pw"
	if h := build(own).Handshake; h.Username != "watcher" || h.Password != "sent-pw" {
		t.Fatal("the Sentinel credentials were not used")
	}
	none := base
	none.SentinelDisableAuth = true
	if h := build(none).Handshake; h.Username != "" || h.Password != "" {
		t.Fatal("SentinelDisableAuth still sends credentials")
	}
	provider := base
	provider.Username, provider.Password = "", ""
	provider.Credentials = NewCredentialSource(Credentials{Username: "app", Password: "token"})
	if build(provider).Credentials == nil {
		t.Fatal("the Sentinels did not inherit the credential provider")
	}

	secure := base
	secure.TLS, secure.TLSServerName = &tls.Config{MinVersion: tls.VersionTLS12}, "redis.internal"
	if c := build(secure).Dialer.TLS; c == nil || c.ServerName != "" {
		t.Fatalf("inherited TLS: %v (the data server name must not apply to Sentinels)", c)
	}
	secure.SentinelTLSServerName = "sentinel.internal"
	if c := build(secure).Dialer.TLS; c == nil || c.ServerName != "sentinel.internal" {
		t.Fatal("SentinelTLSServerName not applied")
	}
	secure.SentinelTLS = SentinelTLSDisabled
	if build(secure).Dialer.TLS != nil {
		t.Fatal("sentinelTls=false still uses TLS")
	}
	plain := base
	plain.SentinelTLS = SentinelTLSEnabled
	if c := build(plain).Dialer.TLS; c == nil || c.MinVersion != tls.VersionTLS12 {
		t.Fatal("SentinelTLSEnabled without data TLS: want a TLS 1.2+ configuration")
	}
}
