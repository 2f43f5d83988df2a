package netio_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/respire-go/respire/netio"
	"github.com/respire-go/respire/netio/redistest"
)

func TestRedactReply(t *testing.T) {
	const withheld = " (message withheld: it may contain the credentials)"
	cases := []struct {
		reply, command, secret, want string
	}{
		// Redis 7.0's echo of an unknown command's arguments.
		{"ERR unknown command 'GETX', with args beginning with: 'mykey' 'myvalue' ", "GETX", "",
			"ERR unknown command 'GETX'"},
		// Redis 6.0 quoted with backticks and separated arguments with commas.
		{"ERR unknown command `HELLO`, with args beginning with: `3`, `AUTH`, `default`, `pw`, ", "HELLO", "pw",
			"ERR unknown command `HELLO`"},
		// A proxy's lower-cased and truncated echo, in another case.
		{"ERR Unknown Command 'hello', WITH ARGS BEGINNING WITH: '3' 'auth' 'default' 'sec", "HELLO", "secret",
			"ERR Unknown Command 'hello'"},
		// Quoted arguments that are not the command's name.
		{"ERR unknown subcommand 'blah'. Try CONFIG HELP.", "CONFIG", "", "ERR unknown subcommand '[redacted]'. Try CONFIG HELP."},
		{"ERR Error in ACL SETUSER modifier '>hunter2': Syntax error", "ACL", "", "ERR Error in ACL SETUSER modifier '[redacted]': Syntax error"},
		{"NOGROUP No such key 'it's' or consumer group 'g' in XREADGROUP with GROUP option", "XREADGROUP", "",
			"NOGROUP No such key '[redacted]' in XREADGROUP with GROUP option"},
		{"ERR bad value 'abc", "X", "", "ERR bad value '[redacted]'"},
		{"ERR value is 'key' and 'value'", "", "", "ERR value is '[redacted]'"},
		// Command names stay, in every form Redis writes them.
		{"ERR wrong number of arguments for 'get' command", "GET", "", "ERR wrong number of arguments for 'get' command"},
		{"ERR wrong number of arguments for 'config|set' command", "CONFIG", "", "ERR wrong number of arguments for 'config|set' command"},
		{"NOPERM this user has no permissions to run the 'client|setname' command", "CLIENT SETNAME", "",
			"NOPERM this user has no permissions to run the 'client|setname' command"},
		// Redis's own quotes in a fixed text stay, even when the password is the quoted word.
		{"MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.", "HELLO", "no",
			"MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'."},
		// Apostrophes inside words are not quotes.
		{"ERR Number of keys can't be greater than number of args", "EVAL", "", "ERR Number of keys can't be greater than number of args"},
		{"CROSSSLOT Keys in request don't hash to the same slot", "MGET", "", "CROSSSLOT Keys in request don't hash to the same slot"},
		// The code alone, and codes never rewritten.
		{"ERR", "GET", "ERR", "ERR"},
		{"WRONGPASS invalid username-password pair or user is disabled.", "AUTH", "WRONG",
			"WRONGPASS invalid username-password pair or user is disabled."},
		{"WRONGPASS invalid username-password pair or user is disabled.", "AUTH", "a",
			"WRONGPASS invalid username-password pair or user is disabled."},
		{"WRONGPASS invalid username-password pair or user is disabled.", "AUTH", "ERR",
			"WRONGPASS invalid username-password pair or user is disabled."},
		// A password equal to one of the standard message's words is not revealed by a redaction.
		{"WRONGPASS invalid username-password pair or user is disabled.", "HELLO", "invalid",
			"WRONGPASS invalid username-password pair or user is disabled."},
		{"ERR unknown command 'HELLO', with args beginning with: '3' 'AUTH' 'default' 'ERR' ", "HELLO", "ERR",
			"ERR unknown command 'HELLO'"},
		// A password equal to the command's name.
		{"ERR unknown command 'HELLO', with args beginning with: '3' 'AUTH' 'default' 'HELLO' ", "HELLO", "hello",
			"ERR unknown command 'HELLO'"},
		// An echo in a form Redis never uses, in any letter case: the message is withheld.
		{"ERR proxy refused: hello 3 auth default S3cret-Pw", "HELLO", "s3cret-pw", "ERR" + withheld},
		{"ERR proxy refused: s3cret-pw", "HELLO", "s3cret-pw", "ERR" + withheld},
		// The secret as part of a word is not an echo.
		{"ERR proxy refused: xs3cret-pwx", "HELLO", "s3cret-pw", "ERR proxy refused: xs3cret-pwx"},
	}
	for _, c := range cases {
		if got := netio.RedactReply(c.reply, c.command, c.secret); got != c.want {
			t.Errorf("RedactReply(%q, %q, %q)\n got %q\nwant %q", c.reply, c.command, c.secret, got, c.want)
		}
	}
}

// TestHandshakeRejectionsWithAdversarialPasswords connects to real servers with passwords chosen
// to break substring redaction: a prefix of the error code, the code itself, one letter, the
// empty password, and a password equal to the command's name. The error keeps the server's code
// and message intact, and never contains the password where the server did not write it.
func TestHandshakeRejectionsWithAdversarialPasswords(t *testing.T) {
	redistest.Require(t)
	const wrongpass = "WRONGPASS invalid username-password pair or user is disabled."
	srv := redistest.Start(t, redistest.Config{Password: "the-right-password-77"})
	ep := tcp(t, srv.Addr())
	for _, pw := range []string{"WRONG", "ERR", "a", "PASS", "invalid", "hello"} {
		for _, proto := range []netio.Protocol{netio.ProtocolAuto, netio.ProtocolRESP2, netio.ProtocolRESP3} {
			tr := netio.NewTransport(netio.TransportConfig{Handshake: netio.HandshakeConfig{Protocol: proto, Password: pw}})
			r := mustFail(t, context.Background(), tr, ep)
			var he *netio.HandshakeError
			if !errors.As(r.err, &he) || he.Code != "WRONGPASS" || he.Message != wrongpass {
				t.Fatalf("password %q %v: got %v, want the server's WRONGPASS intact", pw, proto, r.err)
			}
			if !strings.HasSuffix(r.err.Error(), "rejected: "+wrongpass) {
				t.Fatalf("password %q %v: error text %q", pw, proto, r.err.Error())
			}
		}
	}
	// The empty password sends no AUTH: HELLO answers NOAUTH, intact.
	tr := netio.NewTransport(netio.TransportConfig{Handshake: netio.HandshakeConfig{Protocol: netio.ProtocolRESP3}})
	r := mustFail(t, context.Background(), tr, ep)
	var he *netio.HandshakeError
	if !errors.As(r.err, &he) || he.Code != "NOAUTH" || !strings.HasPrefix(he.Message, "NOAUTH HELLO must be called") {
		t.Fatalf("empty password: %v", r.err)
	}

	// A server that does not know HELLO echoes its arguments, the password among them.
	old := redistest.Start(t, redistest.Config{Password: "the-right-password-77", Extra: []string{`rename-command HELLO ""`}})
	oldEP := tcp(t, old.Addr())
	for _, pw := range []string{"WRONG", "ERR", "a", "unknown", "HELLO", "s3cr3t-echoed-31", strings.Repeat("long-secret-", 20)} {
		tr := netio.NewTransport(netio.TransportConfig{Handshake: netio.HandshakeConfig{Protocol: netio.ProtocolRESP3, Password: pw}})
		r := mustFail(t, context.Background(), tr, oldEP)
		var he *netio.HandshakeError
		if !errors.As(r.err, &he) || he.Code != "ERR" || he.Message != "ERR unknown command 'HELLO'" {
			t.Fatalf("password %q: got %v (message %q), want the unknown-command error without its echo", pw, r.err, messageOf(he))
		}
		if strings.Contains(pw, "-") && strings.Contains(r.err.Error(), pw) { // the passwords no message contains
			t.Fatalf("password %q leaked: %v", pw, r.err)
		}
	}

	// An ACL denial quotes the command's name, which stays, even when the password is that name.
	acl := redistest.Start(t, redistest.Config{Extra: []string{"user limited on >select ~* &* +@all -select"}})
	tr = netio.NewTransport(netio.TransportConfig{Handshake: netio.HandshakeConfig{Username: "limited", Password: "select", Database: 1}})
	r = mustFail(t, context.Background(), tr, tcp(t, acl.Addr()))
	if !errors.As(r.err, &he) || he.Code != "NOPERM" || he.Command != "SELECT" ||
		he.Message != "NOPERM this user has no permissions to run the 'select' command" {
		t.Fatalf("ACL denial: %v", r.err)
	}
}

func messageOf(he *netio.HandshakeError) string {
	if he == nil {
		return ""
	}
	return he.Message
}

// FuzzRedactReplyHidesEchoedSecrets: whatever the password, the error texts that echo it (Redis's
// unknown-command echo in two spellings, a quoted argument, a proxy's own wording) never show it
// more often than the same texts without it, and the code is never rewritten.
func FuzzRedactReplyHidesEchoedSecrets(f *testing.F) {
	for _, s := range []string{"WRONG", "a", "ERR", "s3cr3t", "it's", "'", "`x`", "a b", "with args beginning with", "default", "é"} {
		f.Add(s, uint8(0))
		f.Add(s, uint8(1))
		f.Add(s, uint8(2))
		f.Add(s, uint8(3))
	}
	forms := []func(secret string) string{
		func(s string) string {
			return "ERR unknown command 'HELLO', with args beginning with: '3' 'AUTH' 'default' '" + s + "' "
		},
		func(s string) string {
			return "ERR Unknown Command `hello`, WITH ARGS BEGINNING WITH: `3`, `auth`, `default`, `" + strings.ToUpper(s) + "`, "
		},
		func(s string) string { return "ERR Error in ACL SETUSER modifier '>" + s + "': Syntax error" },
		func(s string) string { return "ERR proxy refused: hello 3 auth default " + s },
	}
	f.Fuzz(func(t *testing.T, secret string, form uint8) {
		if strings.TrimSpace(secret) == "" || !utf8.ValidString(secret) || strings.ContainsAny(secret, "\r\n") {
			return
		}
		build := forms[int(form)%len(forms)]
		got := netio.RedactReply(build(secret), "HELLO", secret)
		if !strings.HasPrefix(got, "ERR ") {
			t.Fatalf("the code was rewritten: %q", got)
		}
		if got == "ERR (message withheld: it may contain the credentials)" {
			return
		}
		skeleton := netio.RedactReply(build(""), "HELLO", "")
		lower := strings.ToLower(secret)
		if n, m := strings.Count(strings.ToLower(got), lower), strings.Count(strings.ToLower(skeleton), lower); n > m {
			t.Fatalf("%q shows the secret %q (%d times, %d without it)", got, secret, n, m)
		}
	})
}
