package client_test

import (
	"encoding/json"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// module is the import path of respire's module.
const module = "github.com/respire-go/respire"

// surfaceAllowed lists the types of other packages of the module that client's exported API may
// name, each with its reason. Everything else of the module (fsm, engine and engine/config,
// netio and netio/wire, sim, internal) is an implementation package: a user of client must never
// need to import it to read a field, call a method or match an error.
var surfaceAllowed = map[string]string{
	// The RESP value of raw commands (Do, Eval, ...) and of the typed commands whose reply has
	// no fixed shape: the codec's data type, with its As methods and KindError.
	"netio/resp.Value": "raw replies",
	// The codec's error for a malformed or oversized reply; client.ProtocolError names it so
	// that errors.As matches what the codec produces deep inside a connection failure.
	"netio/resp.ProtocolError": "codec error matched with errors.As",
}

// surfaceLeak is one reference from client's exported API to an implementation package.
type surfaceLeak struct {
	// path locates the reference: "Options.ReconnectPolicy", "Client.Subscribe(out).Ended(out)".
	path string
	// target is the type named, relative to the module: "fsm.Policy".
	target string
}

// surfaceWalker collects the implementation types an exported API refers to.
type surfaceWalker struct {
	own   string // the import path of the package whose API is walked
	seen  map[*types.Named]bool
	leaks []surfaceLeak
}

// surfaceLeaks walks every exported identifier of pkg: constants, variables, functions, types
// (aliases resolved), and, through every type it reaches, exported fields (and the fields
// promoted from embedded ones), the method sets of T and *T, parameters and results, elements,
// keys, type arguments and constraints. A named type of another package ends the walk there:
// its own API is its package's concern.
func surfaceLeaks(pkg *types.Package) []surfaceLeak {
	w := &surfaceWalker{own: pkg.Path(), seen: map[*types.Named]bool{}}
	scope := pkg.Scope()
	for _, name := range scope.Names() {
		obj := scope.Lookup(name)
		if !obj.Exported() {
			continue
		}
		w.walk(name, obj.Type())
	}
	return w.leaks
}

func (w *surfaceWalker) walk(path string, t types.Type) {
	switch t := t.(type) {
	case *types.Alias:
		w.walk(path, types.Unalias(t))
	case *types.Named:
		obj := t.Obj()
		if obj.Pkg() != nil && obj.Pkg().Path() != w.own {
			w.foreign(path, obj)
			for i := 0; i < t.TypeArgs().Len(); i++ {
				w.walk(path+"[]", t.TypeArgs().At(i))
			}
			return
		}
		for i := 0; i < t.TypeArgs().Len(); i++ {
			w.walk(path+"[]", t.TypeArgs().At(i))
		}
		if w.seen[t] {
			return
		}
		w.seen[t] = true
		if tp := t.TypeParams(); tp != nil {
			for i := 0; i < tp.Len(); i++ {
				w.walk(path+"["+tp.At(i).Obj().Name()+"]", tp.At(i).Constraint())
			}
		}
		ms := types.NewMethodSet(types.NewPointer(t))
		for i := 0; i < ms.Len(); i++ {
			if m := ms.At(i).Obj(); m.Exported() {
				w.walk(path+"."+m.Name(), m.Type())
			}
		}
		w.walk(path, t.Underlying())
	case *types.Struct:
		for i := 0; i < t.NumFields(); i++ {
			f := t.Field(i)
			// An embedded field of an unexported type still promotes its exported fields.
			if f.Exported() || f.Embedded() {
				w.walk(path+"."+f.Name(), f.Type())
			}
		}
	case *types.Interface:
		for i := 0; i < t.NumMethods(); i++ {
			if m := t.Method(i); m.Exported() {
				w.walk(path+"."+m.Name(), m.Type())
			}
		}
		for i := 0; i < t.NumEmbeddeds(); i++ {
			w.walk(path, t.EmbeddedType(i))
		}
	case *types.Union:
		for i := 0; i < t.Len(); i++ {
			w.walk(path, t.Term(i).Type())
		}
	case *types.Signature:
		for i := 0; i < t.Params().Len(); i++ {
			w.walk(path+"(in)", t.Params().At(i).Type())
		}
		for i := 0; i < t.Results().Len(); i++ {
			w.walk(path+"(out)", t.Results().At(i).Type())
		}
	case *types.Pointer:
		w.walk(path, t.Elem())
	case *types.Slice:
		w.walk(path, t.Elem())
	case *types.Array:
		w.walk(path, t.Elem())
	case *types.Map:
		w.walk(path, t.Key())
		w.walk(path, t.Elem())
	case *types.Chan:
		w.walk(path, t.Elem())
	case *types.TypeParam:
		w.walk(path, t.Constraint())
	}
}

// foreign records obj, a named type of another package, when it belongs to the module and is
// not allowed.
func (w *surfaceWalker) foreign(path string, obj *types.TypeName) {
	rel, ok := strings.CutPrefix(obj.Pkg().Path(), module+"/")
	if !ok {
		return
	}
	target := rel + "." + obj.Name()
	if _, allowed := surfaceAllowed[target]; allowed {
		return
	}
	w.leaks = append(w.leaks, surfaceLeak{path: path, target: target})
}

// exportImporter returns an importer that reads the compiler's export data of client, of the
// extra packages named, and of everything they depend on (go list -export), so that the walk
// sees the API exactly as the compiler does, generated files and aliases included.
func exportImporter(t *testing.T, fset *token.FileSet, extra ...string) types.ImporterFrom {
	t.Helper()
	args := append([]string{"list", "-export", "-deps", "-json=ImportPath,Export", "."}, extra...)
	out, err := exec.Command("go", args...).Output()
	if err != nil {
		t.Fatalf("go list -export: %v", err)
	}
	files := map[string]string{}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p struct{ ImportPath, Export string }
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		files[p.ImportPath] = p.Export
	}
	for _, p := range []string{module + "/client", module + "/fsm", module + "/engine", module + "/netio/resp"} {
		if files[p] == "" {
			t.Fatalf("go list -export gave no export data for %s", p)
		}
	}
	return importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		f, ok := files[path]
		if !ok || f == "" {
			return nil, os.ErrNotExist
		}
		return os.Open(f)
	}).(types.ImporterFrom)
}

// TestExportedAPIOwnsItsTypes: nothing exported by client refers to a type of fsm, engine,
// netio (but the two codec types of surfaceAllowed) or any other implementation package, so that
// a user of client never imports them. See docs/architecture.md, "The public API".
func TestExportedAPIOwnsItsTypes(t *testing.T) {
	fset := token.NewFileSet()
	pkg, err := exportImporter(t, fset).Import(module + "/client")
	if err != nil {
		t.Fatal(err)
	}
	if n := len(pkg.Scope().Names()); n < 200 {
		t.Fatalf("client's export data lists only %d identifiers", n)
	}
	for _, l := range surfaceLeaks(pkg) {
		t.Errorf("client.%s refers to %s, an implementation type: define a client type and convert at the boundary", l.path, l.target)
	}
}

// leakySource is the positive control's package: each declaration named leak* refers to an
// implementation type in a way the walk must see, and each named fine* only to allowed types.
const leakySource = `package leaky

import (
	"context"

	"github.com/respire-go/respire/engine"
	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/netio/resp"
)

type LeakAlias = fsm.Policy

type LeakField struct {
	Policy *fsm.Policy
	hidden engine.Endpoint
}

type LeakMethod struct{}

func (LeakMethod) Source() fsm.Source       { return 0 }
func (*LeakMethod) Change(engine.StateChange) {}

type LeakCallback struct {
	On func(map[string][]chan engine.StateChange)
}

type inner struct {
	Endpoint engine.Endpoint
}

type LeakPromoted struct {
	*inner
}

type LeakGeneric[T any] struct{ V T }

var LeakInstance LeakGeneric[fsm.EndReason]

type LeakInterface interface {
	Policy() *LeakAlias
}

const LeakConst = fsm.EndClosed

func LeakFunc(context.Context, ...fsm.Topic) error { return nil }

type FineValue struct {
	V      resp.Value
	Err    *resp.ProtocolError
	policy *fsm.Policy
}

func (FineValue) unexported() fsm.Source { return 0 }

const FineDuration = fsm.DelayCeiling

func FineFunc(context.Context) (resp.Value, error) { return resp.Value{}, nil }
`

// TestExportedAPIWalkCatches is the walk's positive control: it type-checks leakySource against
// the module's real fsm, engine and resp, and expects every leak, and nothing else.
func TestExportedAPIWalkCatches(t *testing.T) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "leaky.go", leakySource, 0)
	if err != nil {
		t.Fatal(err)
	}
	conf := types.Config{Importer: exportImporter(t, fset)}
	pkg, err := conf.Check("example.com/leaky", fset, []*ast.File{f}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range surfaceLeaks(pkg) {
		got = append(got, l.path+" -> "+l.target)
	}
	slices.Sort(got)
	want := []string{
		"LeakAlias -> fsm.Policy",
		"LeakCallback.On(in) -> engine.StateChange",
		"LeakConst -> fsm.EndReason",
		"LeakField.Policy -> fsm.Policy",
		"LeakFunc(in) -> fsm.Topic",
		"LeakInstance.V -> fsm.EndReason",
		"LeakInstance[] -> fsm.EndReason",
		"LeakInterface.Policy(out) -> fsm.Policy",
		"LeakMethod.Change(in) -> engine.StateChange",
		"LeakMethod.Source(out) -> fsm.Source",
		"LeakPromoted.inner.Endpoint -> engine.Endpoint",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("the walk found:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}
