package redistest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// TLSServerName is the DNS name in the server certificate of a TLS server
// (which also carries the IP address 127.0.0.1).
const TLSServerName = "localhost"

// TLSAssets describes the certificates of a server started with
// Config.TLS. They are generated at test time: a CA, a server certificate
// for "localhost" and 127.0.0.1 signed by it, and a second, unrelated CA for
// tests that need a pool which must not verify the server.
type TLSAssets struct {
	// CAPool holds the CA that signed the server certificate.
	CAPool *x509.CertPool
	// CAFile is the PEM file of that CA.
	CAFile string
	// UntrustedCAPool holds an unrelated CA that did not sign the server
	// certificate; verification against it fails.
	UntrustedCAPool *x509.CertPool
	// UntrustedCAFile is the PEM file of the unrelated CA.
	UntrustedCAFile string
	// CertFile and KeyFile are the server certificate and its private key
	// (PEM) that redis-server uses.
	CertFile string
	KeyFile  string
}

// ClientTLSConfig returns a new client configuration that trusts the
// server's CA and expects the name "localhost". No client certificate is
// needed: the servers run with tls-auth-clients no.
func (a *TLSAssets) ClientTLSConfig() *tls.Config {
	return &tls.Config{
		RootCAs:    a.CAPool.Clone(),
		ServerName: TLSServerName,
		MinVersion: tls.VersionTLS12,
	}
}

// pkiMaterial is generated once per process and shared by all TLS servers;
// only the files are per server.
type pkiMaterial struct {
	ca, untrusted           *x509.Certificate
	caPEM, untrustedPEM     []byte
	serverPEM, serverKeyPEM []byte
}

var (
	pkiOnce sync.Once
	pki     *pkiMaterial
	pkiErr  error
)

func loadPKI() (*pkiMaterial, error) {
	pkiOnce.Do(func() { pki, pkiErr = generatePKI() })
	return pki, pkiErr
}

func generatePKI() (*pkiMaterial, error) {
	now := time.Now()
	caKey, ca, caPEM, err := newCA("redistest CA", now)
	if err != nil {
		return nil, err
	}
	_, untrusted, untrustedPEM, err := newCA("redistest untrusted CA", now)
	if err != nil {
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: TLSServerName, Organization: []string{"redistest"}},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(7 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		DNSNames:     []string{TLSServerName},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("creating server certificate: %w", err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	return &pkiMaterial{
		ca:           ca,
		untrusted:    untrusted,
		caPEM:        caPEM,
		untrustedPEM: untrustedPEM,
		serverPEM:    pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		serverKeyPEM: pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}),
	}, nil
}

// newCA creates a self-signed CA certificate.
func newCA(name string, now time.Time) (*ecdsa.PrivateKey, *x509.Certificate, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: name, Organization: []string{"redistest"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(7 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("creating CA %q: %w", name, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, nil, nil, err
	}
	return key, cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), nil
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		// crypto/rand does not fail on supported platforms.
		panic(err)
	}
	return n.Add(n, big.NewInt(1))
}

// writeTLSAssets writes the certificate files into dir.
func writeTLSAssets(dir string) (*TLSAssets, error) {
	m, err := loadPKI()
	if err != nil {
		return nil, fmt.Errorf("generating TLS certificates: %w", err)
	}
	a := &TLSAssets{
		CAPool:          x509.NewCertPool(),
		CAFile:          filepath.Join(dir, "ca.pem"),
		UntrustedCAPool: x509.NewCertPool(),
		UntrustedCAFile: filepath.Join(dir, "untrusted-ca.pem"),
		CertFile:        filepath.Join(dir, "server.pem"),
		KeyFile:         filepath.Join(dir, "server-key.pem"),
	}
	a.CAPool.AddCert(m.ca)
	a.UntrustedCAPool.AddCert(m.untrusted)
	for _, f := range []struct {
		path string
		data []byte
		perm os.FileMode
	}{
		{a.CAFile, m.caPEM, 0o644},
		{a.UntrustedCAFile, m.untrustedPEM, 0o644},
		{a.CertFile, m.serverPEM, 0o644},
		{a.KeyFile, m.serverKeyPEM, 0o600},
	} {
		if err := os.WriteFile(f.path, f.data, f.perm); err != nil {
			return nil, err
		}
	}
	return a, nil
}
