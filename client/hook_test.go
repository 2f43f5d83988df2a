package client_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/respire-go/respire/client"
	"github.com/respire-go/respire/netio/redistest"
)

// hookClient connects a client with hooks to a fresh server, and a plain client to the same
// server to check what really reached it.
func hookClient(t *testing.T, hooks ...client.Hook) (c, plain *client.Client) {
	t.Helper()
	redistest.Require(t)
	srv := redistest.Start(t, redistest.Config{})
	ep := []client.Endpoint{{Host: "127.0.0.1", Port: srv.Port()}}
	c, err := client.Connect(context.Background(), client.Options{Endpoints: ep, Connections: 1, Hooks: hooks})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	plain, err = client.Connect(context.Background(), client.Options{Endpoints: ep, Connections: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = plain.Close() })
	return c, plain
}

// counter reads an INCR counter through the plain client.
func counter(t *testing.T, plain *client.Client, key string) string {
	t.Helper()
	v, _, err := plain.Get(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestHookOrderAndInfo: hooks run first-outermost, around typed commands, raw commands on a
// Client and on a DedicatedConn, and see names, counts and endpoints but no arguments.
func TestHookOrderAndInfo(t *testing.T) {
	var trail []string
	mark := func(name string) client.Hook {
		return client.Hook{Command: func(next client.CommandFunc) client.CommandFunc {
			return func(ctx context.Context, cmd *client.CommandInfo) error {
				trail = append(trail, name+">"+cmd.Name())
				err := next(ctx, cmd)
				trail = append(trail, "<"+name)
				if cmd.Args() != nil {
					t.Errorf("%s: arguments visible without ObserveArguments", cmd.Name())
				}
				if s := fmt.Sprint(cmd) + fmt.Sprintf("%#v", cmd); strings.Contains(s, "hookmark") {
					t.Errorf("printing the CommandInfo shows arguments: %s", s)
				}
				return err
			}
		}}
	}
	c, _ := hookClient(t, mark("a"), mark("b"))
	ctx := context.Background()
	if _, err := c.Incr(ctx, "hookmark:n"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Do(ctx, "SET", "hookmark:k", "v"); err != nil {
		t.Fatal(err)
	}
	err := c.WithDedicated(ctx, func(d *client.DedicatedConn) error {
		_, err := d.Do(ctx, "GET", "hookmark:k")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	want := "a>INCR b>INCR <b <a a>SET b>SET <b <a a>GET b>GET <b <a"
	if got := strings.Join(trail, " "); got != want {
		t.Errorf("trail %q, want %q", got, want)
	}
}

// TestHookCannotResend: a hook that calls next twice gets ErrHookReplay from the second call,
// and the server ran the command once.
func TestHookCannotResend(t *testing.T) {
	var second error
	c, plain := hookClient(t, client.Hook{Command: func(next client.CommandFunc) client.CommandFunc {
		return func(ctx context.Context, cmd *client.CommandInfo) error {
			err := next(ctx, cmd)
			second = next(ctx, cmd)
			return err
		}
	}})
	n, err := c.Incr(context.Background(), "replay:n")
	if err != nil || n != 1 {
		t.Fatalf("INCR = %d, %v", n, err)
	}
	if !errors.Is(second, client.ErrHookReplay) {
		t.Fatalf("second next returned %v, want ErrHookReplay", second)
	}
	if v := counter(t, plain, "replay:n"); v != "1" {
		t.Fatalf("the server ran INCR %s times, want once", v)
	}
}

// TestHookStops: a hook that returns its own error without calling next (a circuit breaker)
// stops the command before anything is sent; one that returns nil without calling next gets
// ErrHookDropped to the caller.
func TestHookStops(t *testing.T) {
	open := errors.New("breaker open")
	var mode atomic.Int32
	c, plain := hookClient(t, client.Hook{Command: func(next client.CommandFunc) client.CommandFunc {
		return func(ctx context.Context, cmd *client.CommandInfo) error {
			switch mode.Load() {
			case 1:
				return open
			case 2:
				return nil
			}
			return next(ctx, cmd)
		}
	}})
	ctx := context.Background()
	mode.Store(1)
	if _, err := c.Incr(ctx, "stop:n"); !errors.Is(err, open) {
		t.Fatalf("INCR with the breaker open: %v", err)
	}
	mode.Store(2)
	if _, err := c.Do(ctx, "INCR", "stop:n"); !errors.Is(err, client.ErrHookDropped) {
		t.Fatalf("INCR dropped by a hook: %v, want ErrHookDropped", err)
	}
	if v := counter(t, plain, "stop:n"); v != "" {
		t.Fatalf("a stopped INCR reached the server (counter %q)", v)
	}
	mode.Store(0)
	if n, err := c.Incr(ctx, "stop:n"); n != 1 || err != nil {
		t.Fatalf("INCR after the breaker closed: %d, %v", n, err)
	}
}

// TestHookCannotHideFailure: a hook that swallows next's error does not turn the failure into
// a success: the caller gets the command's error, and one that replaces a reply with its own
// error gets that error through.
func TestHookCannotHideFailure(t *testing.T) {
	var replace atomic.Bool
	mine := errors.New("rejected by the hook")
	c, _ := hookClient(t, client.Hook{Command: func(next client.CommandFunc) client.CommandFunc {
		return func(ctx context.Context, cmd *client.CommandInfo) error {
			_ = next(ctx, cmd)
			if replace.Load() {
				return mine
			}
			return nil
		}
	}})
	ctx := context.Background()
	if err := c.Set(ctx, "hide:k", "v"); err != nil {
		t.Fatal(err)
	}
	var se *client.ServerError
	if _, err := c.LPush(ctx, "hide:k", "x"); !errors.As(err, &se) || se.Code != "WRONGTYPE" {
		t.Fatalf("LPUSH on a string through a swallowing hook: %v, want the WRONGTYPE *ServerError", err)
	}
	replace.Store(true)
	if _, _, err := c.Get(ctx, "hide:k"); !errors.Is(err, mine) {
		t.Fatalf("GET through a replacing hook: %v", err)
	}
}

// TestHookBatch: a batch hook sees the commands' names before the run and their outcomes after
// it; commands of a batch do not go through the command hook.
func TestHookBatch(t *testing.T) {
	var seen []string
	commands := 0
	c, _ := hookClient(t, client.Hook{
		Command: func(next client.CommandFunc) client.CommandFunc {
			return func(ctx context.Context, cmd *client.CommandInfo) error { commands++; return next(ctx, cmd) }
		},
		Batch: func(next client.BatchFunc) client.BatchFunc {
			return func(ctx context.Context, b *client.BatchInfo) error {
				err := next(ctx, b)
				for i := 0; i < b.Len(); i++ {
					seen = append(seen, fmt.Sprintf("%v:%s:%v", b.Transaction(), b.Name(i), b.Err(i) != nil))
				}
				if again := next(ctx, b); !errors.Is(again, client.ErrHookReplay) {
					t.Errorf("second run of the batch: %v", again)
				}
				return err
			}
		}})
	ctx := context.Background()
	var b client.Batch
	b.Set("batch:k", "v")
	b.LPush("batch:k", "x")
	if err := c.Pipeline(ctx, &b); err == nil {
		t.Fatal("the pipeline's LPUSH succeeded")
	}
	incr := b.Incr("batch:n")
	if err := c.Atomic(ctx, &b); err != nil {
		t.Fatal(err)
	}
	if n, _ := incr.Result(); n != 1 {
		t.Fatalf("the transaction's INCR ran to %d, want 1", n)
	}
	want := "false:SET:false false:LPUSH:true true:INCR:false"
	if got := strings.Join(seen, " "); got != want {
		t.Errorf("batch hook saw %q, want %q", got, want)
	}
	if commands != 0 {
		t.Errorf("the command hook ran %d times for batches", commands)
	}
}

// TestHookDial: a dial hook runs once per physical connection and may wrap it.
func TestHookDial(t *testing.T) {
	var dials atomic.Int32
	var bytesRead atomic.Int64
	c, _ := hookClient(t, client.Hook{Dial: func(next client.DialFunc) client.DialFunc {
		return func(ctx context.Context, ep client.Endpoint) (net.Conn, error) {
			dials.Add(1)
			nc, err := next(ctx, ep)
			if err != nil {
				return nil, err
			}
			return &readCounter{Conn: nc, n: &bytesRead}, nil
		}
	}})
	if _, _, err := c.Get(context.Background(), "dial:k"); err != nil {
		t.Fatal(err)
	}
	if n := dials.Load(); n != 1 {
		t.Errorf("%d dials for one connection", n)
	}
	if bytesRead.Load() == 0 {
		t.Error("the wrapped connection read nothing: the client did not use it")
	}
}

type readCounter struct {
	net.Conn
	n *atomic.Int64
}

func (r *readCounter) Read(p []byte) (int, error) {
	n, err := r.Conn.Read(p)
	r.n.Add(int64(n))
	return n, err
}

// TestHooksBound: more than MaxHooks hooks is a configuration error, before any I/O.
func TestHooksBound(t *testing.T) {
	_, err := client.Create(client.Options{Endpoints: []client.Endpoint{{Host: "127.0.0.1", Port: 1}},
		Hooks: make([]client.Hook, client.MaxHooks+1)})
	var ce *client.ConfigError
	if !errors.As(err, &ce) || ce.Option != "Hooks" {
		t.Fatalf("Create with %d hooks: %v", client.MaxHooks+1, err)
	}
}
