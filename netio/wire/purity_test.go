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

// allowedImports are the packages wire's non-test code may import freely: respire's pure layers
// and the pure computation of the standard library. Nothing that reads a clock, does I/O, opens
// sockets, spawns goroutines, synchronizes, draws global randomness or logs; and not netio, which
// drives this package and so must not be driven by it.
var allowedImports = map[string]bool{
	"github.com/respire-go/respire/fsm":        true,
	"github.com/respire-go/respire/netio/resp": true,
	"bytes": true, "cmp": true, "encoding/binary": true, "encoding/json": true, "errors": true, "fmt": true,
	"math": true, "math/bits": true, "slices": true, "sort": true, "strconv": true, "strings": true,
	"time": true, "unicode": true, "unicode/utf8": true,
}

// restrictedImports are packages wire may import for a few names only: the vocabulary it shares
// with its drivers, never a function that does what wire must not. wire names the engine's
// command and seam types (the engine runs goroutines and reads clocks, wire never calls it to);
// net's error types, to print and classify the failures sockets report (never a dial or a
// listen); context's cancellation error; slog's value type, so that a configuration holding a
// password logs redacted (never a logger); and the plant switch that only the simulator sets.
var restrictedImports = map[string]map[string]bool{
	"github.com/respire-go/respire/engine": {
		"Command": true, "Endpoint": true, "Stage": true, "StageQueued": true, "StageBuffered": true,
		"StageWriting": true, "StageAwaitingReply": true, "StageDone": true, "PubSubMessage": true,
		"PubSubReceiver": true,
	},
	"github.com/respire-go/respire/internal/plant": {"Set": true, "LateReplyToNextCaller": true,
		"TimeoutKeepsPairing": true, "PushCompletesCommand": true, "AckToWrongBatch": true},
	"net":      {"OpError": true, "DNSError": true},
	"context":  {"Canceled": true},
	"log/slog": {"Value": true, "StringValue": true},
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
	// restricted maps the file's local name of each restricted import to its path.
	restricted := map[string]string{}
	for _, imp := range f.Imports {
		path, _ := strconv.Unquote(imp.Path.Value)
		if _, ok := restrictedImports[path]; ok {
			name := path[strings.LastIndex(path, "/")+1:]
			if imp.Name != nil {
				name = imp.Name.Name
			}
			restricted[name] = path
			continue
		}
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
			if id, ok := n.X.(*ast.Ident); ok {
				if path, ok := restricted[id.Name]; ok && !restrictedImports[path][n.Sel.Name] {
					out = append(out, fset.Position(n.Pos()).String()+": uses "+id.Name+"."+n.Sel.Name+
						", which wire may not ("+strconv.Quote(path)+" is imported for a few names only)")
				}
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
	"github.com/respire-go/respire/engine"
	"github.com/respire-go/respire/netio"
	"github.com/respire-go/respire/netio/resp"
)
var mu sync.Mutex
func bad() {
	_ = engine.New
	var e engine.Endpoint
	_, _ = net.Dial("tcp", e.String())
	var op *net.OpError
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
	for _, want := range []string{"uses net.Dial", "uses engine.New", `imports "os"`, `imports "sync"`, `imports "math/rand"`, `imports "log"`,
		`imports "github.com/respire-go/respire/netio"`, "go statement", "time.Now", "channel type", "select statement"} {
		if !strings.Contains(got, want) {
			t.Errorf("planted %s not reported; got:\n%s", want, got)
		}
	}
	for _, allowed := range []string{`imports "time"`, `imports "github.com/respire-go/respire/netio/resp"`,
		`imports "net"`, `imports "github.com/respire-go/respire/engine"`, "uses net.OpError", "uses engine.Endpoint"} {
		if strings.Contains(got, allowed) {
			t.Errorf("allowed %s reported", allowed)
		}
	}
}
