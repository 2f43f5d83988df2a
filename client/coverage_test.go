package client

import (
	"bytes"
	"os"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/respire-go/respire/internal/command/surface"
)

// TestEveryCommandTyped: every command and subcommand of the command table (Redis 7.0's own
// description, plus the SENTINEL commands of redis-sentinel) has a typed form, generated from
// commands.txt or written by hand, or is on the short raw list with its reason. The README
// states the count.
func TestEveryCommandTyped(t *testing.T) {
	types := map[string]reflect.Type{
		"Commands":      reflect.TypeOf(Commands{}),
		"Batch":         reflect.TypeOf(&Batch{}),
		"DedicatedConn": reflect.TypeOf(&DedicatedConn{}),
		"Client":        reflect.TypeOf(&Client{}),
		"Subscription":  reflect.TypeOf(&Subscription{}),
	}
	exists := func(form string) bool {
		typ, method, ok := strings.Cut(form, ".")
		if !ok || types[typ] == nil {
			return false
		}
		_, found := types[typ].MethodByName(method)
		return found
	}
	leaves := surface.Leaves()
	typed := 0
	for _, c := range leaves {
		forms := append(append([]string(nil), generatedForms[c]...), handForms[c]...)
		_, raw := rawCommands[c]
		switch {
		case len(forms) > 0 && raw:
			t.Errorf("%s is typed and on the raw list", c)
		case len(forms) > 0:
			typed++
		case !raw:
			t.Errorf("%s has no typed form: add it to commands.txt (or, with a reason, to its raw list)", c)
		}
		for _, f := range forms {
			if !exists(f) {
				t.Errorf("%s: %s does not exist", c, f)
			}
		}
	}
	for c, reason := range rawCommands {
		if len(strings.Fields(reason)) < 4 {
			t.Errorf("raw %s: the reason %q says too little", c, reason)
		}
	}
	if len(rawCommands) > 15 {
		t.Errorf("%d raw commands: the raw list must stay short", len(rawCommands))
	}
	t.Logf("%d of %d commands typed; raw: %d", typed, len(leaves), len(rawCommands))
	for file, pattern := range map[string]string{
		"../README.md":        `(\d+) of (\d+) Redis 7\.0 commands typed`,
		"../docs/commands.md": `commands of .redis-sentinel.: (\d+) of (\d+)\.`,
	} {
		text, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		m := regexp.MustCompile(pattern).FindSubmatch(text)
		if m == nil {
			t.Fatalf("%s lacks the count of typed commands (%s)", file, pattern)
		}
		if string(m[1]) != strconv.Itoa(typed) || string(m[2]) != strconv.Itoa(len(leaves)) {
			t.Errorf("%s says %s of %s commands typed; the table says %d of %d", file, m[1], m[2], typed, len(leaves))
		}
	}
}

// TestSurfaceUpToDate fails when commands_gen.go is not what the generator makes of
// commands.txt and the command table: run go generate ./client.
func TestSurfaceUpToDate(t *testing.T) {
	src, err := os.ReadFile("commands.txt")
	if err != nil {
		t.Fatal(err)
	}
	sp, err := surface.Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	want, err := surface.Generate(sp)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("commands_gen.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("commands_gen.go is stale: run go generate ./client and commit the result")
	}
}

// TestCommandsDocListsRawCommands: docs/commands.md lists exactly the raw commands, with
// their reasons.
func TestCommandsDocListsRawCommands(t *testing.T) {
	doc, err := os.ReadFile("../docs/commands.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok1 := strings.Cut(string(doc), "<!-- raw-commands:begin -->")
	table, _, ok2 := strings.Cut(rest, "<!-- raw-commands:end -->")
	if !ok1 || !ok2 {
		t.Fatal("docs/commands.md lacks the raw-commands markers")
	}
	documented := map[string]string{}
	for _, m := range regexp.MustCompile("(?m)^\\| `([^`]+)` \\| (.+) \\|$").FindAllStringSubmatch(table, -1) {
		documented[strings.ToLower(strings.Replace(m[1], " ", "|", 1))] = m[2]
	}
	if len(documented) != len(rawCommands) {
		t.Errorf("docs/commands.md lists %d raw commands, the spec %d", len(documented), len(rawCommands))
	}
	for c, reason := range rawCommands {
		if documented[c] != reason {
			t.Errorf("raw %s: documented %q, spec %q", c, documented[c], reason)
		}
	}
}
