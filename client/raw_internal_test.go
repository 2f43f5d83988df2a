package client

import (
	"errors"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/respire-go/respire/internal/command"
)

// carrier returns s in the Go type drawn: string or []byte, the two types Do accepts that can
// spell a word.
func carrier(t *rapid.T, s, label string) any {
	if rapid.Bool().Draw(t, label) {
		return []byte(s)
	}
	return s
}

// mangle flips the letter case of s at random.
func mangle(t *rapid.T, s, label string) string {
	b := []byte(s)
	for i := range b {
		if c := b[i]; rapid.Bool().Draw(t, label) {
			if 'a' <= c && c <= 'z' {
				b[i] = c - 'a' + 'A'
			} else if 'A' <= c && c <= 'Z' {
				b[i] = c - 'A' + 'a'
			}
		}
	}
	return string(b)
}

// TestRawCallClassifiesEveryCarrier: for every command and subcommand of the table, in any
// letter case, with its name and subcommand carried as string or []byte and further
// arguments of every accepted type, rawCall finds the row Lookup finds for the lower-case
// strings, refuses it without AllowAdmin exactly when the row is admin, and encodes the
// arguments the server will see.
func TestRawCallClassifiesEveryCarrier(t *testing.T) {
	type row struct{ name, sub string }
	var rows []row
	for _, c := range command.Commands() {
		rows = append(rows, row{strings.ToLower(c.Name()), ""})
		for _, s := range c.Subcommands() {
			_, sub, _ := strings.Cut(strings.ToLower(s.Name()), " ")
			rows = append(rows, row{strings.ToLower(c.Name()), sub})
		}
	}
	guarded, err := Create(Options{Endpoints: []Endpoint{{Host: "127.0.0.1", Port: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	defer guarded.Close()
	open, err := Create(Options{Endpoints: []Endpoint{{Host: "127.0.0.1", Port: 1}}, AllowAdmin: true})
	if err != nil {
		t.Fatal(err)
	}
	defer open.Close()
	extras := []any{"x", []byte("y"), 7, int64(-3), uint64(9), 1.5, true}
	rapid.Check(t, func(rt *rapid.T) {
		r := rapid.SampledFrom(rows).Draw(rt, "row")
		want := command.Lookup(r.name, r.sub)
		args := []any{carrier(rt, mangle(rt, r.name, "name-case"), "name-type")}
		wire := []string{strings.ToLower(r.name)}
		if r.sub != "" {
			args = append(args, carrier(rt, mangle(rt, r.sub, "sub-case"), "sub-type"))
			wire = append(wire, r.sub)
		}
		for range rapid.IntRange(0, 3).Draw(rt, "extras") {
			args = append(args, rapid.SampledFrom(extras).Draw(rt, "extra"))
		}
		cl, info, err := open.rawCall(args)
		if err != nil || info != want {
			rt.Fatalf("rawCall(%v) = %v, %v; want %s", args, info, err, want.Name())
		}
		if cl.cmd.Name != want.Name() || !strings.EqualFold(string(cl.span(0)), wire[0]) ||
			(len(wire) > 1 && !strings.EqualFold(string(cl.span(1)), wire[1])) || len(cl.views()) != len(args) {
			rt.Fatalf("rawCall(%v) encoded %q as %s", args, cl.cmd.Frame, cl.cmd.Name)
		}
		open.putCall(cl)
		cl, info, err = guarded.rawCall(args)
		switch {
		case want.Admin() && !errors.Is(err, ErrAdminDisabled):
			rt.Fatalf("%v: admin command not refused: %v", args, err)
		case !want.Admin() && (err != nil || info != want):
			rt.Fatalf("%v: refused or misclassified: %v %v", args, info, err)
		case err == nil:
			guarded.putCall(cl)
		}
	})
}

// TestRawCallRejectsBadNames: no name, an empty one, or an argument type Do does not take.
func TestRawCallRejectsBadNames(t *testing.T) {
	c, err := Create(Options{Endpoints: []Endpoint{{Host: "127.0.0.1", Port: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	type named string
	for _, args := range [][]any{nil, {""}, {[]byte{}}, {named("GET")}, {"GET", struct{}{}}, {nil}} {
		var ce *ConfigError
		if _, _, err := c.rawCall(args); !errors.As(err, &ce) {
			t.Errorf("rawCall(%v): %v, want a *ConfigError", args, err)
		}
	}
	if _, info, err := c.rawCall([]any{"MODULE.CMD", "x"}); err != nil || info != nil {
		t.Errorf("an unknown command must pass unclassified: %v %v", info, err)
	}
}
