package client

import (
	"context"
	"crypto/tls"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/respire-go/respire/engine"
	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/netio"
	"github.com/respire-go/respire/netio/resp"
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

// roleConn answers ROLE with a fixed reply.
type roleConn struct {
	reply  resp.Value
	mu     sync.Mutex
	closed bool
}

func (c *roleConn) Send(cmd *engine.Command) {
	cmd.Writing()
	cmd.Written()
	cmd.Reply = c.reply
	cmd.Complete(nil)
}
func (c *roleConn) Drain() {}
func (c *roleConn) Close() { c.mu.Lock(); c.closed = true; c.mu.Unlock() }

// sinkLog records what a Sink was told.
type sinkLog struct {
	mu     sync.Mutex
	events []string
	err    error
	class  fsm.FailureClass
}

func (l *sinkLog) add(s string)                  { l.mu.Lock(); l.events = append(l.events, s); l.mu.Unlock() }
func (l *sinkLog) Dialed(fsm.ConnID)             { l.add("dialed") }
func (l *sinkLog) Ready(fsm.ConnID, engine.Conn) { l.add("ready") }
func (l *sinkLog) Lost(fsm.ConnID, error)        { l.add("lost") }
func (l *sinkLog) Failed(_ fsm.ConnID, err error, class fsm.FailureClass) {
	l.mu.Lock()
	l.err, l.class = err, class
	l.mu.Unlock()
	l.add("failed")
}

// TestSentinelDataConnectionsCheckRole: a Sentinel client's new data connection is handed to
// the engine only once it answered ROLE as a primary; a replica fails the attempt (transient:
// the generation retires) and is closed; a loss during the check is not reported as a loss.
func TestSentinelDataConnectionsCheckRole(t *testing.T) {
	primary := resp.ArrayOf(resp.BulkString("master"), resp.Int(0), resp.ArrayOf())
	replica := resp.ArrayOf(resp.BulkString("slave"), resp.BulkString("10.0.0.1"), resp.Int(6379), resp.BulkString("connected"), resp.Int(0))
	for _, c := range []struct {
		name  string
		reply resp.Value
		want  string
	}{{"primary", primary, "ready"}, {"replica", replica, "failed"}, {"refused", resp.ErrorValue("NOPERM no permission"), "failed"}} {
		t.Run(c.name, func(t *testing.T) {
			log := &sinkLog{}
			s := &roleCheck{ctx: context.Background(), inner: log, budget: time.Second}
			conn := &roleConn{reply: c.reply}
			s.Ready(1, conn)
			s.Lost(1, errors.New("reset"))
			want := []string{c.want}
			if c.want == "ready" {
				want = append(want, "lost")
			}
			log.mu.Lock()
			defer log.mu.Unlock()
			if strings.Join(log.events, ",") != strings.Join(want, ",") {
				t.Fatalf("sink got %v, want %v", log.events, want)
			}
			switch c.name {
			case "replica":
				if !errors.Is(log.err, ErrNotPrimary) || log.class != fsm.Transient {
					t.Fatalf("replica: %v (%v)", log.err, log.class)
				}
			case "refused":
				if log.class != fsm.Permanent {
					t.Fatalf("refused ROLE: %v (%v)", log.err, log.class)
				}
			}
		})
	}
}
