package netio

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/respire-go/respire/engine"
	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/netio/resp"
)

const secret = "hunter2-very-secret"

func TestHandshakeConfigNeverPrintsPassword(t *testing.T) {
	cfg := HandshakeConfig{Username: "alice", Password: secret, Database: 3, ClientName: "app",
		LibraryName: "respire", LibraryVersion: "1.0"}
	tc := TransportConfig{Handshake: cfg}
	var logged strings.Builder
	logger := slog.New(slog.NewTextHandler(&logged, nil))
	logger.Info("config", "handshake", cfg, "ptr", &cfg, "transport", tc)
	var jsonLogged strings.Builder
	slog.New(slog.NewJSONHandler(&jsonLogged, nil)).Info("config", "handshake", cfg, "transport", tc)
	js, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	forms := map[string]string{
		"String":    cfg.String(),
		"json":      string(js),
		"slog text": logged.String(),
		"slog json": jsonLogged.String(),
	}
	values := map[string]any{"cfg": cfg, "cfg ptr": &cfg, "tc": tc, "tc ptr": &tc, "transport": NewTransport(tc),
		"handshake": NewHandshake(cfg), "nested": struct{ T TransportConfig }{tc}}
	for name, v := range values {
		for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%d", "%40v", "%-40s"} {
			forms[name+" "+verb] = fmt.Sprintf(verb, v)
		}
		out, err := json.Marshal(v)
		if err != nil {
			t.Errorf("json.Marshal(%s): %v", name, err)
		}
		forms[name+" json"] = string(out)
		var text, js strings.Builder
		slog.New(slog.NewTextHandler(&text, nil)).Info("m", "v", v)
		slog.New(slog.NewJSONHandler(&js, nil)).Info("m", "v", v)
		forms[name+" slog text"], forms[name+" slog json"] = text.String(), js.String()
	}
	for name, s := range forms {
		if strings.Contains(s, secret) || strings.Contains(s, hex.EncodeToString([]byte(secret))) {
			t.Errorf("%s reveals the password: %s", name, s)
		}
	}
	// Positive control: the forms do say something, including that a password is set.
	if !strings.Contains(cfg.String(), "password="+redacted) || !strings.Contains(cfg.String(), "user=alice") {
		t.Fatalf("String() = %q", cfg.String())
	}
	if got := (HandshakeConfig{}).String(); !strings.Contains(got, "password=none") {
		t.Fatalf("String() without password = %q", got)
	}
}

func TestConnectErrorMessages(t *testing.T) {
	ep := engine.Endpoint{Host: "::1", Port: 6379}
	cases := []struct {
		err  *ConnectError
		want string
	}{
		{&ConnectError{Endpoint: ep, Conn: 7, Stage: StageDial, Err: syscall.ECONNREFUSED},
			"respire: connecting to [::1]:6379 (conn 7): dial: connection refused"},
		{&ConnectError{Endpoint: ep, Stage: StageDial, TimedOut: true, Budget: 5 * time.Second, Err: context.DeadlineExceeded},
			"respire: connecting to [::1]:6379: dial timed out after 5s: context deadline exceeded"},
		{&ConnectError{Endpoint: engine.Endpoint{Host: "/tmp/r.sock"}, Conn: 1, Stage: StageHandshake,
			Err: &HandshakeError{Command: "AUTH", Code: "WRONGPASS", Message: "WRONGPASS invalid username-password pair"}},
			"respire: connecting to /tmp/r.sock (conn 1): handshake AUTH rejected: WRONGPASS invalid username-password pair"},
		// The endpoint is named once: the address of a *net.OpError is left out.
		{&ConnectError{Endpoint: engine.Endpoint{Host: "10.0.0.7", Port: 6379}, Conn: 3, Stage: StageDial,
			Err: &net.OpError{Op: "dial", Net: "tcp", Addr: &net.TCPAddr{IP: net.IPv4(10, 0, 0, 7), Port: 6379}, Err: syscall.ECONNREFUSED}},
			"respire: connecting to 10.0.0.7:6379 (conn 3): dial tcp: connection refused"},
		{&ConnectError{Endpoint: engine.Endpoint{Host: "cache.internal", Port: 6379}, Conn: 4, Stage: StageDial,
			Err: &net.OpError{Op: "dial", Net: "tcp", Err: &net.DNSError{Name: "cache.internal", Server: "10.0.0.53:53", Err: "no such host", IsNotFound: true}}},
			"respire: connecting to cache.internal:6379 (conn 4): dial tcp: lookup (DNS server 10.0.0.53:53): no such host"},
	}
	for _, c := range cases {
		if got := c.err.Error(); got != c.want {
			t.Errorf("got  %q\nwant %q", got, c.want)
		}
	}
	io := &IOError{Endpoint: ep, Conn: 9, Op: "read", Err: io.EOF}
	if got, want := io.Error(), "respire: connection 9 to [::1]:6379: read: EOF"; got != want {
		t.Errorf("got %q want %q", got, want)
	}
	closed := &IOError{Endpoint: ep, Conn: 9, Op: "close", Err: ErrClosed}
	if !errors.Is(closed, ErrClosed) || closed.Error() != "respire: connection 9 to [::1]:6379: close: connection closed" {
		t.Errorf("closed error %q", closed.Error())
	}
	reset := &IOError{Endpoint: ep, Conn: 9, Op: "read", Err: &net.OpError{Op: "read", Net: "tcp",
		Source: &net.TCPAddr{IP: net.IPv6loopback, Port: 50123}, Addr: &net.TCPAddr{IP: net.IPv6loopback, Port: 6379}, Err: syscall.ECONNRESET}}
	if got, want := reset.Error(), "respire: connection 9 to [::1]:6379: read tcp: connection reset by peer"; got != want {
		t.Errorf("got %q want %q", got, want)
	}
	if got, want := CauseText(reset), "connection 9: read tcp: connection reset by peer"; got != want {
		t.Errorf("CauseText: got %q want %q", got, want)
	}
	if got, want := CauseText(cases[3].err), "conn 3: dial tcp: connection refused"; got != want {
		t.Errorf("CauseText: got %q want %q", got, want)
	}
	to := &IOError{Op: "read", Err: &net.OpError{Op: "read", Err: timeoutErr{}}}
	if !to.Timeout() || io.Timeout() {
		t.Errorf("Timeout() wrong")
	}
	if StageTLS.String() != "tls" || !StageTLS.Connecting() || StageHandshake.Connecting() || ConnectStage(9).String() != "stage(9)" {
		t.Errorf("stage names")
	}
}

type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

func TestClassify(t *testing.T) {
	wrap := func(err error) error { return &ConnectError{Stage: StageTLS, Err: err} }
	cases := []struct {
		err  error
		want fsm.FailureClass
	}{
		{nil, fsm.Transient},
		{syscall.ECONNREFUSED, fsm.Transient},
		{wrap(syscall.ECONNRESET), fsm.Transient},
		{wrap(context.Canceled), fsm.Transient},
		{&ConnectError{TimedOut: true, Err: context.DeadlineExceeded}, fsm.Transient},
		{wrap(&HandshakeError{Code: "WRONGPASS"}), fsm.Permanent},
		{wrap(&HandshakeError{Code: "NOPERM"}), fsm.Permanent},
		{wrap(&HandshakeError{Code: "LOADING"}), fsm.Transient},
		{wrap(&HandshakeError{Code: "MASTERDOWN"}), fsm.Transient},
		{wrap(&resp.ProtocolError{Reason: "bad"}), fsm.Permanent},
		{wrap(&tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{}}), fsm.Permanent},
		{wrap(x509.HostnameError{Host: "x"}), fsm.Permanent},
		{wrap(tls.RecordHeaderError{Msg: "first record does not look like a TLS handshake"}), fsm.Permanent},
		{wrap(&net.OpError{Op: "remote error", Err: errors.New("tls: bad certificate")}), fsm.Permanent},
		{wrap(&net.OpError{Op: "read", Err: syscall.ECONNRESET}), fsm.Transient},
	}
	for _, c := range cases {
		if got := Classify(c.err); got != c.want {
			t.Errorf("Classify(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}
