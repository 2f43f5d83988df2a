package fsm

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// allowedImports are the only packages fsm's non-test code may import: pure computation and
// value types. Anything that reads a clock, does I/O, spawns goroutines, synchronizes, draws
// global randomness, logs or records telemetry is out.
var allowedImports = map[string]bool{
	"errors": true, "fmt": true, "math": true, "math/bits": true, "slices": true,
	"sort": true, "strconv": true, "strings": true, "time": true, "unicode/utf8": true,
}

// forbiddenTimeCalls are the functions of package time that read the clock or start timers;
// fsm may use time.Duration and time.Time values only.
var forbiddenTimeCalls = map[string]bool{
	"Now": true, "Since": true, "Until": true, "Sleep": true, "After": true, "AfterFunc": true,
	"NewTimer": true, "NewTicker": true, "Tick": true,
}

func TestPurityBoundary(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	checked := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		checked++
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if !allowedImports[path] {
				t.Errorf("%s imports %q: fsm must stay pure (no clock, I/O, goroutines, sync, global randomness, logging or telemetry)", name, path)
			}
		}
		for _, v := range violations(f, fset) {
			t.Errorf("%s: %s", name, v)
		}
	}
	if checked == 0 {
		t.Fatal("no source files checked")
	}
}

// violations lists go statements and clock-reading calls of package time in f.
func violations(f *ast.File, fset *token.FileSet) []string {
	var out []string
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.GoStmt:
			out = append(out, fset.Position(n.Pos()).String()+": go statement")
		case *ast.SelectorExpr:
			if id, ok := n.X.(*ast.Ident); ok && id.Name == "time" && forbiddenTimeCalls[n.Sel.Name] {
				out = append(out, fset.Position(n.Pos()).String()+": time."+n.Sel.Name+" reads the clock")
			}
		case *ast.SelectStmt:
			out = append(out, fset.Position(n.Pos()).String()+": select statement")
		case *ast.ChanType:
			out = append(out, fset.Position(n.Pos()).String()+": channel type")
		}
		return true
	})
	return out
}

// TestPurityCheckerCatches is the lint's positive control: a planted impure file is rejected.
func TestPurityCheckerCatches(t *testing.T) {
	src := `package fsm
import ("time"; "sync")
var mu sync.Mutex
func bad() { go func() {}(); _ = time.Now(); var c chan int; _ = c }`
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "planted.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	v := violations(f, fset)
	if len(v) != 3 {
		t.Fatalf("want 3 violations (go, time.Now, chan), got %v", v)
	}
	bad := 0
	for _, imp := range f.Imports {
		p, _ := strconv.Unquote(imp.Path.Value)
		if !allowedImports[p] {
			bad++
		}
	}
	if bad != 1 {
		t.Fatalf("want the sync import rejected, got %d rejections", bad)
	}
}
