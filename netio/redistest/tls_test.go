package redistest

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"os"
	"strings"
	"testing"
	"time"
)

func TestTLS(t *testing.T) {
	srv := Start(t, Config{TLS: true, Password: "tlspw"})
	a := srv.TLS
	if a == nil {
		t.Fatal("Server.TLS is nil")
	}
	for _, f := range []string{a.CAFile, a.UntrustedCAFile, a.CertFile, a.KeyFile} {
		if _, err := os.Stat(f); err != nil {
			t.Fatal(err)
		}
	}
	// The helpers speak TLS.
	if got := srv.Do(t, "CONFIG", "GET", "tls-auth-clients"); got != "tls-auth-clients\nno" {
		t.Fatalf("CONFIG GET tls-auth-clients = %q", got)
	}
	if got := srv.Do(t, "CONFIG", "GET", "port"); got != "port\n0" {
		t.Fatalf("CONFIG GET port = %q", got)
	}

	t.Run("trusted", func(t *testing.T) {
		c, err := tlsDial(srv.Addr(), srv.ClientTLSConfig())
		if err != nil {
			t.Fatalf("tls.Dial with the trusted CA: %v", err)
		}
		defer c.Close()
		if got := tlsCommand(t, c, "AUTH", "tlspw"); got != "OK" {
			t.Fatalf("AUTH = %q", got)
		}
		if got := tlsCommand(t, c, "PING"); got != "PONG" {
			t.Fatalf("PING = %q", got)
		}
	})

	t.Run("trusted by IP SAN", func(t *testing.T) {
		cfg := a.ClientTLSConfig()
		cfg.ServerName = "127.0.0.1"
		c, err := tlsDial(srv.Addr(), cfg)
		if err != nil {
			t.Fatalf("tls.Dial by IP: %v", err)
		}
		c.Close()
	})

	t.Run("untrusted CA", func(t *testing.T) {
		cfg := &tls.Config{RootCAs: a.UntrustedCAPool, ServerName: "localhost"}
		c, err := tlsDial(srv.Addr(), cfg)
		if err == nil {
			c.Close()
			t.Fatal("tls.Dial with an unrelated CA succeeded")
		}
		var unknown x509.UnknownAuthorityError
		if !errors.As(err, &unknown) {
			t.Fatalf("tls.Dial with an unrelated CA: %v (%T), want x509.UnknownAuthorityError", err, err)
		}
	})

	t.Run("wrong name", func(t *testing.T) {
		cfg := a.ClientTLSConfig()
		cfg.ServerName = "wrong.example"
		c, err := tlsDial(srv.Addr(), cfg)
		if err == nil {
			c.Close()
			t.Fatal("tls.Dial with ServerName wrong.example succeeded")
		}
		var host x509.HostnameError
		if !errors.As(err, &host) {
			t.Fatalf("tls.Dial with a wrong name: %v (%T), want x509.HostnameError", err, err)
		}
	})

	t.Run("plaintext refused", func(t *testing.T) {
		c, err := net.DialTimeout("tcp", srv.Addr(), time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(2 * time.Second))
		_, _ = c.Write([]byte("PING\r\n"))
		line, err := bufio.NewReader(c).ReadString('\n')
		if err == nil && strings.Contains(line, "PONG") {
			t.Fatalf("plaintext PING answered %q", line)
		}
	})

	t.Run("restart keeps TLS", func(t *testing.T) {
		srv.Restart(t)
		c, err := tlsDial(srv.Addr(), srv.ClientTLSConfig())
		if err != nil {
			t.Fatal(err)
		}
		c.Close()
	})
}

func TestTLSAssetsIndependentPools(t *testing.T) {
	a := Start(t, Config{TLS: true})
	cfg := a.ClientTLSConfig()
	if cfg.ServerName != "localhost" || cfg.RootCAs == nil || len(cfg.Certificates) != 0 {
		t.Fatalf("ClientTLSConfig() = %+v", cfg)
	}
	if a.TLS.CAPool.Equal(a.TLS.UntrustedCAPool) {
		t.Fatal("trusted and untrusted pools are equal")
	}
	if Start(t, Config{}).ClientTLSConfig() != nil {
		t.Fatal("ClientTLSConfig() of a plaintext server is not nil")
	}
}

func tlsDial(addr string, cfg *tls.Config) (*tls.Conn, error) {
	return tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, cfg)
}

func tlsCommand(t *testing.T, c net.Conn, args ...string) string {
	t.Helper()
	r, err := newRESPConn(c).do(time.Now().Add(5*time.Second), args...)
	if err != nil {
		t.Fatalf("%q: %v", args, err)
	}
	return r.String()
}
