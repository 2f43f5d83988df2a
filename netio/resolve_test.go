package netio_test

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/respire-go/respire/engine"
	"github.com/respire-go/respire/netio"
)

// answeringResolver answers each lookup with the next of its answers (the last one repeats), and
// records the names it was asked.
type answeringResolver struct {
	mu      sync.Mutex
	answers [][]string
	asked   []string
}

func (r *answeringResolver) LookupHost(_ context.Context, host string) ([]string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.asked = append(r.asked, host)
	a := r.answers[0]
	if len(r.answers) > 1 {
		r.answers = r.answers[1:]
	}
	if a == nil {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	return a, nil
}

// twoLoopbackListeners listens on 127.0.0.1 and 127.0.0.2 at one port (Linux routes all of
// 127/8 to loopback), so that one endpoint's port reaches either through its name's answer.
func twoLoopbackListeners(t *testing.T) (a, b net.Listener, port int) {
	t.Helper()
	for try := 0; try < 20; try++ {
		la, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port = la.Addr().(*net.TCPAddr).Port
		lb, err := net.Listen("tcp", net.JoinHostPort("127.0.0.2", strconv.Itoa(port)))
		if err != nil {
			_ = la.Close()
			continue
		}
		t.Cleanup(func() { _ = la.Close(); _ = lb.Close() })
		return la, lb, port
	}
	t.Fatal("no port free on both 127.0.0.1 and 127.0.0.2")
	return nil, nil, 0
}

// TestDialResolvesTheNameOnEveryDial: the configured host is a name; its answer changes between
// two dials (the node moved), and the second dial reaches the new address. Without the resolver
// seam the dialer hands the name to net.Dialer, which cannot resolve it, and both dials fail.
func TestDialResolvesTheNameOnEveryDial(t *testing.T) {
	la, lb, port := twoLoopbackListeners(t)
	r := &answeringResolver{answers: [][]string{{"127.0.0.1"}, {"127.0.0.2"}}}
	d := &netio.Dialer{Resolver: r, ConnectTimeout: 5 * time.Second}
	ep := engine.Endpoint{Host: "cache.respire.invalid", Port: port}
	for i, want := range []net.Listener{la, lb} {
		nc, err := d.DialContext(context.Background(), ep)
		if err != nil {
			t.Fatalf("dial %d: %v", i+1, err)
		}
		if got := nc.RemoteAddr().String(); got != want.Addr().String() {
			t.Errorf("dial %d reached %s, want %s", i+1, got, want.Addr())
		}
		_ = nc.Close()
	}
	if len(r.asked) != 2 || r.asked[0] != ep.Host || r.asked[1] != ep.Host {
		t.Errorf("lookups %q, want the configured name twice", r.asked)
	}
}

// TestDialTriesTheAnswersInOrder: an answer whose first address refuses connects to the next.
func TestDialTriesTheAnswersInOrder(t *testing.T) {
	la, lb, port := twoLoopbackListeners(t)
	_ = la.Close() // 127.0.0.1 now refuses
	r := &answeringResolver{answers: [][]string{{"127.0.0.1", "127.0.0.2"}}}
	d := &netio.Dialer{Resolver: r}
	nc, err := d.DialContext(context.Background(), engine.Endpoint{Host: "cache.respire.invalid", Port: port})
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if got := nc.RemoteAddr().String(); got != lb.Addr().String() {
		t.Errorf("reached %s, want %s", got, lb.Addr())
	}
}

// TestDialNameWithoutAddress: a name that does not resolve, or resolves to nothing, fails the
// attempt at the dial stage with the DNS error as its cause; an IP literal is never looked up.
func TestDialNameWithoutAddress(t *testing.T) {
	for _, answer := range [][]string{nil, {}} {
		r := &answeringResolver{answers: [][]string{answer}}
		d := &netio.Dialer{Resolver: r}
		_, err := d.DialContext(context.Background(), engine.Endpoint{Host: "gone.respire.invalid", Port: 6379})
		var ce *netio.ConnectError
		if !errors.As(err, &ce) || ce.Stage != netio.StageDial {
			t.Fatalf("answer %v: err %v, want a dial-stage *ConnectError", answer, err)
		}
		var de *net.DNSError
		if !errors.As(err, &de) || !de.IsNotFound || de.Name != "gone.respire.invalid" {
			t.Errorf("answer %v: err %v, want a not-found *net.DNSError for the name", answer, err)
		}
	}
	la, _, port := twoLoopbackListeners(t)
	r := &answeringResolver{answers: [][]string{nil}}
	nc, err := (&netio.Dialer{Resolver: r}).DialContext(context.Background(), engine.Endpoint{Host: "127.0.0.1", Port: port})
	if err != nil {
		t.Fatal(err)
	}
	_ = nc.Close()
	if len(r.asked) != 0 {
		t.Errorf("an IP literal was looked up: %q", r.asked)
	}
	_ = la
}

// TestDialTLSNamesTheConfiguredHost: a name resolved to an address still sends the configured
// name as the TLS server name (SNI, and the name the certificate is verified against). The
// server records the ClientHello's name and ends the handshake.
func TestDialTLSNamesTheConfiguredHost(t *testing.T) {
	la, _, port := twoLoopbackListeners(t)
	names := make(chan string, 1)
	go func() {
		c, err := la.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		_ = tls.Server(c, &tls.Config{GetConfigForClient: func(h *tls.ClientHelloInfo) (*tls.Config, error) {
			names <- h.ServerName
			return nil, errors.New("recorded")
		}}).Handshake()
	}()
	r := &answeringResolver{answers: [][]string{{"127.0.0.1"}}}
	d := &netio.Dialer{Resolver: r, TLS: &tls.Config{MinVersion: tls.VersionTLS12}, ConnectTimeout: 5 * time.Second}
	_, err := d.DialContext(context.Background(), engine.Endpoint{Host: "cache.respire.invalid", Port: port})
	var ce *netio.ConnectError
	if !errors.As(err, &ce) || ce.Stage != netio.StageTLS {
		t.Fatalf("err %v, want the TLS stage to fail", err)
	}
	select {
	case got := <-names:
		if got != "cache.respire.invalid" {
			t.Fatalf("server name %q, want the configured host", got)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the server saw no ClientHello")
	}
}
