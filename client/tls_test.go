package client_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/respire-go/respire/client"
	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/netio"
	"github.com/respire-go/respire/netio/redistest"
)

// countingDialer dials TCP and counts the calls.
func countingDialer(n *atomic.Int64) func(ctx context.Context, ep client.Endpoint) (net.Conn, error) {
	return func(ctx context.Context, ep client.Endpoint) (net.Conn, error) {
		n.Add(1)
		var d net.Dialer
		return d.DialContext(ctx, "tcp", ep.String())
	}
}

// requirePermanent fails unless err is a connection failure that respire never retries.
func requirePermanent(t *testing.T, err error) {
	t.Helper()
	var ce *client.ConnectionError
	if !errors.As(err, &ce) {
		t.Fatalf("want a *client.ConnectionError, got %T: %v", err, err)
	}
	if class := netio.Classify(err); class != fsm.Permanent {
		t.Fatalf("want a permanent failure, got %v: %v", class, err)
	}
	if errors.Is(err, client.ErrReconnectLimit) {
		t.Fatalf("an authentication failure is not a reconnect limit: %v", err)
	}
}

func TestTLSTrustedServerConnects(t *testing.T) {
	redistest.Require(t)
	checkNoLeaks(t)
	srv := redistest.Start(t, redistest.Config{TLS: true})
	mine := &tls.Config{RootCAs: srv.TLS.CAPool}
	ctx := ctxT(t)
	// The endpoint's host (127.0.0.1, in the certificate) is verified when no name is given.
	c, err := client.Connect(ctx, client.Options{Endpoints: []client.Endpoint{endpointOf(srv)}, TLS: mine})
	if err != nil {
		t.Fatal(err)
	}
	must(t, c.Ping(ctx))
	c.Close()
	// TLSServerName and the version bounds apply to a copy: the caller's configuration is intact.
	c, err = client.Connect(ctx, client.Options{Endpoints: []client.Endpoint{endpointOf(srv)}, TLS: mine,
		TLSServerName: redistest.TLSServerName, TLSMinVersion: tls.VersionTLS12, TLSMaxVersion: tls.VersionTLS13,
		TCPKeepAlive: 30 * time.Second, EnableMultipathTCP: true})
	if err != nil {
		t.Fatal(err)
	}
	must(t, c.Ping(ctx))
	c.Close()
	if mine.ServerName != "" || mine.MinVersion != 0 || mine.MaxVersion != 0 || mine.VerifyConnection != nil {
		t.Fatalf("the caller's tls.Config was modified: %+v", mine)
	}
}

func TestTLSUntrustedServerFailsPermanently(t *testing.T) {
	redistest.Require(t)
	checkNoLeaks(t)
	srv := redistest.Start(t, redistest.Config{TLS: true})
	for _, revocation := range []bool{false, true} {
		t.Run("revocation="+strconv.FormatBool(revocation), func(t *testing.T) {
			_, err := client.Connect(ctxT(t), client.Options{Endpoints: []client.Endpoint{endpointOf(srv)},
				TLS: &tls.Config{RootCAs: srv.TLS.UntrustedCAPool}, CheckCertificateRevocation: revocation})
			var unknown x509.UnknownAuthorityError
			if !errors.As(err, &unknown) {
				t.Fatalf("want an x509.UnknownAuthorityError, got %v", err)
			}
			if !strings.Contains(err.Error(), "certificate signed by unknown authority") {
				t.Fatalf("unclear message: %v", err)
			}
			requirePermanent(t, err)
		})
	}
}

func TestTLSWrongServerNameFails(t *testing.T) {
	redistest.Require(t)
	srv := redistest.Start(t, redistest.Config{TLS: true})
	_, err := client.Connect(ctxT(t), client.Options{Endpoints: []client.Endpoint{endpointOf(srv)},
		TLS: &tls.Config{RootCAs: srv.TLS.CAPool}, TLSServerName: "cache.example.com"})
	var hostname x509.HostnameError
	if !errors.As(err, &hostname) || hostname.Host != "cache.example.com" {
		t.Fatalf("want an x509.HostnameError for cache.example.com, got %v", err)
	}
	requirePermanent(t, err)
}

// TestTLSVersionBounds shows that TLSMinVersion and TLSMaxVersion (and sslProtocols) reach the
// handshake: the server accepts TLS 1.2 only.
func TestTLSVersionBounds(t *testing.T) {
	redistest.Require(t)
	srv := redistest.Start(t, redistest.Config{TLS: true, Extra: []string{`tls-protocols "TLSv1.2"`}})
	ctx := ctxT(t)
	base := client.Options{Endpoints: []client.Endpoint{endpointOf(srv)}, TLS: &tls.Config{RootCAs: srv.TLS.CAPool}}
	o := base
	o.TLSMinVersion = tls.VersionTLS13
	if _, err := client.Connect(ctx, o); err == nil || !strings.Contains(err.Error(), "protocol version") {
		t.Fatalf("a TLS 1.3 minimum must fail against a TLS 1.2 server: %v", err)
	}
	o = base
	o.TLSMaxVersion = tls.VersionTLS12
	c, err := client.Connect(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	for in, ok := range map[string]bool{"Tls13": false, "Tls12": true, "Tls12|Tls13": true, "12288": false} {
		p, err := client.ParseConnectionString(fmt.Sprintf("127.0.0.1:%d,ssl=true,sslProtocols=%s", srv.Port(), in))
		if err != nil {
			t.Fatal(err)
		}
		p.TLS.RootCAs = srv.TLS.CAPool
		c, err := client.Connect(ctx, p)
		if (err == nil) != ok {
			t.Fatalf("sslProtocols=%s: connected=%v, want %v (%v)", in, err == nil, ok, err)
		}
		if c != nil {
			c.Close()
		}
	}
}

// checkOneDialPerUse makes three uses of c, whose endpoint fails every attempt permanently, and
// checks each against dials: the first use dials once; the second, during the slot's rest after
// that failure (250 ms), fails at once with the same permanent error and dials nothing; the third,
// after the rest, dials once more. Nothing dials between uses.
func checkOneDialPerUse(t *testing.T, c *client.Client, dials *atomic.Int64) {
	t.Helper()
	for use, want := range []int64{1, 1, 2} {
		if use == 2 {
			time.Sleep(fsm.NoPolicyFirstWait + 50*time.Millisecond)
		}
		requirePermanent(t, c.Ping(ctxT(t)))
		time.Sleep(50 * time.Millisecond) // room for any background retry
		if n := dials.Load(); n != want {
			t.Fatalf("after %d uses: %d dials, want %d", use+1, n, want)
		}
	}
}

// TestTLSAuthenticationFailureIsNeverRetried: with a reconnect policy, each use makes at most one
// attempt (a use during the rest after a failed initial attempt makes none), nothing is retried
// in the background, and the failure stays permanent.
func TestTLSAuthenticationFailureIsNeverRetried(t *testing.T) {
	redistest.Require(t)
	checkNoLeaks(t)
	srv := redistest.Start(t, redistest.Config{TLS: true})
	var dials atomic.Int64
	c, err := client.Create(client.Options{Endpoints: []client.Endpoint{endpointOf(srv)}, Dialer: countingDialer(&dials),
		TLS:             &tls.Config{RootCAs: srv.TLS.UntrustedCAPool},
		ReconnectPolicy: &client.ReconnectPolicy{InitialDelay: 5 * time.Millisecond, MaxAttempts: 3}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	checkOneDialPerUse(t, c, &dials)
}

// pki is a test CA whose server certificate names a CRL distribution point.
type pki struct {
	caKey  *ecdsa.PrivateKey
	ca     *x509.Certificate
	pool   *x509.CertPool
	leaf   *x509.Certificate
	dir    string
	crlURL string
}

func newKey(t *testing.T) *ecdsa.PrivateKey {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// newPKI creates a CA and a server certificate for localhost/127.0.0.1 naming crlURL, and
// writes the server's files.
func newPKI(t *testing.T, crlURL string) *pki {
	now := time.Now()
	p := &pki{caKey: newKey(t), dir: t.TempDir(), crlURL: crlURL}
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "revocation test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign}
	der, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &p.caKey.PublicKey, p.caKey)
	if err != nil {
		t.Fatal(err)
	}
	if p.ca, err = x509.ParseCertificate(der); err != nil {
		t.Fatal(err)
	}
	p.pool = x509.NewCertPool()
	p.pool.AddCert(p.ca)
	leafKey := newKey(t)
	leafTmpl := &x509.Certificate{SerialNumber: big.NewInt(4242), Subject: pkix.Name{CommonName: "localhost"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, DNSNames: []string{"localhost"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, CRLDistributionPoints: []string{crlURL}}
	der, err = x509.CreateCertificate(rand.Reader, leafTmpl, p.ca, &leafKey.PublicKey, p.caKey)
	if err != nil {
		t.Fatal(err)
	}
	if p.leaf, err = x509.ParseCertificate(der); err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(leafKey)
	if err != nil {
		t.Fatal(err)
	}
	write := func(name, typ string, b []byte) {
		if err := os.WriteFile(filepath.Join(p.dir, name), pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: b}), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("ca.pem", "CERTIFICATE", p.ca.Raw)
	write("server.pem", "CERTIFICATE", der)
	write("server-key.pem", "PRIVATE KEY", keyDER)
	return p
}

// crl returns a CRL signed by key for issuer, revoking the given serials.
func (p *pki) crl(t *testing.T, issuer *x509.Certificate, key *ecdsa.PrivateKey, nextUpdate time.Time, revoked ...*big.Int) []byte {
	tmpl := &x509.RevocationList{Number: big.NewInt(time.Now().UnixNano()), ThisUpdate: time.Now().Add(-time.Minute), NextUpdate: nextUpdate}
	for _, s := range revoked {
		tmpl.RevokedCertificateEntries = append(tmpl.RevokedCertificateEntries,
			x509.RevocationListEntry{SerialNumber: s, RevocationTime: time.Now().Add(-time.Minute)})
	}
	der, err := x509.CreateRevocationList(rand.Reader, tmpl, issuer, key)
	if err != nil {
		t.Fatal(err)
	}
	return der
}

// startCustomTLSRedis starts redis-server with a plaintext port (for redistest's own probe)
// and a TLS port serving p's certificate; it returns the TLS endpoint.
func startCustomTLSRedis(t *testing.T, p *pki) client.Endpoint {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	redistest.Start(t, redistest.Config{Extra: []string{
		"tls-port " + strconv.Itoa(port),
		"tls-cert-file " + strconv.Quote(filepath.Join(p.dir, "server.pem")),
		"tls-key-file " + strconv.Quote(filepath.Join(p.dir, "server-key.pem")),
		"tls-ca-cert-file " + strconv.Quote(filepath.Join(p.dir, "ca.pem")),
		"tls-auth-clients no",
	}})
	return client.Endpoint{Host: "127.0.0.1", Port: port}
}

// crlServer serves whatever its handler field says, and counts requests.
type crlServer struct {
	mu       sync.Mutex
	handler  http.HandlerFunc
	requests atomic.Int64
}

func (s *crlServer) set(h http.HandlerFunc) {
	s.mu.Lock()
	s.handler = h
	s.mu.Unlock()
}

func (s *crlServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.requests.Add(1)
	s.mu.Lock()
	h := s.handler
	s.mu.Unlock()
	h(w, r)
}

func serveBytes(b []byte) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/pkix-crl")
		_, _ = w.Write(b)
	}
}

func TestTLSCertificateRevocation(t *testing.T) {
	redistest.Require(t)
	crls := &crlServer{}
	httpSrv := httptest.NewServer(crls)
	defer httpSrv.Close()
	p := newPKI(t, httpSrv.URL+"/ca.crl")
	redisEP := startCustomTLSRedis(t, p)
	later := time.Now().Add(time.Hour)
	otherKey := newKey(t)

	options := func() client.Options {
		return client.Options{Endpoints: []client.Endpoint{redisEP}, TLS: &tls.Config{RootCAs: p.pool},
			TLSServerName: "localhost", CheckCertificateRevocation: true, ConnectTimeout: 2 * time.Second}
	}
	connect := func(t *testing.T, o client.Options) (*client.Client, error) {
		t.Helper()
		checkNoLeaks(t)
		c, err := client.Connect(ctxT(t), o)
		if c != nil {
			t.Cleanup(func() { c.Close() })
		}
		return c, err
	}
	// unknownStatus asserts a permanent failure whose revocation status is unknown.
	unknownStatus := func(t *testing.T, err error, why string) {
		t.Helper()
		var re *client.RevocationError
		if !errors.As(err, &re) || re.Revoked || re.Err == nil || !strings.Contains(err.Error(), why) {
			t.Fatalf("want an unknown revocation status (%s), got %v", why, err)
		}
		requirePermanent(t, err)
	}

	t.Run("not revoked connects", func(t *testing.T) {
		crls.set(serveBytes(p.crl(t, p.ca, p.caKey, later, big.NewInt(7))))
		c, err := connect(t, options())
		if err != nil {
			t.Fatal(err)
		}
		must(t, c.Ping(ctxT(t)))
	})
	t.Run("revocation off ignores the CRL", func(t *testing.T) {
		crls.set(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusServiceUnavailable) })
		o := options()
		o.CheckCertificateRevocation = false
		before := crls.requests.Load()
		if _, err := connect(t, o); err != nil {
			t.Fatal(err)
		}
		if crls.requests.Load() != before {
			t.Fatal("the CRL was fetched although revocation checking is off")
		}
	})
	t.Run("revoked fails permanently", func(t *testing.T) {
		crls.set(serveBytes(p.crl(t, p.ca, p.caKey, later, big.NewInt(7), p.leaf.SerialNumber)))
		_, err := connect(t, options())
		var re *client.RevocationError
		var verr *tls.CertificateVerificationError
		if !errors.As(err, &re) || !re.Revoked || re.SerialNumber.Cmp(p.leaf.SerialNumber) != 0 || !errors.As(err, &verr) {
			t.Fatalf("want a revoked certificate, got %v", err)
		}
		if !strings.Contains(err.Error(), "is revoked") || !strings.Contains(err.Error(), p.crlURL) {
			t.Fatalf("unclear message: %v", err)
		}
		requirePermanent(t, err)
		t.Logf("revoked: %v", err)
	})
	t.Run("revoked is never retried", func(t *testing.T) {
		crls.set(serveBytes(p.crl(t, p.ca, p.caKey, later, p.leaf.SerialNumber)))
		var dials atomic.Int64
		o := options()
		o.Dialer = countingDialer(&dials)
		o.ReconnectPolicy = &client.ReconnectPolicy{InitialDelay: 5 * time.Millisecond, MaxAttempts: 2}
		c, err := client.Create(o)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		checkOneDialPerUse(t, c, &dials)
	})
	t.Run("CRL unreachable fails", func(t *testing.T) {
		dead := httptest.NewServer(http.NotFoundHandler())
		deadURL := dead.URL
		dead.Close()
		q := newPKI(t, deadURL+"/ca.crl")
		ep := startCustomTLSRedis(t, q)
		_, err := connect(t, client.Options{Endpoints: []client.Endpoint{ep}, TLS: &tls.Config{RootCAs: q.pool},
			TLSServerName: "localhost", CheckCertificateRevocation: true})
		unknownStatus(t, err, "downloading the CRL")
		t.Logf("unreachable: %v", err)
	})
	t.Run("CRL HTTP error fails", func(t *testing.T) {
		crls.set(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusServiceUnavailable) })
		_, err := connect(t, options())
		unknownStatus(t, err, "HTTP status 503")
	})
	t.Run("CRL signed by another key fails", func(t *testing.T) {
		crls.set(serveBytes(p.crl(t, p.ca, otherKey, later)))
		_, err := connect(t, options())
		unknownStatus(t, err, "signature")
	})
	t.Run("expired CRL fails", func(t *testing.T) {
		crls.set(serveBytes(p.crl(t, p.ca, p.caKey, time.Now().Add(-time.Second))))
		_, err := connect(t, options())
		unknownStatus(t, err, "expired")
	})
	t.Run("garbage CRL fails", func(t *testing.T) {
		crls.set(serveBytes([]byte("not a CRL")))
		_, err := connect(t, options())
		unknownStatus(t, err, "parsing the CRL")
	})
	t.Run("PEM CRL accepted", func(t *testing.T) {
		crls.set(serveBytes(pem.EncodeToMemory(&pem.Block{Type: "X509 CRL", Bytes: p.crl(t, p.ca, p.caKey, later)})))
		if _, err := connect(t, options()); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("slow CRL is a connect timeout", func(t *testing.T) {
		release := make(chan struct{})
		defer close(release)
		crls.set(func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-release:
			case <-r.Context().Done():
			}
		})
		o := options()
		o.ConnectTimeout = 300 * time.Millisecond
		start := time.Now()
		_, err := connect(t, o)
		var te *client.TimeoutError
		if !errors.As(err, &te) || te.Diagnostics.Stage != client.StageConnecting {
			t.Fatalf("want a Connecting timeout, got %v", err)
		}
		t.Logf("slow CRL: %v", err)
		if time.Since(start) > 5*time.Second {
			t.Fatal("the CRL download outlived the connect deadline")
		}
	})
	t.Run("caller's VerifyConnection still runs", func(t *testing.T) {
		crls.set(serveBytes(p.crl(t, p.ca, p.caKey, later)))
		mine := errors.New("rejected by the caller")
		o := options()
		o.TLS.VerifyConnection = func(tls.ConnectionState) error { return mine }
		if _, err := connect(t, o); !errors.Is(err, mine) {
			t.Fatalf("want the caller's rejection, got %v", err)
		}
	})
	t.Run("reconnect reuses the cached CRL", func(t *testing.T) {
		crls.set(serveBytes(p.crl(t, p.ca, p.caKey, later)))
		before := crls.requests.Load()
		o := options()
		o.AllowAdmin = true // for CLIENT KILL
		c, err := connect(t, o)
		if err != nil {
			t.Fatal(err)
		}
		ctx := ctxT(t)
		first, err := c.Do(ctx, "CLIENT", "ID")
		if err != nil {
			t.Fatal(err)
		}
		// Redis replies, then closes the connection that sent it (SKIPME no).
		_, _ = c.Do(ctx, "CLIENT", "KILL", "TYPE", "normal", "SKIPME", "no")
		eventually(t, "a new connection", 5*time.Second, func() bool {
			id, err := c.Do(ctx, "CLIENT", "ID")
			return err == nil && id.Int != first.Int
		})
		if n := crls.requests.Load() - before; n != 1 {
			t.Fatalf("want one CRL download for two connections, got %d", n)
		}
	})
}
