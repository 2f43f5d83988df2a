package client_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/respire-go/respire/client"
)

// holdFake is a loopback RESP2 server that answers every command at once except those hold
// selects, which it never answers; it reports each held command on held. Its goroutines end
// when the client closes its connections and the test ends.
func holdFake(t *testing.T, hold func(args []string) bool, reply func(args []string) string, held chan<- string) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			nc, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, nc)
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := bufio.NewReader(nc)
				for {
					args, err := readArgs(r)
					if err != nil {
						return
					}
					if hold(args) {
						held <- strings.ToUpper(strings.Join(args, " "))
						continue
					}
					if _, err := io.WriteString(nc, reply(args)); err != nil {
						return
					}
				}
			}()
		}
	}()
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return l.Addr().(*net.TCPAddr).Port
}

// lateWriter fails the test for every log line written once after is set.
type lateWriter struct {
	t     *testing.T
	after *atomic.Bool
}

func (w lateWriter) Write(p []byte) (int, error) {
	if w.after.Load() {
		w.t.Errorf("logged after Close returned: %s", p)
	}
	return len(p), nil
}

// TestSentinelCloseDuringDiscovery: Close while the discovery runs, its query unanswered
// (SENTINEL MASTER at a Sentinel, or the ROLE check of the primary it named), returns at once
// (the discovery is cancelled, not waited for), fails the command that waited for a primary
// with ErrClosed, and leaves nothing behind: no goroutine, no log line and no state change
// after Close returned, even past the query timeout (the command timeout, 300 ms here).
func TestSentinelCloseDuringDiscovery(t *testing.T) {
	for _, stage := range []string{"SENTINEL", "ROLE"} {
		t.Run(strings.ToLower(stage), func(t *testing.T) {
			checkNoLeaks(t)
			held := make(chan string, 8)
			primary := holdFake(t, func(a []string) bool { return stage == "ROLE" && strings.EqualFold(a[0], "ROLE") },
				func(a []string) string {
					if strings.EqualFold(a[0], "ROLE") {
						return "*3\r\n" + bulk("master") + ":0\r\n*0\r\n"
					}
					return "+OK\r\n"
				}, held)
			sentinel := holdFake(t, func(a []string) bool { return stage == "SENTINEL" && strings.EqualFold(a[0], "SENTINEL") },
				func(a []string) string {
					switch {
					case strings.EqualFold(a[0], "SENTINEL") && len(a) > 1 && strings.EqualFold(a[1], "MASTER"):
						kv := []string{"name", "mymaster", "ip", "127.0.0.1", "port", strconv.Itoa(primary), "flags", "master", "config-epoch", "1"}
						out := "*" + strconv.Itoa(len(kv)) + "\r\n"
						for _, s := range kv {
							out += bulk(s)
						}
						return out
					case strings.EqualFold(a[0], "SENTINEL"):
						return "*0\r\n"
					}
					return "+OK\r\n"
				}, held)
			var after atomic.Bool
			c, err := client.Create(client.Options{Endpoints: []client.Endpoint{{Host: "127.0.0.1", Port: sentinel}},
				SentinelPrimaryName: "mymaster", Protocol: client.ProtocolRESP2, CommandTimeout: 300 * time.Millisecond,
				Logger: slog.New(slog.NewTextHandler(lateWriter{t, &after}, &slog.HandlerOptions{Level: slog.LevelDebug})),
				OnConnectionStateChange: func(ch client.ConnectionStateChange) {
					if after.Load() {
						t.Errorf("state change after Close returned: %+v", ch)
					}
				}})
			if err != nil {
				t.Fatal(err)
			}
			res := make(chan error, 1)
			go func() { _, err := c.Do(context.Background(), "GET", "k"); res <- err }()
			select {
			case q := <-held:
				if !strings.HasPrefix(q, stage) {
					t.Fatalf("held %q, want %s", q, stage)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("the discovery never sent %s", stage)
			}
			start := time.Now()
			must(t, c.Close())
			after.Store(true)
			if d := time.Since(start); d > 2*time.Second {
				t.Fatalf("Close took %v with a discovery query in flight", d)
			}
			select {
			case err := <-res:
				if !errors.Is(err, client.ErrClosed) {
					t.Fatalf("the command waiting for the primary: %v, want ErrClosed", err)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("the command waiting for the primary never returned")
			}
			time.Sleep(600 * time.Millisecond) // past the query timeout: nothing may fire
		})
	}
}
