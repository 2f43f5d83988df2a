package topo_test

import (
	"bufio"
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/netio/resp"
	"github.com/respire-go/respire/netio/topo"
)

var update = flag.Bool("update", false, "rewrite the golden files of testdata/cluster")

// capturedReply is one entry of a testdata manifest.
type capturedReply struct {
	file, kind string
	asked      fsm.Endpoint
	value      resp.Value
}

// loadCaptures reads the manifest of dir and parses every reply it lists.
func loadCaptures(t testing.TB, dir string) []capturedReply {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, "manifest.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []capturedReply
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) != 3 {
			t.Fatalf("manifest line %q", line)
		}
		asked, err := fsm.ParseEndpoint(fields[2])
		if err != nil {
			t.Fatal(err)
		}
		raw, err := os.ReadFile(filepath.Join(dir, fields[0]))
		if err != nil {
			t.Fatal(err)
		}
		c := capturedReply{file: fields[0], kind: fields[1], asked: asked}
		if n, err := resp.Parse(raw, &c.value, nil); err != nil || n != len(raw) {
			t.Fatalf("%s: %d of %d bytes, %v", c.file, n, len(raw), err)
		}
		out = append(out, c)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(out) == 0 {
		t.Fatalf("%s lists no reply", dir)
	}
	return out
}

// describe renders what this package and fsm make of a captured reply.
func describe(c capturedReply) string {
	var b strings.Builder
	if c.kind == "error" {
		b.WriteString("rejection: " + topo.ClassifyRejection(c.value).String() + "\n")
		if r, err := topo.ParseRedirect(c.value); err == nil {
			b.WriteString("redirect: " + r.String() + "\n")
			if ep, ok := r.Resolve(c.asked); ok {
				b.WriteString("resolved: " + ep.String() + "\n")
			} else {
				b.WriteString("resolved: no\n")
			}
		}
		return b.String()
	}
	r, err := parse(c.kind, c.value, c.asked)
	if err != nil {
		return "error: " + err.Error() + "\n"
	}
	top, ch := fsm.Topology{}.Apply(r)
	b.WriteString(r.String() + "\n\n")
	b.WriteString(ch.String() + "\n\n")
	b.WriteString(top.String() + "\n")
	return b.String()
}

// TestCapturedReplies checks the parse of every reply captured from a real Redis Cluster against
// its golden description (go test -run TestCapturedReplies -update rewrites them).
func TestCapturedReplies(t *testing.T) {
	dir := filepath.Join("testdata", "cluster", "real")
	for _, c := range loadCaptures(t, dir) {
		t.Run(c.file, func(t *testing.T) {
			got := describe(c)
			golden := filepath.Join(dir, strings.TrimSuffix(c.file, ".resp")+".golden")
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(want, []byte(got)) {
				t.Errorf("%s differs from %s:\n%s", c.file, golden, got)
			}
		})
	}
}
