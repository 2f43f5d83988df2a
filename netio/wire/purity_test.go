package wire

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// allowedImports are the only packages wire's non-test code may import: respire's pure layers
// and the pure computation of the standard library. Nothing that reads a clock, does I/O, opens
// sockets, spawns goroutines, synchronizes, draws global randomness or logs; and not netio, which
// will drive this package and so must not be driven by it.
var allowedImports = map[string]bool{
	"github.com/respire-go/respire/fsm":        true,
	"github.com/respire-go/respire/netio/resp": true,
	"bytes": true, "cmp": true, "encoding/binary": true, "errors": true, "fmt": true, "math": true,
	"math/bits": true, "slices": true, "sort": true, "strconv": true, "strings": true, "time": true,
	"unicode": true, "unicode/utf8": true,
}

// forbiddenTimeCalls are the functions of package time that read the clock or start timers.
var forbiddenTimeCalls = map[string]bool{
	"Now": true, "Since": true, "Until": true, "Sleep": true, "After": true, "AfterFunc": true,
	"NewTimer": true, "NewTicker": true, "Tick": true,
}

func TestPurityBoundary(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		checked++
		for _, problem := range impurities(f, fset) {
			t.Errorf("%s: %s", name, problem)
		}
	}
	if checked == 0 {
		t.Fatal("no source files checked")
	}
}

// impurities lists the imports outside allowedImports, go and select statements, channel types
// and clock-reading calls of package time in f.
func impurities(f *ast.File, fset *token.FileSet) []string {
	var out []string
	for _, imp := range f.Imports {
		path, _ := strconv.Unquote(imp.Path.Value)
		if !allowedImports[path] {
			out = append(out, "imports "+strconv.Quote(path)+": wire must stay pure (no clock, I/O, sockets, goroutines, sync, global randomness or logging)")
		}
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.GoStmt:
			out = append(out, fset.Position(n.Pos()).String()+": go statement")
		case *ast.SelectStmt:
			out = append(out, fset.Position(n.Pos()).String()+": select statement")
		case *ast.ChanType:
			out = append(out, fset.Position(n.Pos()).String()+": channel type")
		case *ast.SelectorExpr:
			if id, ok := n.X.(*ast.Ident); ok && id.Name == "time" && forbiddenTimeCalls[n.Sel.Name] {
				out = append(out, fset.Position(n.Pos()).String()+": time."+n.Sel.Name+" reads the clock")
			}
		}
		return true
	})
	return out
}

// TestPurityCheckerCatches is the lint's positive control: every kind of impurity planted in a
// file is reported.
func TestPurityCheckerCatches(t *testing.T) {
	src := `package wire
import (
	"net"
	"os"
	"sync"
	"time"
	"math/rand"
	"log"
	"github.com/respire-go/respire/netio"
	"github.com/respire-go/respire/netio/resp"
)
var mu sync.Mutex
func bad() {
	go func() {}()
	_ = time.Now()
	var c chan int
	select {}
}`
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "planted.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(impurities(f, fset), "\n")
	for _, want := range []string{`imports "net"`, `imports "os"`, `imports "sync"`, `imports "math/rand"`, `imports "log"`,
		`imports "github.com/respire-go/respire/netio"`, "go statement", "time.Now", "channel type", "select statement"} {
		if !strings.Contains(got, want) {
			t.Errorf("planted %s not reported; got:\n%s", want, got)
		}
	}
	for _, allowed := range []string{`"time"`, `"github.com/respire-go/respire/netio/resp"`} {
		if strings.Contains(got, "imports "+allowed) {
			t.Errorf("allowed import %s reported", allowed)
		}
	}
}
