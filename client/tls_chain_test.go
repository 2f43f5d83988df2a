package client

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"math/big"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// testCA is a certificate with its key.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

func issue(t *testing.T, tmpl *x509.Certificate, key *ecdsa.PrivateKey, parent *testCA) *x509.Certificate {
	t.Helper()
	signer, parentCert := key, tmpl
	if parent != nil {
		signer, parentCert = parent.key, parent.cert
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parentCert, &key.PublicKey, signer)
	if err != nil {
		t.Fatal(err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func caTemplate(serial int64, name string, dp ...string) *x509.Certificate {
	return &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign, CRLDistributionPoints: dp}
}

func signCRL(t *testing.T, ca *testCA, revoked ...*big.Int) []byte {
	t.Helper()
	tmpl := &x509.RevocationList{Number: big.NewInt(1), ThisUpdate: time.Now().Add(-time.Minute), NextUpdate: time.Now().Add(time.Hour)}
	for _, s := range revoked {
		tmpl.RevokedCertificateEntries = append(tmpl.RevokedCertificateEntries, x509.RevocationListEntry{SerialNumber: s, RevocationTime: time.Now()})
	}
	der, err := x509.CreateRevocationList(rand.Reader, tmpl, ca.cert, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	return der
}

// TestRevocationWalksEveryChain checks intermediates, and that one clean verified chain is
// enough when another is revoked.
func TestRevocationWalksEveryChain(t *testing.T) {
	var mu sync.Mutex
	lists := map[string][]byte{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		b, ok := lists[r.URL.Path]
		mu.Unlock()
		if !ok {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write(b)
	}))
	defer srv.Close()
	set := func(path string, b []byte) { mu.Lock(); lists[path] = b; mu.Unlock() }
	key := func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	rootA := &testCA{key: key()}
	rootA.cert = issue(t, caTemplate(1, "root A"), rootA.key, nil)
	rootB := &testCA{key: key()}
	rootB.cert = issue(t, caTemplate(2, "root B"), rootB.key, nil)
	interKey := key()
	// The same intermediate (name and key), certified by both roots: two verified chains.
	interA := &testCA{key: interKey, cert: issue(t, caTemplate(10, "intermediate", srv.URL+"/rootA.crl"), interKey, rootA)}
	interB := &testCA{key: interKey, cert: issue(t, caTemplate(11, "intermediate", srv.URL+"/rootB.crl"), interKey, rootB)}
	leafKey := key()
	leaf := issue(t, &x509.Certificate{SerialNumber: big.NewInt(100), Subject: pkix.Name{CommonName: "server"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), DNSNames: []string{"server"},
		CRLDistributionPoints: []string{srv.URL + "/missing.crl", srv.URL + "/inter.crl"}}, leafKey, interA)
	chainA := []*x509.Certificate{leaf, interA.cert, rootA.cert}
	chainB := []*x509.Certificate{leaf, interB.cert, rootB.cert}
	state := func(chains ...[]*x509.Certificate) tls.ConnectionState {
		return tls.ConnectionState{PeerCertificates: chains[0][:2], VerifiedChains: chains}
	}
	check := func(cs tls.ConnectionState) error { return newRevocationChecker().verify(context.Background(), cs) }

	set("/inter.crl", signCRL(t, interA, big.NewInt(999)))
	set("/rootA.crl", signCRL(t, rootA))
	set("/rootB.crl", signCRL(t, rootB))
	if err := check(state(chainA)); err != nil {
		t.Fatalf("clean chain (the first distribution point is missing, the second serves): %v", err)
	}
	set("/rootA.crl", signCRL(t, rootA, interA.cert.SerialNumber))
	err := check(state(chainA))
	var re *RevocationError
	var verr *tls.CertificateVerificationError
	if !errors.As(err, &re) || !re.Revoked || re.Subject != "CN=intermediate" || !errors.As(err, &verr) {
		t.Fatalf("want the intermediate revoked, got %v", err)
	}
	if err := check(state(chainA, chainB)); err != nil {
		t.Fatalf("the second chain is clean: %v", err)
	}
	set("/inter.crl", signCRL(t, interA, leaf.SerialNumber))
	if err := check(state(chainA, chainB)); !errors.As(err, &re) || !re.Revoked || re.Subject != "CN=server" {
		t.Fatalf("want the leaf revoked in every chain, got %v", err)
	}
	if err := check(tls.ConnectionState{PeerCertificates: []*x509.Certificate{leaf}}); !errors.As(err, &re) || re.Err == nil {
		t.Fatalf("no verified chain must fail: %v", err)
	}
}

// TestCRLCacheIsBounded checks the eviction: expired entries first, else the oldest.
func TestCRLCacheIsBounded(t *testing.T) {
	r := newRevocationChecker()
	now := time.Now()
	for i := 0; i < maxCRLCacheEntries; i++ {
		r.cache[crlKey{url: string(rune('a' + i))}] = &cachedCRL{fetched: now.Add(time.Duration(i) * time.Second), expires: now.Add(time.Hour)}
	}
	r.evictLocked(now)
	if len(r.cache) != maxCRLCacheEntries-1 {
		t.Fatalf("want one eviction, got %d entries", len(r.cache))
	}
	if _, ok := r.cache[crlKey{url: "a"}]; ok {
		t.Fatal("the oldest entry must go first")
	}
	r.cache[crlKey{url: "old"}] = &cachedCRL{fetched: now, expires: now.Add(-time.Second)}
	r.evictLocked(now)
	if _, ok := r.cache[crlKey{url: "old"}]; ok || len(r.cache) != maxCRLCacheEntries-1 {
		t.Fatalf("expired entries must go, and only they: %d entries", len(r.cache))
	}
}
