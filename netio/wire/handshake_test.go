package wire

import (
	"errors"
	"strings"
	"testing"

	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/netio/resp"
)

// runHandshake drives h against a scripted server: answer maps a command line ("HELLO 3 AUTH
// default pw") to its reply. It returns the command lines sent, batch by batch.
func runHandshake(t *testing.T, h *Handshake, answer func(cmd string) resp.Value) ([][]string, error) {
	t.Helper()
	var batches [][]string
	for i := 0; i < 5; i++ {
		frames, n := h.Next(nil)
		if n == 0 {
			if !h.Done() {
				t.Fatalf("handshake returned no batch but is not done")
			}
			return batches, nil
		}
		var cmds []string
		var args [][]byte
		for len(frames) > 0 {
			used, err := resp.ParseCommand(frames, &args, nil)
			if err != nil {
				t.Fatalf("handshake produced bad frames: %v", err)
			}
			frames = frames[used:]
			parts := make([]string, len(args))
			for j, a := range args {
				parts[j] = string(a)
			}
			cmds = append(cmds, strings.Join(parts, " "))
		}
		if len(cmds) != n {
			t.Fatalf("batch of %d commands announced %d replies", len(cmds), n)
		}
		batches = append(batches, cmds)
		for _, c := range cmds {
			v := answer(c)
			if err := h.Reply(&v); err != nil {
				return batches, err
			}
		}
	}
	t.Fatal("handshake did not finish")
	return nil, nil
}

func redis70(cmd string) resp.Value {
	switch {
	case strings.HasPrefix(cmd, "HELLO"):
		return resp.MapOf(resp.BulkString("server"), resp.BulkString("redis"), resp.BulkString("proto"), resp.Int(3))
	case strings.HasPrefix(cmd, "CLIENT SETINFO"):
		return resp.ErrorValue("ERR unknown subcommand 'SETINFO'. Try CLIENT HELP.")
	}
	return resp.SimpleString("OK")
}

func TestHandshakeAutoNegotiatesFirst(t *testing.T) {
	h := NewHandshake(HandshakeConfig{Password: "pw", ClientName: "app", Database: 2, LibraryName: "respire", LibraryVersion: "0.1.0"})
	batches, err := runHandshake(t, h, redis70)
	if err != nil {
		t.Fatal(err)
	}
	want := [][]string{
		{"HELLO 3 AUTH default pw SETNAME app"},
		{"SELECT 2", "CLIENT SETINFO LIB-NAME respire", "CLIENT SETINFO LIB-VER 0.1.0"},
	}
	if !equalBatches(batches, want) || h.Protocol() != 3 || h.FellBack() {
		t.Fatalf("got %q proto %d", batches, h.Protocol())
	}
}

func TestHandshakeAutoFallsBackOnUnknownHello(t *testing.T) {
	for _, reply := range []resp.Value{
		resp.ErrorValue("ERR unknown command 'HELLO', with args beginning with: '3' "),
		resp.ErrorValue("NOPROTO sorry, this protocol version is not supported"),
	} {
		h := NewHandshake(HandshakeConfig{Username: "u", Password: "pw", ClientName: "app", LibraryName: "respire"})
		batches, err := runHandshake(t, h, func(cmd string) resp.Value {
			if strings.HasPrefix(cmd, "HELLO") {
				return reply
			}
			return redis70(cmd)
		})
		if err != nil {
			t.Fatal(err)
		}
		want := [][]string{
			{"HELLO 3 AUTH u pw SETNAME app"},
			{"AUTH u pw", "CLIENT SETNAME app", "CLIENT SETINFO LIB-NAME respire"},
		}
		if !equalBatches(batches, want) || h.Protocol() != 2 || !h.FellBack() {
			t.Fatalf("got %q proto %d", batches, h.Protocol())
		}
	}
}

func TestHandshakeExplicitProtocols(t *testing.T) {
	h := NewHandshake(HandshakeConfig{Protocol: ProtocolRESP2, Password: "pw", Database: 1})
	batches, err := runHandshake(t, h, redis70)
	if err != nil || !equalBatches(batches, [][]string{{"AUTH pw", "SELECT 1"}}) || h.Protocol() != 2 {
		t.Fatalf("resp2: %q %v", batches, err)
	}
	h = NewHandshake(HandshakeConfig{Protocol: ProtocolRESP3, LibraryName: "respire"})
	batches, err = runHandshake(t, h, redis70)
	if err != nil || !equalBatches(batches, [][]string{{"HELLO 3", "CLIENT SETINFO LIB-NAME respire"}}) || h.Protocol() != 3 {
		t.Fatalf("resp3: %q %v", batches, err)
	}
	// Explicit RESP3 never falls back.
	h = NewHandshake(HandshakeConfig{Protocol: ProtocolRESP3})
	_, err = runHandshake(t, h, func(string) resp.Value { return resp.ErrorValue("NOPROTO unsupported") })
	var he *HandshakeError
	if !errors.As(err, &he) || he.Code != "NOPROTO" {
		t.Fatalf("resp3 must fail on NOPROTO, got %v", err)
	}
	// Nothing to set up on RESP2: done at once.
	h = NewHandshake(HandshakeConfig{Protocol: ProtocolRESP2})
	if batches, err := runHandshake(t, h, redis70); err != nil || len(batches) != 0 {
		t.Fatalf("empty resp2 setup: %q %v", batches, err)
	}
}

func TestHandshakeRejections(t *testing.T) {
	cases := []struct {
		reply   string
		command string
		class   fsm.FailureClass
	}{
		{"WRONGPASS invalid username-password pair or user is disabled.", "HELLO", fsm.Permanent},
		{"NOPERM this user has no permissions to run the 'hello' command", "HELLO", fsm.Permanent},
		{"LOADING Redis is loading the dataset in memory", "HELLO", fsm.Transient},
		{"ERR unknown subcommand or wrong number of arguments for 'hello'", "HELLO", fsm.Permanent},
	}
	for _, c := range cases {
		h := NewHandshake(HandshakeConfig{Password: "s3cret-value"})
		_, err := runHandshake(t, h, func(string) resp.Value { return resp.ErrorValue(c.reply) })
		var he *HandshakeError
		if !errors.As(err, &he) || he.Command != c.command || he.Class() != c.class {
			t.Fatalf("%q: got %v", c.reply, err)
		}
		if strings.Contains(err.Error(), "s3cret-value") {
			t.Fatalf("credentials leaked into %q", err)
		}
	}
	// A rejected SELECT fails the handshake; a rejected SETINFO does not.
	h := NewHandshake(HandshakeConfig{Protocol: ProtocolRESP2, Database: 99, LibraryName: "respire"})
	_, err := runHandshake(t, h, func(cmd string) resp.Value {
		if strings.HasPrefix(cmd, "SELECT") {
			return resp.ErrorValue("ERR DB index is out of range")
		}
		return redis70(cmd)
	})
	var he *HandshakeError
	if !errors.As(err, &he) || he.Command != "SELECT" {
		t.Fatalf("select rejection: %v", err)
	}
	// Malformed HELLO reply is a protocol error, not a fallback.
	h = NewHandshake(HandshakeConfig{})
	_, err = runHandshake(t, h, func(string) resp.Value { return resp.Int(7) })
	var pe *resp.ProtocolError
	if !errors.As(err, &pe) {
		t.Fatalf("malformed hello reply: %v", err)
	}
}

func equalBatches(a, b [][]string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if strings.Join(a[i], "|") != strings.Join(b[i], "|") {
			return false
		}
	}
	return true
}

// TestRejectionsNeverEchoThePassword: Redis echoes the first arguments of an unknown command,
// which for HELLO include the password (cut at 128 bytes). The machine drops them.
func TestRejectionsNeverEchoThePassword(t *testing.T) {
	for _, pw := range []string{"s3cret-value", strings.Repeat("p", 200)} {
		echoed := pw[:min(len(pw), 100)]
		for _, proto := range []Protocol{ProtocolRESP3, ProtocolAuto} {
			h := NewHandshake(HandshakeConfig{Protocol: proto, Password: pw})
			_, err := runHandshake(t, h, func(string) resp.Value {
				// Not Redis's exact unknown-command wording, so Auto does not fall back either.
				return resp.ErrorValue("ERR unknown command or verb 'HELLO', with args beginning with: '3' 'AUTH' 'default' '" + echoed + "' ")
			})
			if err == nil || strings.Contains(err.Error(), echoed) || !strings.Contains(err.Error(), "ERR unknown command or verb '") {
				t.Fatalf("%v: %v", proto, err)
			}
		}
		h := NewHandshake(HandshakeConfig{Protocol: ProtocolRESP2, Password: pw})
		_, err := runHandshake(t, h, func(string) resp.Value { return resp.ErrorValue("ERR weird " + pw + " reply") })
		if err == nil || strings.Contains(err.Error(), echoed) {
			t.Fatalf("password survived: %v", err)
		}
	}
}

func TestMaxClientsIsTransient(t *testing.T) {
	h := NewHandshake(HandshakeConfig{})
	_, err := runHandshake(t, h, func(string) resp.Value { return resp.ErrorValue("ERR max number of clients reached") })
	var he *HandshakeError
	if !errors.As(err, &he) || he.Class() != fsm.Transient {
		t.Fatalf("max clients must be transient: %v", err)
	}
}

func TestHandshakeRecordsClientID(t *testing.T) {
	withID := func(reply resp.Value) func(string) resp.Value {
		return func(cmd string) resp.Value {
			if cmd == "CLIENT ID" {
				return reply
			}
			return redis70(cmd)
		}
	}
	for _, proto := range []Protocol{ProtocolAuto, ProtocolRESP2, ProtocolRESP3} {
		h := NewHandshake(HandshakeConfig{Protocol: proto, LibraryName: "respire", ClientID: true})
		batches, err := runHandshake(t, h, withID(resp.Int(42)))
		if err != nil {
			t.Fatal(err)
		}
		last := batches[len(batches)-1]
		if last[len(last)-1] != "CLIENT ID" {
			t.Fatalf("%v: CLIENT ID is not the last setup command: %q", proto, batches)
		}
		if id, ok := h.ClientID(); !ok || id != 42 {
			t.Fatalf("%v: id %d %v, want 42", proto, id, ok)
		}
	}
	// Fail-soft: a refusal or an odd reply leaves the connection without an id, and ready.
	for _, reply := range []resp.Value{
		resp.ErrorValue("NOPERM this user has no permissions to run the 'client|id' command"),
		resp.SimpleString("OK"),
	} {
		h := NewHandshake(HandshakeConfig{ClientID: true})
		if _, err := runHandshake(t, h, withID(reply)); err != nil {
			t.Fatalf("%v failed the handshake: %v", reply, err)
		}
		if id, ok := h.ClientID(); ok || id != 0 || !h.Done() {
			t.Fatalf("%v: id %d %v done %v", reply, id, ok, h.Done())
		}
	}
	// Not asked: not sent.
	h := NewHandshake(HandshakeConfig{Protocol: ProtocolRESP3})
	batches, _ := runHandshake(t, h, redis70)
	if !equalBatches(batches, [][]string{{"HELLO 3"}}) {
		t.Fatalf("CLIENT ID sent unasked: %q", batches)
	}
	if _, ok := h.ClientID(); ok {
		t.Fatal("identified without CLIENT ID")
	}
}

func TestHandshakeReadOnly(t *testing.T) {
	// Every protocol mode sends READONLY last, in the session batch.
	for _, proto := range []Protocol{ProtocolAuto, ProtocolRESP2, ProtocolRESP3} {
		h := NewHandshake(HandshakeConfig{Protocol: proto, ClientID: true, ReadOnly: true})
		batches, err := runHandshake(t, h, redis70)
		if err != nil {
			t.Fatalf("%v: %v", proto, err)
		}
		last := batches[len(batches)-1]
		if last[len(last)-1] != "READONLY" {
			t.Fatalf("%v: READONLY is not the last setup command: %q", proto, batches)
		}
	}
	// A refusal (a server without Cluster support, an ACL denial) fails the handshake.
	h := NewHandshake(HandshakeConfig{Protocol: ProtocolRESP2, ReadOnly: true})
	_, err := runHandshake(t, h, func(cmd string) resp.Value {
		if cmd == "READONLY" {
			return resp.ErrorValue("ERR This instance has cluster support disabled")
		}
		return redis70(cmd)
	})
	var he *HandshakeError
	if !errors.As(err, &he) || he.Command != "READONLY" || he.Class() != fsm.Permanent {
		t.Fatalf("refused READONLY: %v", err)
	}
	// Not asked: not sent.
	h = NewHandshake(HandshakeConfig{Protocol: ProtocolRESP2, ClientName: "app"})
	batches, _ := runHandshake(t, h, redis70)
	if !equalBatches(batches, [][]string{{"CLIENT SETNAME app"}}) {
		t.Fatalf("READONLY sent unasked: %q", batches)
	}
	if s := (HandshakeConfig{ReadOnly: true}).String(); !strings.HasSuffix(s, " readonly") {
		t.Fatalf("String: %q", s)
	}
}
