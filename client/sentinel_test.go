package client

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cockroachdb/errors"

	"github.com/respire-go/respire/netio"
	"github.com/respire-go/respire/netio/resp"
)

// TestSentinelsPrintNoStack: every exported sentinel error prints its message alone with %+v
// (cockroachdb/errors.New would print the stack of package initialization). The package's source
// is scanned so that a sentinel added later cannot be forgotten here.
func TestSentinelsPrintNoStack(t *testing.T) {
	sentinels := map[string]error{
		"ErrClosed": ErrClosed, "ErrUnknownOutcome": ErrUnknownOutcome, "ErrReconnectLimit": ErrReconnectLimit,
		"ErrAdminDisabled": ErrAdminDisabled, "ErrSessionCommand": ErrSessionCommand, "ErrTooManyWaiters": ErrTooManyWaiters, "ErrProtocol": ErrProtocol,
		"ErrNoCredentialProvider": ErrNoCredentialProvider, "ErrTxConflict": ErrTxConflict,
		"ErrDedicatedClosed": ErrDedicatedClosed, "ErrDedicatedBusy": ErrDedicatedBusy,
		"ErrSubscriptionEnded": ErrSubscriptionEnded, "ErrNotRun": ErrNotRun, "ErrKeyPrefix": ErrKeyPrefix,
		"ErrCursorLost": ErrCursorLost, "ErrIncompleteTopology": ErrIncompleteTopology, "ErrTxRetry": ErrTxRetry,
		"ErrHookReplay": ErrHookReplay, "ErrHookDropped": ErrHookDropped,
		"ErrNotUnknownOutcome": ErrNotUnknownOutcome, "ErrNoIdentity": ErrNoIdentity,
		"ErrNotPrimary": ErrNotPrimary, "ErrStaleSentinel": ErrStaleSentinel,
		"ErrNoReadServer": ErrNoReadServer, "ErrJournalCaptureOff": ErrJournalCaptureOff,
	}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			gen, ok := decl.(*ast.GenDecl)
			if !ok || gen.Tok != token.VAR {
				continue
			}
			for _, spec := range gen.Specs {
				for _, id := range spec.(*ast.ValueSpec).Names {
					if id.IsExported() && strings.HasPrefix(id.Name, "Err") {
						if _, ok := sentinels[id.Name]; !ok {
							t.Errorf("%s (%s) is not checked by this test: add it", id.Name, name)
						}
					}
				}
			}
		}
	}
	sentinels["netio.ErrClosed"] = netio.ErrClosed
	sentinels["resp.ErrIncomplete"] = resp.ErrIncomplete
	for name, err := range sentinels {
		for _, verb := range []string{"%+v", "%#v"} {
			if got := fmt.Sprintf(verb, err); verb == "%+v" && got != err.Error() {
				t.Errorf("%s printed with %s:\n%s", name, verb, got)
			} else if strings.Contains(got, ".go:") || strings.Contains(got, "stack") {
				t.Errorf("%s printed with %s shows a stack:\n%s", name, verb, got)
			}
		}
		if !strings.HasPrefix(err.Error(), "respire: ") {
			t.Errorf("%s = %q lacks the respire: prefix", name, err)
		}
		// Still matched by identity, through wrapping, with the standard and cockroachdb helpers.
		wrapped := fmt.Errorf("context: %w", errors.Wrap(err, "more"))
		if !errors.Is(wrapped, err) {
			t.Errorf("%s is not matched through wrapping", name)
		}
		for other, o := range sentinels {
			if other != name && errors.Is(err, o) {
				t.Errorf("%s matches %s", name, other)
			}
		}
	}
}
