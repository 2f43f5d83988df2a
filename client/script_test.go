package client_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/respire-go/respire/client"
	"github.com/respire-go/respire/netio/redistest"
	"github.com/respire-go/respire/netio/resp"
)

// scriptCalls returns how many times the server ran cmd, from INFO commandstats.
func scriptCalls(t *testing.T, srv *redistest.Server, cmd string) int64 {
	t.Helper()
	return commandCalls(t, srv)[cmd]
}

// resetScripts empties the server's script cache and its command statistics.
func resetScripts(t *testing.T, srv *redistest.Server) {
	t.Helper()
	srv.Do(t, "SCRIPT", "FLUSH")
	srv.Do(t, "CONFIG", "RESETSTAT")
}

const counterScript = "return {KEYS[1], ARGV[1], redis.call('INCR', KEYS[1])}"

// TestScriptLoadsOnce: the first run gets NOSCRIPT and loads the script with EVAL; every later
// run is one EVALSHA. After SCRIPT FLUSH, 32 concurrent callers send the body once between
// them. Read-only scripts use the _RO forms. Both protocols, through a prefixed view.
func TestScriptLoadsOnce(t *testing.T) {
	redistest.Require(t)
	srv := redistest.Start(t, redistest.Config{})
	for _, proto := range []client.Protocol{client.ProtocolRESP2, client.ProtocolRESP3} {
		t.Run(proto.String(), func(t *testing.T) {
			ctx := ctxT(t)
			c, err := client.Connect(ctx, client.Options{Endpoints: []client.Endpoint{endpointOf(srv)}, Protocol: proto, Connections: 4})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			resetScripts(t, srv)
			s := client.NewScript(counterScript)
			v := c.WithKeyPrefix(proto.String() + ":")
			for i := 1; i <= 5; i++ {
				got, err := v.RunScript(ctx, s, []string{"n"}, "tag")
				if err != nil {
					t.Fatal(err)
				}
				parts, _ := got.AsValues()
				if len(parts) != 3 {
					t.Fatalf("reply %v", got)
				}
				key, _ := parts[0].AsString()
				n, _ := parts[2].AsInt64()
				if key != proto.String()+":n" || n != int64(i) {
					t.Fatalf("run %d: key %q, count %d", i, key, n)
				}
			}
			if e, sha := scriptCalls(t, srv, "eval"), scriptCalls(t, srv, "evalsha"); e != 1 || sha != 5 {
				t.Fatalf("EVAL ran %d times and EVALSHA %d, want 1 and 5 (the first got NOSCRIPT)", e, sha)
			}

			// A burst after the cache was flushed: one EVAL in all.
			resetScripts(t, srv)
			var wg sync.WaitGroup
			errs := make(chan error, 32)
			for range 32 {
				wg.Go(func() {
					if _, err := v.RunScript(ctx, s, []string{"burst"}, "x"); err != nil {
						errs <- err
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
			if e := scriptCalls(t, srv, "eval"); e != 1 {
				t.Fatalf("32 concurrent callers sent EVAL %d times, want 1", e)
			}
			if n, _, _ := v.Get(ctx, "burst"); n != "32" {
				t.Fatalf("the script ran %s times, want 32", n)
			}

			// Read-only scripts.
			resetScripts(t, srv)
			ro := client.NewScript("return redis.call('GET', KEYS[1])")
			for range 2 {
				got, err := v.RunScriptRO(ctx, ro, []string{"n"})
				if s, _ := got.AsString(); err != nil || s != "5" {
					t.Fatalf("RunScriptRO: %v %v", got, err)
				}
			}
			if e, sha := scriptCalls(t, srv, "eval_ro"), scriptCalls(t, srv, "evalsha_ro"); e != 1 || sha != 2 {
				t.Fatalf("EVAL_RO %d, EVALSHA_RO %d, want 1 and 2", e, sha)
			}
			if _, err := v.RunScriptRO(ctx, s, []string{"n"}, "tag"); err == nil {
				t.Fatal("a writing script ran read-only")
			}
			// A script's own error is a *ServerError.
			bad := client.NewScript("return redis.error_reply('MINE no')")
			var se *client.ServerError
			if _, err := v.RunScript(ctx, bad, nil); !errors.As(err, &se) || se.Code != "MINE" {
				t.Fatalf("script error: %v", err)
			}
		})
	}
}

// TestScriptInBatches: in each run of a batch, the first entry of each script is an EVAL that
// loads it and the later ones are EVALSHA, pipelined and atomic, so a batch needs no earlier
// load and no second round trip.
func TestScriptInBatches(t *testing.T) {
	redistest.Require(t)
	srv := redistest.Start(t, redistest.Config{})
	for _, proto := range []client.Protocol{client.ProtocolRESP2, client.ProtocolRESP3} {
		t.Run(proto.String(), func(t *testing.T) {
			ctx := ctxT(t)
			c, err := client.Connect(ctx, client.Options{Endpoints: []client.Endpoint{endpointOf(srv)}, Protocol: proto, KeyPrefix: proto.String() + ":"})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			resetScripts(t, srv)
			incr := client.NewScript(counterScript)
			echo := client.NewScript("return ARGV[1]")
			var b client.Batch
			f1 := b.RunScript(incr, []string{"bn"}, "a")
			f2 := b.RunScript(incr, []string{"bn"}, "b")
			f3 := b.RunScriptRO(echo, nil, "hello")
			b.Incr("bn")
			f4 := b.RunScript(incr, []string{"bn"}, "c")
			must(t, c.Pipeline(ctx, &b))
			count := func(f *client.Future[resp.Value]) int64 {
				v, err := f.Result()
				if err != nil {
					t.Fatal(err)
				}
				parts, _ := v.AsValues()
				n, _ := parts[2].AsInt64()
				return n
			}
			if a, b2, d := count(f1), count(f2), count(f4); a != 1 || b2 != 2 || d != 4 {
				t.Fatalf("counts %d %d %d, want 1 2 4 (in queue order)", a, b2, d)
			}
			if v, err := f3.Result(); err != nil {
				t.Fatal(err)
			} else if s, _ := v.AsString(); s != "hello" {
				t.Fatalf("echo %v", v)
			}
			if e, ero, sha := scriptCalls(t, srv, "eval"), scriptCalls(t, srv, "eval_ro"), scriptCalls(t, srv, "evalsha"); e != 1 || ero != 1 || sha != 2 {
				t.Fatalf("EVAL %d, EVAL_RO %d, EVALSHA %d; want 1, 1, 2", e, ero, sha)
			}
			// Atomic, after a flush: the batch loads what it needs again.
			resetScripts(t, srv)
			f5 := b.RunScript(incr, []string{"bn"}, "d")
			f6 := b.RunScript(incr, []string{"bn"}, "e")
			must(t, c.Atomic(ctx, &b))
			if a, b2 := count(f5), count(f6); a != 5 || b2 != 6 {
				t.Fatalf("atomic counts %d %d", a, b2)
			}
			if e, sha := scriptCalls(t, srv, "eval"), scriptCalls(t, srv, "evalsha"); e != 1 || sha != 1 {
				t.Fatalf("atomic: EVAL %d, EVALSHA %d; want 1 and 1", e, sha)
			}
		})
	}
}

// scriptFake is a loopback RESP2 server that answers the handshake and hands EVALSHA and EVAL
// to its script function, which may write a reply or close the connection. It records every
// script command it receives.
type scriptFake struct {
	l      net.Listener
	script func(name string) (reply string, drop bool)
	mu     sync.Mutex
	seen   []string
	conns  []net.Conn
	wg     sync.WaitGroup
}

func startScriptFake(t *testing.T, script func(name string) (string, bool)) *scriptFake {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &scriptFake{l: l, script: script}
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		for {
			nc, err := l.Accept()
			if err != nil {
				return
			}
			f.mu.Lock()
			f.conns = append(f.conns, nc)
			f.mu.Unlock()
			f.wg.Add(1)
			go f.serve(nc)
		}
	}()
	t.Cleanup(func() {
		_ = l.Close()
		f.mu.Lock()
		for _, nc := range f.conns {
			_ = nc.Close()
		}
		f.mu.Unlock()
		f.wg.Wait()
	})
	return f
}

func (f *scriptFake) serve(nc net.Conn) {
	defer f.wg.Done()
	defer nc.Close()
	rd := resp.NewReader(bufio.NewReader(nc), nil)
	var args [][]byte
	for {
		if err := rd.ReadCommand(&args); err != nil || len(args) == 0 {
			return
		}
		reply := "+OK\r\n"
		switch name := strings.ToUpper(string(args[0])); name {
		case "PING":
			reply = "+PONG\r\n"
		case "HELLO":
			reply = "-ERR unknown command 'HELLO'\r\n"
		case "EVALSHA", "EVAL", "EVALSHA_RO", "EVAL_RO":
			f.mu.Lock()
			f.seen = append(f.seen, name)
			f.mu.Unlock()
			var drop bool
			if reply, drop = f.script(name); drop {
				return // the reply is lost: the command may have run
			}
		}
		if _, err := nc.Write([]byte(reply)); err != nil {
			return
		}
	}
}

func (f *scriptFake) commands() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.seen...)
}

func (f *scriptFake) endpoint() client.Endpoint {
	return client.Endpoint{Host: "127.0.0.1", Port: f.l.Addr().(*net.TCPAddr).Port}
}

// TestScriptNeverRunsTwiceAfterALostReply: when the reply to EVALSHA, or to the EVAL that
// follows a NOSCRIPT, is lost, RunScript returns an unknown outcome and sends nothing more,
// while the client stays usable.
func TestScriptNeverRunsTwiceAfterALostReply(t *testing.T) {
	cases := []struct {
		name   string
		script func(name string) (string, bool)
		want   []string
	}{
		{"EVALSHA lost", func(string) (string, bool) { return "", true }, []string{"EVALSHA"}},
		{"EVAL lost after NOSCRIPT", func(name string) (string, bool) {
			if name == "EVALSHA" {
				return "-NOSCRIPT No matching script. Please use EVAL.\r\n", false
			}
			return "", true
		}, []string{"EVALSHA", "EVAL"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := startScriptFake(t, tc.script)
			ctx := ctxT(t)
			c, err := client.Connect(ctx, client.Options{Endpoints: []client.Endpoint{f.endpoint()}, Protocol: client.ProtocolRESP2})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			s := client.NewScript(counterScript)
			_, err = c.RunScript(ctx, s, []string{"k"}, "v")
			var uo *client.UnknownOutcomeError
			if !errors.Is(err, client.ErrUnknownOutcome) || !errors.As(err, &uo) {
				t.Fatalf("want an unknown outcome, got %v", err)
			}
			// The client recovers, and nothing of the script is sent again.
			waitPing(t, ctx, c)
			time.Sleep(50 * time.Millisecond)
			if got := f.commands(); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("the server received %q, want %q", got, tc.want)
			}
		})
	}
}

// TestScriptWaiterGivesUpWithItsContext: a caller waiting for another caller's load returns its
// context's error (its EVALSHA got NOSCRIPT: nothing of it ran) and sends nothing more.
func TestScriptWaiterGivesUpWithItsContext(t *testing.T) {
	release := make(chan struct{})
	var once sync.Once
	entered := make(chan struct{})
	f := startScriptFake(t, func(name string) (string, bool) {
		if name == "EVALSHA" {
			return "-NOSCRIPT No matching script.\r\n", false
		}
		once.Do(func() { close(entered) })
		<-release // the leader's EVAL hangs until the test lets it go
		return ":1\r\n", false
	})
	ctx := ctxT(t)
	c, err := client.Connect(ctx, client.Options{Endpoints: []client.Endpoint{f.endpoint()}, Protocol: client.ProtocolRESP2, Connections: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s := client.NewScript("return 1")
	leader := make(chan error, 1)
	go func() {
		_, err := c.RunScript(ctx, s, nil)
		leader <- err
	}()
	<-entered
	wctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if _, err := c.RunScript(wctx, s, nil); !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, client.ErrUnknownOutcome) {
		t.Fatalf("the waiter: %v", err)
	}
	close(release)
	if err := <-leader; err != nil {
		t.Fatalf("the leader: %v", err)
	}
	if got := f.commands(); !reflect.DeepEqual(got, []string{"EVALSHA", "EVAL", "EVALSHA"}) {
		t.Fatalf("the server received %q", got)
	}
}

// TestScriptPrintsItsDigestOnly: every way of printing a Script shows its digest, never its
// source (which may embed data).
func TestScriptPrintsItsDigestOnly(t *testing.T) {
	s := client.NewScript("return 'source-text-4711'")
	if len(s.SHA1()) != 40 {
		t.Fatalf("SHA1 %q", s.SHA1())
	}
	var logged strings.Builder
	slog.New(slog.NewTextHandler(&logged, nil)).Info("run", "script", s)
	for _, out := range []string{fmt.Sprint(s), fmt.Sprintf("%+v", s), fmt.Sprintf("%#v", s), fmt.Sprintf("%q", s), logged.String()} {
		if strings.Contains(out, "source-text") || !strings.Contains(out, s.SHA1()) {
			t.Fatalf("printed %q", out)
		}
	}
}
