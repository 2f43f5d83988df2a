package client_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"strings"
	"testing"
)

// readmeProgram returns the Go code block of README.md's "A first program" section.
func readmeProgram(t *testing.T) string {
	t.Helper()
	doc, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(doc), "\n## A first program\n")
	if !ok {
		t.Fatal(`README.md has no "## A first program" section`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	_, code, ok1 := strings.Cut(section, "```go\n")
	code, _, ok2 := strings.Cut(code, "```")
	if !ok1 || !ok2 {
		t.Fatal(`README.md's "A first program" has no go code block`)
	}
	return code
}

// TestReadmeProgramCompiles: the README's first program is a complete main package that
// type-checks against this client, so that a new user can paste and run it.
func TestReadmeProgramCompiles(t *testing.T) {
	code := readmeProgram(t)
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "main.go", code, 0)
	if err != nil {
		t.Fatalf("README.md's first program does not parse: %v", err)
	}
	if f.Name.Name != "main" || f.Scope.Lookup("main") == nil {
		t.Fatal("README.md's first program is not a main package with func main")
	}
	var imports []string
	for _, imp := range f.Imports {
		imports = append(imports, strings.Trim(imp.Path.Value, `"`))
	}
	conf := types.Config{Importer: exportImporter(t, fset, imports...)}
	if _, err := conf.Check("main", fset, []*ast.File{f}, nil); err != nil {
		t.Fatalf("README.md's first program does not compile: %v", err)
	}
	for _, want := range []string{"signal.NotifyContext", "client.Connect", "ReconnectPolicy", "defer c.Close()"} {
		if !strings.Contains(code, want) {
			t.Errorf("README.md's first program no longer shows %s", want)
		}
	}
	if strings.Contains(code, "MaxAttempts:") {
		t.Error("README.md's first program sets MaxAttempts: its policy must never strand the client")
	}
}
