package plant

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// readers are the directories whose code may import this package: the code that carries the
// bugs (engine, netio/wire) and the simulator, which switches them on.
var readers = []string{"engine", "netio/wire", "sim", "internal/plant"}

// mayImport reports whether code in dir (relative to the module root, slash-separated) may import
// this package.
func mayImport(dir string) bool {
	for _, r := range readers {
		if dir == r || strings.HasPrefix(dir, r+"/") {
			return true
		}
	}
	return false
}

// TestOnlyTheSimulatorAndTheCarriersImportPlant: no production package (client, netio, cmd, ...)
// can build a Set, so none can switch a bug on.
func TestOnlyTheSimulatorAndTheCarriersImportPlant(t *testing.T) {
	root := filepath.Join("..", "..")
	checked := 0
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) {
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
		rel, _ := filepath.Rel(root, filepath.Dir(path))
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if strings.HasSuffix(p, "/internal/plant") && !mayImport(filepath.ToSlash(rel)) {
				t.Errorf("%s imports internal/plant: only %v may", path, readers)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 50 {
		t.Fatalf("only %d source files checked", checked)
	}
}

func TestMayImportCatches(t *testing.T) {
	for dir, want := range map[string]bool{"client": false, "netio": false, "cmd/respire-sim": false, "bench": false,
		"engine": true, "netio/wire": true, "sim": true, "sim/node": true, "engine/enginetest": true} {
		if mayImport(dir) != want {
			t.Errorf("mayImport(%q) = %v", dir, !want)
		}
	}
}

func TestSet(t *testing.T) {
	var fired []Bug
	s := New(func(b Bug, id uint64) { fired = append(fired, b) }, IgnoreCancel, AckToWrongBatch)
	var none *Set
	if none.Has(IgnoreCancel) || none.Fire(IgnoreCancel, 1) {
		t.Fatal("a nil set plants nothing")
	}
	if !s.Has(IgnoreCancel) || s.Has(SendWithdrawn) || s.Fire(SendWithdrawn, 1) || !s.Fire(AckToWrongBatch, 2) {
		t.Fatal("set membership wrong")
	}
	if len(fired) != 1 || fired[0] != AckToWrongBatch {
		t.Fatalf("fired %v", fired)
	}
	for _, b := range Bugs() {
		if b.String() == "bug?" || b.String() == "" {
			t.Errorf("bug %d has no name", b)
		}
	}
	if len(Bugs()) != 9 {
		t.Fatalf("%d bugs", len(Bugs()))
	}
}
