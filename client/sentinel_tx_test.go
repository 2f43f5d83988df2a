package client_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/respire-go/respire/client"
)

// roFake is a loopback RESP2 server that plays a Sentinel and the primary it names (itself):
// SENTINEL MASTER names it under epoch 1, ROLE says master, subscriptions are acknowledged, and
// writes queued inside MULTI are refused with READONLY (EXEC then answers EXECABORT), as a
// primary demoted to a replica does. Scripts and functions (EVAL, EVALSHA, FCALL) fail with the
// READONLY error a script gets when it writes on a replica; inside MULTI they are queued and
// EXEC answers that error as their element. It counts the SENTINEL MASTER queries and the scripts run.
type roFake struct {
	l       net.Listener
	wg      sync.WaitGroup
	mu      sync.Mutex
	conns   []net.Conn
	masters int
	scripts int
}

func startROFake(t *testing.T) *roFake {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &roFake{l: l}
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
			go func() { defer f.wg.Done(); f.serve(nc) }()
		}
	}()
	t.Cleanup(func() {
		l.Close()
		f.mu.Lock()
		for _, c := range f.conns {
			c.Close()
		}
		f.mu.Unlock()
		f.wg.Wait()
	})
	return f
}

func (f *roFake) port() int { return f.l.Addr().(*net.TCPAddr).Port }

func (f *roFake) masterQueries() int { f.mu.Lock(); defer f.mu.Unlock(); return f.masters }

// scriptRuns counts the EVAL, EVALSHA and FCALL commands received.
func (f *roFake) scriptRuns() int { f.mu.Lock(); defer f.mu.Unlock(); return f.scripts }

func bulk(s string) string { return "$" + strconv.Itoa(len(s)) + "\r\n" + s + "\r\n" }

func (f *roFake) serve(nc net.Conn) {
	r := bufio.NewReader(nc)
	multi, aborted := false, false
	var queued []string // the replies EXEC owes the commands queued inside MULTI
	for {
		args, err := readArgs(r)
		if err != nil {
			return
		}
		name := strings.ToUpper(args[0])
		if name == "EVAL" || name == "EVALSHA" || name == "FCALL" {
			f.mu.Lock()
			f.scripts++
			f.mu.Unlock()
		}
		var out string
		switch {
		case name == "SENTINEL" && len(args) > 1 && strings.EqualFold(args[1], "MASTER"):
			f.mu.Lock()
			f.masters++
			f.mu.Unlock()
			kv := []string{"name", "mymaster", "ip", "127.0.0.1", "port", strconv.Itoa(f.port()), "flags", "master", "config-epoch", "1"}
			out = "*" + strconv.Itoa(len(kv)) + "\r\n"
			for _, s := range kv {
				out += bulk(s)
			}
		case name == "SENTINEL":
			out = "*0\r\n"
		case name == "ROLE":
			out = "*3\r\n" + bulk("master") + ":0\r\n*0\r\n"
		case name == "HELLO":
			out = "-ERR unknown command 'HELLO'\r\n"
		case name == "SUBSCRIBE" || name == "PSUBSCRIBE":
			for i, ch := range args[1:] {
				out += "*3\r\n" + bulk(strings.ToLower(name)) + bulk(ch) + ":" + strconv.Itoa(i+1) + "\r\n"
			}
		case name == "PING":
			out = "+PONG\r\n"
		case name == "MULTI":
			multi, aborted, queued = true, false, nil
			out = "+OK\r\n"
		case name == "EXEC" && aborted:
			multi = false
			out = "-EXECABORT Transaction discarded because of previous errors.\r\n"
		case name == "EXEC":
			multi = false
			out = "*" + strconv.Itoa(len(queued)) + "\r\n" + strings.Join(queued, "")
		case multi && name == "SET":
			aborted = true
			out = "-READONLY You can't write against a read only replica.\r\n"
		case multi && (name == "EVAL" || name == "EVALSHA" || name == "FCALL"):
			queued = append(queued, scriptReadOnly)
			out = "+QUEUED\r\n"
		case name == "EVAL" || name == "EVALSHA" || name == "FCALL":
			out = scriptReadOnly
		case name == "GET":
			out = "$-1\r\n"
		default:
			out = "+OK\r\n"
		}
		if _, err := io.WriteString(nc, out); err != nil {
			return
		}
	}
}

// scriptReadOnly is the error a script or function that writes gets on a replica (Redis 7).
const scriptReadOnly = "-READONLY You can't write against a read only replica. script: 4e6d8fc8, on @user_script:1.\r\n"

// readArgs reads one RESP command (an array of bulk strings).
func readArgs(r *bufio.Reader) ([]string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return nil, err
	}
	n, err := strconv.Atoi(strings.TrimSpace(line[1:]))
	if err != nil || line[0] != '*' || n < 1 {
		return nil, errors.New("not a command")
	}
	args := make([]string, n)
	for i := range args {
		if line, err = r.ReadString('\n'); err != nil {
			return nil, err
		}
		size, err := strconv.Atoi(strings.TrimSpace(line[1:]))
		if err != nil {
			return nil, err
		}
		buf := make([]byte, size+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return nil, err
		}
		args[i] = string(buf[:size])
	}
	return args, nil
}

// TestSentinelReadOnlyInWatchTransactionRetires: a write refused with READONLY inside a WATCH
// transaction (the primary was demoted) retires the Sentinel generation like READONLY
// elsewhere: the next operation rediscovers the primary (a new SENTINEL MASTER query), and the
// transaction is not replayed.
func TestSentinelReadOnlyInWatchTransactionRetires(t *testing.T) {
	f := startROFake(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := client.Connect(ctx, client.Options{Endpoints: []client.Endpoint{{Host: "127.0.0.1", Port: f.port()}},
		SentinelPrimaryName: "mymaster", Protocol: client.ProtocolRESP2})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Do(ctx, "GET", "k"); err != nil {
		t.Fatal(err)
	}
	before := f.masterQueries()
	if before == 0 {
		t.Fatal("discovery did not ask SENTINEL MASTER")
	}
	err = c.Watch(ctx, func(d *client.DedicatedConn) error {
		_, err := d.Exec(ctx, func(tx *client.Tx) { tx.Do("SET", "k", "v") })
		return err
	}, "k")
	var qe *client.TxQueueError
	if !errors.As(err, &qe) || !strings.HasPrefix(qe.Err.Message, "READONLY") {
		t.Fatalf("the transaction: %v, want a TxQueueError with READONLY", err)
	}
	// The generation retired: the next command waits for a new resolution.
	deadline := time.Now().Add(10 * time.Second)
	for f.masterQueries() == before {
		if time.Now().After(deadline) {
			t.Fatal("READONLY inside the WATCH transaction did not retire the generation: no rediscovery")
		}
		if _, err := c.Do(ctx, "GET", "k"); err != nil && !errors.Is(err, context.DeadlineExceeded) {
			t.Logf("GET after READONLY: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestSentinelURIAndConnectionStringConnect: the URI (redis://host:port?serviceName=) and the
// connection-string (host:port,serviceName=) forms reach the primary through the Sentinel end
// to end: discovery asks SENTINEL MASTER, and Endpoint reports the primary it named (the fake
// plays both roles on one address, so this does not show Endpoint never names a Sentinel: the
// real tests do).
func TestSentinelURIAndConnectionStringConnect(t *testing.T) {
	f := startROFake(t)
	addr := "127.0.0.1:" + strconv.Itoa(f.port())
	for _, form := range []struct {
		name  string
		parse func() (client.Options, error)
	}{
		{"uri", func() (client.Options, error) { return client.ParseURI("redis://" + addr + "?serviceName=mymaster") }},
		{"connection string", func() (client.Options, error) { return client.ParseConnectionString(addr + ",serviceName=mymaster") }},
	} {
		t.Run(form.name, func(t *testing.T) {
			o, err := form.parse()
			if err != nil {
				t.Fatal(err)
			}
			if o.SentinelPrimaryName != "mymaster" {
				t.Fatalf("parsed primary name %q, want mymaster", o.SentinelPrimaryName)
			}
			before := f.masterQueries()
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			c, err := client.Connect(ctx, o)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if _, err := c.Do(ctx, "GET", "k"); err != nil {
				t.Fatal(err)
			}
			if !c.IsSentinel() || f.masterQueries() == before {
				t.Fatal("the client did not discover its primary through the Sentinel")
			}
			if got := c.Endpoint().String(); got != addr {
				t.Fatalf("Endpoint() = %s, want the validated primary %s", got, addr)
			}
		})
	}
}
