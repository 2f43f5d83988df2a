// Command capture starts a throwaway redis-server (through netio/redistest, as the tests do),
// asks it to describe every command and subcommand (COMMAND INFO and COMMAND DOCS) and writes
// the answer to internal/command/testdata/commands.json, the input of the table generator. It
// then starts a sentinel group and writes what a redis-sentinel says of the commands only
// sentinels have (SENTINEL and its subcommands) to internal/command/testdata/sentinel.json.
//
// Run it from the repository root when the Redis version the project targets changes, then
// run go generate ./internal/command and commit both files:
//
//	go run ./internal/command/capture
//	go generate ./internal/command
//
// Flags: -o and -sentinel name the output files.
package main

import (
	"flag"
	"fmt"
	"os"
	"testing"

	"github.com/respire-go/respire/internal/command/internal/capture"
	"github.com/respire-go/respire/netio/redistest"
)

func main() {
	out := flag.String("o", "internal/command/testdata/commands.json", "output file")
	sentinelOut := flag.String("sentinel", "internal/command/testdata/sentinel.json", "output file of the sentinel commands")
	flag.Parse()
	t := &runner{}
	code := 0
	func() {
		defer t.cleanup()
		defer func() {
			if r := recover(); r != nil {
				if _, ok := r.(stop); !ok {
					panic(r)
				}
				code = 1
			}
		}()
		srv := redistest.Start(t, redistest.Config{})
		doc, err := capture.Capture(srv.Addr())
		if err != nil {
			t.Fatalf("capture: %v", err)
		}
		if err := os.WriteFile(*out, doc, 0o644); err != nil {
			t.Fatalf("capture: %v", err)
		}
		fmt.Fprintf(os.Stderr, "capture: wrote %s (%d bytes) from redis-server %s\n", *out, len(doc), redistest.RedisVersion())
		group := redistest.StartSentinelGroup(t, redistest.SentinelConfig{})
		sdoc, err := capture.CaptureSentinel(group.SentinelAddrs()[0])
		if err != nil {
			t.Fatalf("capture: %v", err)
		}
		if err := os.WriteFile(*sentinelOut, sdoc, 0o644); err != nil {
			t.Fatalf("capture: %v", err)
		}
		fmt.Fprintf(os.Stderr, "capture: wrote %s (%d bytes) from redis-sentinel\n", *sentinelOut, len(sdoc))
	}()
	os.Exit(code)
}

// stop unwinds main after a fatal error so that the server is still stopped.
type stop struct{}

// runner lets redistest start a server outside a test: it implements the few testing.TB
// methods redistest calls (the embedded interface is nil; anything else panics).
type runner struct {
	testing.TB
	cleanups []func()
}

func (r *runner) Helper()          {}
func (r *runner) Name() string     { return "capture" }
func (r *runner) Cleanup(f func()) { r.cleanups = append(r.cleanups, f) }

func (r *runner) cleanup() {
	for i := len(r.cleanups) - 1; i >= 0; i-- {
		r.cleanups[i]()
	}
}

func (r *runner) TempDir() string {
	dir, err := os.MkdirTemp("", "respire-capture-")
	if err != nil {
		r.Fatalf("capture: %v", err)
	}
	r.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

func (r *runner) Logf(format string, args ...any) { fmt.Fprintf(os.Stderr, format+"\n", args...) }

func (r *runner) Fatalf(format string, args ...any) {
	r.Logf(format, args...)
	panic(stop{})
}

func (r *runner) Fatal(args ...any) {
	fmt.Fprintln(os.Stderr, args...)
	panic(stop{})
}

func (r *runner) Skipf(format string, args ...any) { r.Fatalf(format, args...) }
