package redistest

import (
	"bufio"
	"errors"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestStartPingKillRestart(t *testing.T) {
	start := time.Now()
	srv := Start(t, Config{})
	t.Logf("standalone server up in %v", time.Since(start))

	if got := srv.Do(t, "PING"); got != "PONG" {
		t.Fatalf("PING = %q", got)
	}
	if got, want := srv.Addr(), "127.0.0.1:"; !strings.HasPrefix(got, want) || srv.Port() == 0 {
		t.Fatalf("Addr() = %q, Port() = %d", got, srv.Port())
	}
	if got := srv.Do(t, "INCR", "counter"); got != "1" {
		t.Fatalf("INCR = %q", got)
	}
	if got := srv.Do(t, "GET", "counter"); got != "1" {
		t.Fatalf("GET = %q", got)
	}
	if got := srv.Do(t, "GET", "missing"); got != "(nil)" {
		t.Fatalf("GET missing = %q", got)
	}
	if got := srv.Do(t, "NOSUCHCOMMAND"); !strings.HasPrefix(got, "(error) ERR unknown command") {
		t.Fatalf("unknown command = %q", got)
	}
	if got := srv.Do(t, "CONFIG", "GET", "bind"); got != "bind\n127.0.0.1" {
		t.Fatalf("CONFIG GET bind = %q", got)
	}

	port, pid := srv.Port(), srv.Pid()
	srv.Kill()
	if srv.Running() || srv.Pid() != 0 {
		t.Fatal("server still running after Kill")
	}
	if processAlive(pid) {
		t.Fatalf("pid %d still exists after Kill", pid)
	}
	if err := srv.Ping(time.Second); err == nil {
		t.Fatal("PING succeeded after Kill")
	}
	srv.Kill() // idempotent

	start = time.Now()
	srv.Restart(t)
	t.Logf("restart took %v", time.Since(start))
	if srv.Port() != port {
		t.Fatalf("port changed from %d to %d", port, srv.Port())
	}
	if srv.Pid() == pid || srv.Pid() == 0 {
		t.Fatalf("pid after restart = %d (before %d)", srv.Pid(), pid)
	}
	if got := srv.Do(t, "PING"); got != "PONG" {
		t.Fatalf("PING after restart = %q", got)
	}
	// Nothing is persisted.
	if got := srv.Do(t, "GET", "counter"); got != "(nil)" {
		t.Fatalf("GET after restart = %q", got)
	}
	// Restart of a running server replaces the process.
	pid = srv.Pid()
	srv.Restart(t)
	if srv.Pid() == pid || processAlive(pid) {
		t.Fatalf("Restart of a running server kept pid %d", pid)
	}
	if tail := srv.LogTail(3); !strings.Contains(tail, "Ready to accept connections") {
		t.Fatalf("LogTail(3) = %q", tail)
	}
}

func TestCleanupKillsProcess(t *testing.T) {
	var pids []int
	t.Run("inner", func(t *testing.T) {
		a := Start(t, Config{})
		b := Start(t, Config{})
		b.Pause() // a paused process must be killed too
		pids = append(pids, a.Pid(), b.Pid())
	})
	if len(pids) != 2 {
		t.Fatalf("inner test did not run")
	}
	for _, pid := range pids {
		if pid == 0 || processAlive(pid) {
			t.Errorf("pid %d alive after the test's cleanup", pid)
		}
	}
}

func TestPassword(t *testing.T) {
	srv := Start(t, Config{Password: `s3cret "quoted" \ pass`})
	if got := srv.Do(t, "SET", "k", "v"); got != "OK" {
		t.Fatalf("SET = %q", got)
	}
	// A connection without AUTH is refused.
	c, err := net.DialTimeout("tcp", srv.Addr(), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	rc := newRESPConn(c)
	r, err := rc.do(time.Now().Add(5*time.Second), "GET", "k")
	if err != nil {
		t.Fatal(err)
	}
	if !r.isError() || !strings.HasPrefix(r.str, "NOAUTH") {
		t.Fatalf("unauthenticated GET = %q", r.String())
	}
	r, err = rc.do(time.Now().Add(5*time.Second), "AUTH", "wrong")
	if err != nil {
		t.Fatal(err)
	}
	if !r.isError() {
		t.Fatalf("AUTH wrong = %q", r.String())
	}
}

func TestACLUserAndExtraLines(t *testing.T) {
	srv := Start(t, Config{
		Username: "alice",
		Password: "alicepw",
		Extra: []string{
			"user default off",
			"user alice on >alicepw ~* &* +@all",
			`rename-command HELLO ""`,
		},
	})
	if got := srv.Do(t, "ACL", "WHOAMI"); got != "alice" {
		t.Fatalf("ACL WHOAMI = %q", got)
	}
	if got := srv.Do(t, "HELLO", "3"); !strings.HasPrefix(got, "(error) ERR unknown command") {
		t.Fatalf("HELLO after rename-command = %q", got)
	}
}

func TestUnixSocket(t *testing.T) {
	srv := Start(t, Config{UnixSocket: true})
	path := srv.UnixPath()
	if path == "" {
		t.Fatal("UnixPath() is empty")
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode()&os.ModeSocket == 0 || fi.Mode().Perm() != 0o700 {
		t.Fatalf("%s: mode %v", path, fi.Mode())
	}
	c, err := net.DialTimeout("unix", path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r, err := newRESPConn(c).do(time.Now().Add(5*time.Second), "PING")
	if err != nil || r.String() != "PONG" {
		t.Fatalf("PING over %s = %q, %v", path, r.String(), err)
	}
	// The socket comes back after a restart.
	c.Close()
	srv.Kill()
	srv.Restart(t)
	c2, err := net.DialTimeout("unix", path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	c2.Close()
}

func TestPauseResume(t *testing.T) {
	srv := Start(t, Config{})
	srv.Pause()
	err := srv.Ping(300 * time.Millisecond)
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("PING of a paused server: %v, want a timeout", err)
	}
	// A connection made while paused is answered after Resume.
	c, err := net.DialTimeout("tcp", srv.Addr(), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		t.Fatal(err)
	}
	srv.Resume()
	if err := c.SetDeadline(time.Now().Add(5 * time.Second)); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil || line != "+PONG\r\n" {
		t.Fatalf("pending PING after Resume = %q, %v", line, err)
	}
	if err := srv.Ping(time.Second); err != nil {
		t.Fatalf("PING after Resume: %v", err)
	}
}

func TestStartConcurrently(t *testing.T) {
	const n = 6
	start := time.Now()
	t.Run("group", func(t *testing.T) {
		for range n {
			t.Run("", func(t *testing.T) {
				t.Parallel()
				srv := Start(t, Config{})
				if got := srv.Do(t, "PING"); got != "PONG" {
					t.Errorf("PING = %q", got)
				}
			})
		}
	})
	t.Logf("%d concurrent starts, PINGs and kills: %v", n, time.Since(start))
}

func TestStartRetriesOnPortCollision(t *testing.T) {
	// Hand out a port that is taken first: Start must notice the bind failure
	// and move on to another port.
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	busyPort := busy.Addr().(*net.TCPAddr).Port
	calls := 0
	pickPort = func() (int, error) {
		calls++
		if calls == 1 {
			return busyPort, nil
		}
		return freePort()
	}
	defer func() { pickPort = freePort }()

	srv := Start(t, Config{})
	if srv.Port() == busyPort || calls != 2 {
		t.Fatalf("port %d after %d picks; the busy port was %d", srv.Port(), calls, busyPort)
	}
	if got := srv.Do(t, "PING"); got != "PONG" {
		t.Fatalf("PING = %q", got)
	}
}

func TestRestartWaitsForBusyPort(t *testing.T) {
	srv := Start(t, Config{})
	srv.Kill()
	// Something else holds the port for a moment; Restart keeps trying.
	busy, err := net.Listen("tcp", srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	released := make(chan struct{})
	go func() {
		defer close(released)
		time.Sleep(300 * time.Millisecond)
		busy.Close()
	}()
	start := time.Now()
	srv.Restart(t)
	<-released
	if d := time.Since(start); d < 300*time.Millisecond {
		t.Fatalf("Restart returned after %v, before the port was released", d)
	}
	if got := srv.Do(t, "PING"); got != "PONG" {
		t.Fatalf("PING = %q", got)
	}
}

// processAlive reports whether pid exists (zombies included).
func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
