package sim

import (
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// module is the import path of respire's module.
const module = "github.com/respire-go/respire"

// simImports are the only packages of the module the simulator's code may import: the pure
// protocol layer, the engine and its options resolver, the machines and the codec. Never netio: the simulator must run
// production's protocol code (netio/wire), not drive sockets, and so that no protocol decision
// can hide in netio where no scenario reaches it. internal/plant switches the shared code's
// deliberate bugs on for the positive controls.
var simImports = map[string]bool{
	module + "/netio/wire":       true,
	module + "/netio/topo":       true,
	module + "/internal/command": true, // the command table: key positions a Cluster engine routes by
	module + "/netio/resp":       true,
	module + "/engine":           true,
	module + "/engine/config":    true,
	module + "/fsm":              true,
	module + "/internal/plant":   true,
}

// forbiddenImports returns the imports of the module among paths that the simulator may not
// import.
func forbiddenImports(paths []string) []string {
	var out []string
	for _, p := range paths {
		if (p == module || strings.HasPrefix(p, module+"/")) && !simImports[p] && !strings.HasPrefix(p, module+"/sim") {
			out = append(out, p)
		}
	}
	return out
}

// TestImportBoundary: the simulator's own files import only simImports of the module, and
// nothing they import brings in netio either (go list -deps, the whole closure).
func TestImportBoundary(t *testing.T) {
	var direct []string
	checked := 0
	err := filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && path != "." {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		checked++
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			for _, bad := range forbiddenImports([]string{p}) {
				direct = append(direct, path+" imports "+bad)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked == 0 {
		t.Fatal("no source files checked")
	}
	for _, d := range direct {
		t.Errorf("%s: the simulator may import only the protocol layer, the engine, the machines and the codec", d)
	}
	listed, err := exec.Command("go", "list", "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	pkgs := strings.Fields(string(listed))
	out, err := exec.Command("go", append([]string{"list", "-deps", "-f", "{{.ImportPath}}"}, pkgs...)...).Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 10 {
		t.Fatalf("go list -deps listed only %d packages", len(deps))
	}
	for _, bad := range forbiddenImports(deps) {
		t.Errorf("the simulator depends on %s (go list -deps ./sim/...)", bad)
	}
}

// TestImportBoundaryCatches is the boundary's positive control.
func TestImportBoundaryCatches(t *testing.T) {
	got := forbiddenImports([]string{module + "/netio", module + "/client", module + "/netio/wire", module + "/engine",
		module + "/sim/check", "net", "github.com/benbjohnson/clock"})
	if strings.Join(got, " ") != module+"/netio "+module+"/client" {
		t.Fatalf("forbidden imports found: %v", got)
	}
}
