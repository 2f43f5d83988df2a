package command_test

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/respire-go/respire/internal/command/internal/tablegen"
)

// TestTableUpToDate fails when table_gen.go is not what the generator makes of
// testdata/commands.json, testdata/sentinel.json and overlay.txt: run go generate
// ./internal/command.
func TestTableUpToDate(t *testing.T) {
	captured, err := os.ReadFile("testdata/commands.json")
	if err != nil {
		t.Fatal(err)
	}
	sentinel, err := os.ReadFile("testdata/sentinel.json")
	if err != nil {
		t.Fatal(err)
	}
	overlay, err := os.ReadFile("overlay.txt")
	if err != nil {
		t.Fatal(err)
	}
	want, err := tablegen.Generate(captured, sentinel, overlay)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("table_gen.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("table_gen.go is stale: run go generate ./internal/command and commit the result")
	}
	if !bytes.HasPrefix(got, []byte(tablegen.Header)) {
		t.Fatal("table_gen.go lacks the generated-code header")
	}
}

// TestOverlayIsChecked: the generator refuses overlay lines it cannot verify.
func TestOverlayIsChecked(t *testing.T) {
	captured, err := os.ReadFile("testdata/commands.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ line, want string }{
		{"session state nosuch x", `unknown command "nosuch"`},
		{"session sticky select x", `unknown session class "sticky"`},
		{"session state select", "session takes"},
		{"admin-exempt get reads", "nothing to exempt"},
		{"admin-add flushall twice", "already in @admin or @dangerous"},
		{"blocking blpop again", "already flagged blocking"},
		{"frobnicate get", `unknown directive "frobnicate"`},
		{"extra get 1.0 2 - -", "already in commands.json"},
		{"extra nosuch|sub 9.0 2 - -", "unknown container"},
		{"extra newcmd 9.0 2 sparkly -", `unknown flag "sparkly"`},
		{"admin-add get a\nadmin-add get b", "appears twice"},
	} {
		_, err := tablegen.Generate(captured, nil, []byte(tc.line+"\n"))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: got %v, want an error containing %q", tc.line, err, tc.want)
		}
	}
	if _, err := tablegen.Generate([]byte(`{"redis_version":"7","commands":[{"name":"x","arity":1,"flags":["new_flag"]}]}`), nil, nil); err == nil ||
		!strings.Contains(err.Error(), `unknown flag "new_flag"`) {
		t.Errorf("an unknown Redis flag must fail the generator: %v", err)
	}
	sentinel := []byte(`{"redis_version":"6.2.0","commands":[{"name":"sentinel","arity":-2}]}`)
	if _, err := tablegen.Generate(captured, sentinel, nil); err == nil || !strings.Contains(err.Error(), "captured from 6.2.0") {
		t.Errorf("a sentinel capture of another version must fail the generator: %v", err)
	}
	dup := []byte(`{"redis_version":"7.0.15","commands":[{"name":"get","arity":2}]}`)
	if _, err := tablegen.Generate(captured, dup, nil); err == nil || !strings.Contains(err.Error(), "appears twice") {
		t.Errorf("a sentinel command the server has must fail the generator: %v", err)
	}
}
