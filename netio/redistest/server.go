package redistest

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

const (
	// startTimeout bounds the wait for a started process to answer PING.
	startTimeout = 10 * time.Second
	// maxStartAttempts bounds how often Start picks new ports after a
	// collision with another process.
	maxStartAttempts = 8
	// doTimeout bounds one Do/TryDo round trip, connection included.
	doTimeout = 10 * time.Second
	// probeTimeout bounds one readiness probe.
	probeTimeout = time.Second
)

// errAddrInUse means the process could not bind its port(s).
var errAddrInUse = errors.New("address already in use")

// Config configures a server started by [Start]. The zero value is a plain
// server without authentication.
type Config struct {
	// Password sets requirepass. The helpers of [Server] (readiness probe,
	// Do, TryDo, Ping) authenticate with it.
	Password string
	// Username makes the helpers authenticate with AUTH Username Password
	// instead of AUTH Password; useful with ACL users defined in Extra.
	Username string
	// Extra holds raw configuration lines appended to the generated
	// configuration, for example `rename-command HELLO ""` or ACL lines such
	// as `user alice on >pw ~* +@all`. A later line overrides an earlier one.
	Extra []string
	// UnixSocket makes the server also listen on a Unix socket (unixsocketperm
	// 700) at a short path returned by [Server.UnixPath].
	UnixSocket bool
	// TLS makes the server accept only TLS connections on its port (tls-port,
	// with port 0 and tls-auth-clients no), using certificates generated at
	// test time and described by [Server.TLS].
	TLS bool
}

// nodeRole says which kind of process a Server runs.
type nodeRole int

const (
	roleServer   nodeRole = iota // plain redis-server
	roleSentinel                 // redis-sentinel
	roleCluster                  // redis-server with cluster-enabled yes
)

// Server is a Redis process started by [Start] (or as part of a
// [SentinelGroup] or [Cluster]). It keeps its port and configuration across
// [Server.Kill] and [Server.Restart]. Its methods may be called from several
// goroutines, except those taking a testing.TB, which follow the rules of
// testing.TB.Fatalf.
type Server struct {
	// TLS describes the certificates when the server was started with
	// Config.TLS; it is nil otherwise.
	TLS *TLSAssets

	cfg        Config
	role       nodeRole
	dir        string
	confPath   string
	logPath    string
	stderrPath string
	unixPath   string
	port       int
	busPort    int // cluster bus port, roleCluster only

	mu   sync.Mutex
	proc *process // nil when not running
}

// process is one run of the server binary.
type process struct {
	cmd     *exec.Cmd
	done    chan struct{} // closed once the process has been reaped
	waitErr error         // valid after done is closed
}

// Start starts a redis-server on 127.0.0.1 configured by cfg and returns once
// it answers PING. The process is killed and reaped, and its files removed,
// when the test finishes. Start fails the test when the server cannot be
// started within a few seconds (the message includes the end of the server's
// log) and skips or fails it as [Require] does when Redis is not installed.
func Start(t testing.TB, cfg Config) *Server {
	t.Helper()
	return startNode(t, cfg, roleServer)
}

func startNode(t testing.TB, cfg Config, role nodeRole) *Server {
	t.Helper()
	Require(t)
	s := &Server{cfg: cfg, role: role, dir: t.TempDir()}
	name := "redis"
	if role == roleSentinel {
		name = "sentinel"
	}
	s.confPath = filepath.Join(s.dir, name+".conf")
	s.logPath = filepath.Join(s.dir, name+".log")
	s.stderrPath = filepath.Join(s.dir, name+".stdout")
	if cfg.UnixSocket {
		d, err := shortTempDir()
		if err != nil {
			t.Fatalf("redistest: creating the Unix socket directory: %v", err)
		}
		t.Cleanup(func() { _ = os.RemoveAll(d) })
		s.unixPath = filepath.Join(d, "redis.sock")
	}
	if cfg.TLS {
		a, err := writeTLSAssets(s.dir)
		if err != nil {
			t.Fatalf("redistest: %v", err)
		}
		s.TLS = a
	}
	t.Cleanup(s.Kill)
	if err := s.startFresh(); err != nil {
		t.Fatalf("redistest: starting %s: %v", s.binaryName(), err)
	}
	return s
}

// shortTempDir creates a directory for a Unix socket; socket paths are
// limited to about 100 bytes, which t.TempDir paths can exceed.
func shortTempDir() (string, error) {
	base := os.TempDir()
	if len(base) > 60 {
		base = "/tmp"
	}
	return os.MkdirTemp(base, "rt")
}

// startFresh picks ports, writes the configuration and launches the process,
// picking other ports when the chosen ones turn out to be taken.
func (s *Server) startFresh() error {
	var err error
	for attempt := 1; attempt <= maxStartAttempts; attempt++ {
		if s.port, err = pickPort(); err != nil {
			return err
		}
		if s.role == roleCluster {
			if s.busPort, err = pickPort(); err != nil {
				return err
			}
		}
		if err = os.WriteFile(s.confPath, []byte(s.renderConfig()), 0o600); err != nil {
			return err
		}
		err = s.launch(time.Now().Add(startTimeout))
		if !errors.Is(err, errAddrInUse) {
			return err
		}
	}
	return fmt.Errorf("gave up after %d port collisions: %w", maxStartAttempts, err)
}

func (s *Server) binaryName() string {
	if s.role == roleSentinel {
		return "redis-sentinel"
	}
	return "redis-server"
}

func (s *Server) binaryPath() string {
	b := lookupBinaries()
	if s.role == roleSentinel {
		return b.sentinel
	}
	return b.server
}

// renderConfig produces the configuration file for the current ports.
func (s *Server) renderConfig() string {
	var b strings.Builder
	line := func(format string, args ...any) {
		fmt.Fprintf(&b, format, args...)
		b.WriteByte('\n')
	}
	line("# generated by redistest")
	line("bind 127.0.0.1")
	if s.cfg.TLS {
		line("port 0")
		line("tls-port %d", s.port)
		line("tls-cert-file %s", quoteConfig(s.TLS.CertFile))
		line("tls-key-file %s", quoteConfig(s.TLS.KeyFile))
		line("tls-ca-cert-file %s", quoteConfig(s.TLS.CAFile))
		line("tls-auth-clients no")
	} else {
		line("port %d", s.port)
	}
	line("daemonize no")
	line("protected-mode no")
	line("logfile %s", quoteConfig(s.logPath))
	line("dir %s", quoteConfig(s.dir))
	if s.role != roleSentinel {
		line(`save ""`)
		line("appendonly no")
		line("enable-debug-command local")
		// Diskless full syncs start at once instead of after 5 s.
		line("repl-diskless-sync-delay 0")
	}
	if s.role == roleCluster {
		line("cluster-enabled yes")
		line("cluster-port %d", s.busPort)
		line("cluster-config-file nodes.conf")
	}
	if s.cfg.Password != "" {
		line("requirepass %s", quoteConfig(s.cfg.Password))
	}
	if s.unixPath != "" {
		line("unixsocket %s", quoteConfig(s.unixPath))
		line("unixsocketperm 700")
	}
	for _, l := range s.cfg.Extra {
		line("%s", l)
	}
	return b.String()
}

// quoteConfig quotes s as a double-quoted redis.conf argument.
func quoteConfig(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\' || c == '"':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c < 0x20 || c >= 0x7f:
			fmt.Fprintf(&b, `\x%02x`, c)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// launch runs the binary on the existing configuration file and waits until
// the new process is ready or deadline passes. On failure the process is
// killed and reaped.
func (s *Server) launch(deadline time.Time) error {
	offset := fileSize(s.logPath)
	out, err := os.OpenFile(s.stderrPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	cmd := exec.Command(s.binaryPath(), s.confPath)
	cmd.Dir = s.dir
	cmd.Stdout = out
	cmd.Stderr = out
	cmd.SysProcAttr = sysProcAttr()
	err = cmd.Start()
	_ = out.Close() // the child has its own descriptor
	if err != nil {
		return err
	}
	p := &process{cmd: cmd, done: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		close(p.done)
	}()
	s.mu.Lock()
	s.proc = p
	s.mu.Unlock()

	if err := s.waitReady(p, offset, deadline); err != nil {
		s.mu.Lock()
		if s.proc == p {
			s.proc = nil
		}
		s.mu.Unlock()
		p.kill()
		return err
	}
	return nil
}

// waitReady waits until the process p has logged that it listens (which
// proves that it, not some other process, owns the port) and answers a PING.
func (s *Server) waitReady(p *process, logOffset int64, deadline time.Time) error {
	marker := "Ready to accept connections"
	if s.role == roleSentinel {
		marker = "Sentinel ID is"
	}
	delay := time.Millisecond
	var probeErr error
	for {
		select {
		case <-p.done:
			if strings.Contains(readFrom(s.logPath, logOffset), "Address already in use") {
				return fmt.Errorf("port %d: %w", s.port, errAddrInUse)
			}
			return fmt.Errorf("%s on port %d exited during startup (%v)\n%s", s.binaryName(), s.port, p.waitErr, s.diagnostics())
		default:
		}
		if strings.Contains(readFrom(s.logPath, logOffset), marker) {
			if probeErr = s.probe(); probeErr == nil {
				return nil
			}
		}
		if time.Now().After(deadline) {
			if probeErr == nil {
				probeErr = fmt.Errorf("%q never appeared in the log", marker)
			}
			return fmt.Errorf("%s on %s not ready after %v: %v\n%s", s.binaryName(), s.Addr(), startTimeout, probeErr, s.diagnostics())
		}
		time.Sleep(delay)
		delay = min(2*delay, 20*time.Millisecond)
	}
}

// probe checks that the server answers: any reply but -LOADING will do, so
// that configurations rejecting the helpers' credentials still start.
func (s *Server) probe() error {
	c, err := s.dial(probeTimeout)
	if err != nil {
		return err
	}
	defer c.Close()
	deadline := time.Now().Add(probeTimeout)
	if s.cfg.Password != "" {
		if _, err := c.do(deadline, s.authArgs()...); err != nil {
			return err
		}
	}
	r, err := c.do(deadline, "PING")
	if err != nil {
		return err
	}
	if r.isError() && strings.HasPrefix(r.str, "LOADING") {
		return errors.New(r.str)
	}
	return nil
}

func (p *process) kill() {
	_ = p.cmd.Process.Kill()
	<-p.done
}

func (s *Server) current() *process {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.proc
}

// Kill kills the process with SIGKILL (also when it is paused) and waits
// until it has been reaped. It does nothing when the server is not running.
func (s *Server) Kill() {
	s.mu.Lock()
	p := s.proc
	s.proc = nil
	s.mu.Unlock()
	if p != nil {
		p.kill()
	}
}

// Restart starts the server again with the same port, configuration and
// data directory (so cluster nodes keep their identity and sentinels their
// state), killing it first if it is still running. While the port is briefly
// unavailable it keeps retrying, for up to 10 s. Nothing is persisted
// (save "" and appendonly no), so the server comes back without data; the
// process started by Restart is still killed by the cleanup of the test that
// called Start.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	s.Kill()
	deadline := time.Now().Add(startTimeout)
	for {
		err := s.launch(deadline)
		if err == nil {
			return
		}
		if !errors.Is(err, errAddrInUse) || time.Now().After(deadline) {
			t.Fatalf("redistest: restarting %s on %s: %v", s.binaryName(), s.Addr(), err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Pause stops the process with SIGSTOP: it keeps its sockets, the kernel
// still accepts connections for it, but nothing is answered until
// [Server.Resume].
func (s *Server) Pause() {
	if p := s.current(); p != nil {
		_ = stopProcess(p.cmd.Process)
	}
}

// Resume continues a process stopped by [Server.Pause] (SIGCONT).
func (s *Server) Resume() {
	if p := s.current(); p != nil {
		_ = resumeProcess(p.cmd.Process)
	}
}

// Running reports whether the process is running (possibly paused).
func (s *Server) Running() bool { return s.current() != nil }

// Pid returns the process id of the running process, or 0.
func (s *Server) Pid() int {
	if p := s.current(); p != nil {
		return p.cmd.Process.Pid
	}
	return 0
}

// Addr returns the TCP address, "127.0.0.1:port". For a TLS server this is
// the TLS port.
func (s *Server) Addr() string {
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port))
}

// Port returns the TCP port (the TLS port for a TLS server).
func (s *Server) Port() int { return s.port }

// UnixPath returns the Unix socket path, or "" without Config.UnixSocket.
func (s *Server) UnixPath() string { return s.unixPath }

// Password returns Config.Password.
func (s *Server) Password() string { return s.cfg.Password }

// Dir returns the server's working directory (configuration, log, data).
func (s *Server) Dir() string { return s.dir }

// ClientTLSConfig returns TLS.ClientTLSConfig(), or nil for a server without
// TLS.
func (s *Server) ClientTLSConfig() *tls.Config {
	if s.TLS == nil {
		return nil
	}
	return s.TLS.ClientTLSConfig()
}

// dial connects to the server (with TLS when configured), without
// authenticating.
func (s *Server) dial(timeout time.Duration) (*respConn, error) {
	d := &net.Dialer{Timeout: timeout}
	var c net.Conn
	var err error
	if s.TLS != nil {
		c, err = tls.DialWithDialer(d, "tcp", s.Addr(), s.TLS.ClientTLSConfig())
	} else {
		c, err = d.Dial("tcp", s.Addr())
	}
	if err != nil {
		return nil, err
	}
	return newRESPConn(c), nil
}

func (s *Server) authArgs() []string {
	if s.cfg.Username != "" {
		return []string{"AUTH", s.cfg.Username, s.cfg.Password}
	}
	return []string{"AUTH", s.cfg.Password}
}

// command runs one command on a fresh, authenticated connection.
func (s *Server) command(timeout time.Duration, args ...string) (reply, error) {
	if len(args) == 0 {
		return reply{}, errors.New("no command given")
	}
	deadline := time.Now().Add(timeout)
	c, err := s.dial(timeout)
	if err != nil {
		return reply{}, err
	}
	defer c.Close()
	if s.cfg.Password != "" {
		r, err := c.do(deadline, s.authArgs()...)
		if err != nil {
			return reply{}, err
		}
		if r.isError() {
			return reply{}, fmt.Errorf("AUTH: %s", r.str)
		}
	}
	return c.do(deadline, args...)
}

// Do sends one command over a fresh TCP connection (TLS when configured,
// authenticated when a password is configured) and returns the reply in a
// readable form: simple and bulk strings as they are, integers in decimal,
// errors as "(error) <message>", nil as "(nil)", an empty array as
// "(empty array)" and the elements of any other array on separate lines
// (nested arrays flattened). So a counter reads back as "3" whether it comes
// from GET or INCR.
//
// An error reply is returned, not fatal. Do fails the test on network,
// protocol and AUTH errors, or when no reply arrives within 10 s.
func (s *Server) Do(t testing.TB, args ...string) string {
	t.Helper()
	r, err := s.TryDo(args...)
	if err != nil {
		t.Fatalf("redistest: %s %q: %v", s.Addr(), args, err)
	}
	return r
}

// TryDo is [Server.Do] returning network, protocol and AUTH errors instead
// of failing a test; it can be used from any goroutine. Error replies are
// returned as "(error) <message>" with a nil error.
func (s *Server) TryDo(args ...string) (string, error) {
	r, err := s.command(doTimeout, args...)
	if err != nil {
		return "", err
	}
	return r.String(), nil
}

// Ping sends PING (after AUTH when a password is configured) over a fresh
// connection and returns an error unless PONG arrives within timeout, which
// covers connecting too.
func (s *Server) Ping(timeout time.Duration) error {
	r, err := s.command(timeout, "PING")
	if err != nil {
		return err
	}
	if r.kind != kindSimple || r.str != "PONG" {
		return fmt.Errorf("PING replied %q", r.String())
	}
	return nil
}

// LogTail returns the last n lines of the server's log file.
func (s *Server) LogTail(n int) string {
	data, err := os.ReadFile(s.logPath)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	return lastLines(string(data), n)
}

func lastLines(text string, n int) string {
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	if n < len(lines) {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// diagnostics describes the process's output for failure messages.
func (s *Server) diagnostics() string {
	var b strings.Builder
	fmt.Fprintf(&b, "--- last lines of %s ---\n%s", s.logPath, s.LogTail(25))
	if data, err := os.ReadFile(s.stderrPath); err == nil && len(strings.TrimSpace(string(data))) > 0 {
		fmt.Fprintf(&b, "\n--- last lines of %s ---\n%s", s.stderrPath, lastLines(string(data), 10))
	}
	return b.String()
}

func fileSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// readFrom returns the contents of path from offset on ("" on errors).
func readFrom(path string, offset int64) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return ""
	}
	data, _ := io.ReadAll(f)
	return string(data)
}
