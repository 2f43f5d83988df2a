package client

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/cockroachdb/errors"

	"github.com/respire-go/respire/engine"
	"github.com/respire-go/respire/netio"
)

// Bounds of revocation checking.
const (
	// maxCRLBytes bounds the size of one downloaded certificate revocation list.
	maxCRLBytes = 16 << 20
	// maxCRLCacheEntries bounds the revocation lists a client keeps between connections.
	maxCRLCacheEntries = 64
	// maxCRLCacheAge bounds how long a downloaded list is reused, even when its NextUpdate is
	// later, so that an early republication (a fresh revocation) is seen within this delay.
	maxCRLCacheAge = time.Hour
	// maxCRLRedirects bounds the HTTP redirects followed for one download.
	maxCRLRedirects = 5
)

// RevocationError reports a server certificate that failed revocation checking
// (Options.CheckCertificateRevocation): either a certificate revocation list (CRL) lists it as
// revoked (Revoked is true), or its revocation status could not be established (Err says why).
// The connection attempt fails with a *tls.CertificateVerificationError wrapping it, which
// respire classifies as a permanent TLS authentication failure: it is never retried.
//
// The rules, applied during each TLS handshake after Go verified the chain:
//   - Every certificate of a verified chain except its root (the trust anchor) is checked.
//     A certificate naming no CRL distribution point passes; OCSP is not used.
//   - The CRL is taken from the first http or https distribution point that yields a usable
//     list: DER or PEM, at most 16 MiB, issued by the certificate's issuer (the next certificate
//     of the chain), signed with that issuer's key, and whose NextUpdate, if any, has not
//     passed. Other schemes (ldap) are skipped; delta and indirect CRLs are not supported.
//   - The certificate fails when that list names its serial number, or when no distribution
//     point yields a usable list. The connection is accepted when one verified chain passes.
//   - Downloads share the attempt's deadline and cancellation. When the deadline expires
//     during a download, the attempt fails as a connect timeout (transient), not with a
//     RevocationError.
//   - Each client caches up to 64 lists, each for at most one hour and never past its
//     NextUpdate. The caller's own TLS.VerifyConnection runs before the check.
type RevocationError struct {
	// Subject is the certificate's subject.
	Subject string
	// SerialNumber is the certificate's serial number.
	SerialNumber *big.Int
	// DistributionPoint is the CRL address that revoked the certificate, or the last one tried.
	DistributionPoint string
	// Revoked reports that the CRL lists the certificate.
	Revoked bool
	// RevokedAt is the revocation time given by the CRL, when Revoked.
	RevokedAt time.Time
	// Err says why the status is unknown (no usable CRL); nil when Revoked.
	Err error
}

// Error implements error.
func (e *RevocationError) Error() string {
	serial := "?"
	if e.SerialNumber != nil {
		serial = "0x" + e.SerialNumber.Text(16)
	}
	who := "certificate \"" + e.Subject + "\" (serial " + serial + ")"
	if e.Revoked {
		msg := "respire: " + who + " is revoked"
		if !e.RevokedAt.IsZero() {
			msg += " since " + e.RevokedAt.UTC().Format(time.RFC3339)
		}
		return msg + " according to the CRL at " + e.DistributionPoint
	}
	msg := "respire: revocation status of " + who + " is unknown"
	if e.DistributionPoint != "" {
		msg += " (CRL at " + e.DistributionPoint + ")"
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Unwrap returns why the status is unknown.
func (e *RevocationError) Unwrap() error { return e.Err }

// buildTLSConfig returns the TLS configuration of every connection, or nil without TLS: a copy
// of Options.TLS with the server name and protocol versions applied. The caller's configuration
// is never modified.
func (o *Options) buildTLSConfig() *tls.Config {
	if o.TLS == nil {
		return nil
	}
	c := o.TLS.Clone()
	if o.TLSServerName != "" {
		c.ServerName = o.TLSServerName
	}
	if o.TLSMinVersion != 0 {
		c.MinVersion = o.TLSMinVersion
	}
	if o.TLSMaxVersion != 0 {
		c.MaxVersion = o.TLSMaxVersion
	}
	return c
}

// revocationDialer returns a dialer that performs the TLS handshake itself, inside its dial
// hook, so that each handshake's revocation check runs under that attempt's context: the
// connect deadline and the caller's cancellation bound the CRL downloads. (crypto/tls gives
// certificate verification callbacks no context.) The transport connection is opened exactly as
// d would open it: by d.Dial when set, else by the built-in TCP/Unix dialing with d's
// keepalive, multipath and resolver settings.
func revocationDialer(d netio.Dialer) netio.Dialer {
	raw := netio.Dialer{ConnectTimeout: -1, KeepAlive: d.KeepAlive, DisableNoDelay: d.DisableNoDelay,
		MultipathTCP: d.MultipathTCP, MultipathFallback: d.MultipathFallback, Dial: d.Dial, Resolver: d.Resolver}
	base := d.TLS
	checker := newRevocationChecker()
	hook := func(ctx context.Context, ep engine.Endpoint) (net.Conn, error) {
		nc, err := raw.DialContext(ctx, ep)
		if err != nil {
			// The outer dialer wraps the failure again: hand it the cause only.
			var ce *netio.ConnectError
			if errors.As(err, &ce) && ce.Err != nil {
				return nil, ce.Err
			}
			return nil, err
		}
		cfg := base.Clone()
		if cfg.ServerName == "" && !cfg.InsecureSkipVerify && !ep.IsUnix() {
			cfg.ServerName = ep.Host
		}
		own := base.VerifyConnection
		cfg.VerifyConnection = func(cs tls.ConnectionState) error {
			if own != nil {
				if err := own(cs); err != nil {
					return err
				}
			}
			return checker.verify(ctx, cs)
		}
		tc := tls.Client(nc, cfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			_ = nc.Close()
			return nil, err
		}
		return tc, nil
	}
	return netio.Dialer{ConnectTimeout: d.ConnectTimeout, KeepAlive: d.KeepAlive, DisableNoDelay: d.DisableNoDelay,
		MultipathTCP: d.MultipathTCP, Dial: hook}
}

// revocationChecker checks verified chains against CRLs, keeping a bounded cache of the lists
// it downloaded. It is safe for concurrent use.
type revocationChecker struct {
	http *http.Client
	now  func() time.Time

	mu    sync.Mutex
	cache map[crlKey]*cachedCRL
}

// crlKey identifies a CRL by its address and the issuer it was verified against.
type crlKey struct {
	url    string
	issuer [sha256.Size]byte
}

// cachedCRL is a downloaded, verified CRL.
type cachedCRL struct {
	revoked map[string]time.Time // serial (hex) -> revocation time
	expires time.Time            // reuse until then
	fetched time.Time
}

func newRevocationChecker() *revocationChecker {
	// A transport of its own that keeps no idle connection: downloads are rare (the lists are
	// cached), and a closed client must leave no connection or goroutine behind.
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.DisableKeepAlives = true
	return &revocationChecker{
		http: &http.Client{Transport: transport, CheckRedirect: func(_ *http.Request, via []*http.Request) error {
			if len(via) >= maxCRLRedirects {
				return errors.New("too many redirects")
			}
			return nil
		}},
		now:   time.Now,
		cache: make(map[crlKey]*cachedCRL),
	}
}

// verify accepts the connection when at least one verified chain passes: every certificate of
// the chain but its root (the trust anchor) is checked against the CRL named by its CRL
// distribution points, verified with the next certificate of the chain (its issuer).
// Certificates naming no distribution point pass. When no chain passes, the first chain's
// failure is returned, wrapped in a *tls.CertificateVerificationError.
func (r *revocationChecker) verify(ctx context.Context, cs tls.ConnectionState) error {
	if len(cs.VerifiedChains) == 0 {
		// Validate forbids InsecureSkipVerify with revocation checking, so crypto/tls verified
		// the chain; a caller's VerifyConnection cannot reach here without chains either.
		return &tls.CertificateVerificationError{UnverifiedCertificates: cs.PeerCertificates,
			Err: &RevocationError{Subject: subjectOf(cs.PeerCertificates), Err: errors.New("no verified chain to check")}}
	}
	var first error
	for _, chain := range cs.VerifiedChains {
		err := r.verifyChain(ctx, chain)
		if err == nil {
			return nil
		}
		if first == nil {
			first = err
		}
		if ctx.Err() != nil {
			// The attempt's deadline or the caller's cancellation ended the check: report that,
			// not an authentication failure, so that a timeout stays a (transient) timeout.
			return errors.Wrap(ctx.Err(), "respire: checking certificate revocation")
		}
	}
	return &tls.CertificateVerificationError{UnverifiedCertificates: cs.PeerCertificates, Err: first}
}

func subjectOf(certs []*x509.Certificate) string {
	if len(certs) == 0 {
		return ""
	}
	return certs[0].Subject.String()
}

// verifyChain checks each non-root certificate of chain.
func (r *revocationChecker) verifyChain(ctx context.Context, chain []*x509.Certificate) error {
	for i := 0; i+1 < len(chain); i++ {
		if err := r.verifyCert(ctx, chain[i], chain[i+1]); err != nil {
			return err
		}
	}
	return nil
}

// verifyCert checks cert against the first of its distribution points that yields a verified,
// current CRL.
func (r *revocationChecker) verifyCert(ctx context.Context, cert, issuer *x509.Certificate) error {
	if len(cert.CRLDistributionPoints) == 0 {
		return nil
	}
	fail := &RevocationError{Subject: cert.Subject.String(), SerialNumber: cert.SerialNumber}
	for _, dp := range cert.CRLDistributionPoints {
		fail.DistributionPoint = redactURL(dp)
		crl, err := r.crl(ctx, dp, issuer)
		if err != nil {
			fail.Err = err
			if ctx.Err() != nil {
				break
			}
			continue
		}
		if at, revoked := crl.revoked[cert.SerialNumber.Text(16)]; revoked {
			return &RevocationError{Subject: fail.Subject, SerialNumber: cert.SerialNumber,
				DistributionPoint: fail.DistributionPoint, Revoked: true, RevokedAt: at}
		}
		return nil
	}
	return fail
}

// crl returns the verified CRL at location for issuer, from the cache or downloaded.
func (r *revocationChecker) crl(ctx context.Context, location string, issuer *x509.Certificate) (*cachedCRL, error) {
	key := crlKey{url: location, issuer: sha256.Sum256(issuer.Raw)}
	now := r.now()
	r.mu.Lock()
	c, ok := r.cache[key]
	if ok && now.After(c.expires) {
		delete(r.cache, key)
		ok = false
	}
	r.mu.Unlock()
	if ok {
		return c, nil
	}
	c, err := r.fetch(ctx, location, issuer, now)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.cache) >= maxCRLCacheEntries {
		r.evictLocked(now)
	}
	r.cache[key] = c
	return c, nil
}

// evictLocked removes the expired entries, or the oldest one when none has expired.
func (r *revocationChecker) evictLocked(now time.Time) {
	var oldest crlKey
	var oldestAt time.Time
	first := true
	for k, c := range r.cache {
		if now.After(c.expires) {
			delete(r.cache, k)
			continue
		}
		if first || c.fetched.Before(oldestAt) {
			oldest, oldestAt, first = k, c.fetched, false
		}
	}
	if len(r.cache) >= maxCRLCacheEntries {
		delete(r.cache, oldest)
	}
}

// fetch downloads, parses and verifies the CRL at location.
func (r *revocationChecker) fetch(ctx context.Context, location string, issuer *x509.Certificate, now time.Time) (*cachedCRL, error) {
	u, err := url.Parse(location)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, errors.New("unsupported CRL distribution point (only http and https are fetched)")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, location, nil)
	if err != nil {
		return nil, errors.New("invalid CRL distribution point")
	}
	res, err := r.http.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, errors.Wrap(ctx.Err(), "downloading the CRL")
		}
		return nil, errors.Wrap(stripURLError(err), "downloading the CRL")
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return nil, errors.Newf("downloading the CRL: HTTP status %d", res.StatusCode)
	}
	body, err := io.ReadAll(io.LimitReader(res.Body, maxCRLBytes+1))
	if err != nil {
		return nil, errors.Wrap(stripURLError(err), "downloading the CRL")
	}
	if len(body) > maxCRLBytes {
		return nil, errors.Newf("the CRL exceeds %d bytes", maxCRLBytes)
	}
	if bytes.HasPrefix(bytes.TrimSpace(body), []byte("-----BEGIN")) {
		if b, _ := pem.Decode(bytes.TrimSpace(body)); b != nil && b.Type == "X509 CRL" {
			body = b.Bytes
		}
	}
	list, err := x509.ParseRevocationList(body)
	if err != nil {
		return nil, errors.Wrap(err, "parsing the CRL")
	}
	if !bytes.Equal(list.RawIssuer, issuer.RawSubject) {
		return nil, errors.New("the CRL was not issued by the certificate's issuer")
	}
	if err := list.CheckSignatureFrom(issuer); err != nil {
		return nil, errors.Wrap(err, "verifying the CRL's signature")
	}
	if !list.NextUpdate.IsZero() && now.After(list.NextUpdate) {
		return nil, errors.Newf("the CRL expired at %s", list.NextUpdate.UTC().Format(time.RFC3339))
	}
	c := &cachedCRL{revoked: make(map[string]time.Time, len(list.RevokedCertificateEntries)),
		fetched: now, expires: now.Add(maxCRLCacheAge)}
	if !list.NextUpdate.IsZero() && list.NextUpdate.Before(c.expires) {
		c.expires = list.NextUpdate
	}
	for _, e := range list.RevokedCertificateEntries {
		if e.SerialNumber != nil {
			c.revoked[e.SerialNumber.Text(16)] = e.RevocationTime
		}
	}
	return c, nil
}

// redactURL removes any credentials from a distribution point before it is printed.
func redactURL(location string) string {
	u, err := url.Parse(location)
	if err != nil {
		return "(unparsable address)"
	}
	return u.Redacted()
}

// stripURLError drops the *url.Error layer, whose message repeats the address unredacted.
func stripURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return errors.Wrap(ue.Err, ue.Op)
	}
	return err
}
