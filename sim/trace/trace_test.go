package trace

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"
)

type clock struct{ now time.Duration }

func (c *clock) Now() time.Duration { return c.now }

// TestStreamMatchesLines: the lines written through Stream are the lines kept, one per line,
// across many buffer flushes, and the hash does not depend on the writer.
func TestStreamMatchesLines(t *testing.T) {
	c := &clock{}
	kept := New(c, true)
	var buf bytes.Buffer
	written := New(c, false)
	written.Stream(&buf)
	for i := 0; i < 5000; i++ {
		c.now = time.Duration(i) * time.Millisecond
		kept.End(kept.Begin("op issue").Int("id", i).Quoted("err", "x"))
		written.End(written.Begin("op issue").Int("id", i).Quoted("err", "x"))
	}
	if err := written.Flush(); err != nil {
		t.Fatal(err)
	}
	want := strings.Join(kept.Lines(), "\n") + "\n"
	if buf.String() != want {
		t.Fatalf("written trace differs from the kept lines (%d and %d bytes)", buf.Len(), len(want))
	}
	if kept.Sum() != written.Sum() {
		t.Fatal("the hash depends on the writer")
	}
}

type failing struct{}

func (failing) Write([]byte) (int, error) { return 0, errors.New("disk full") }

// TestStreamError: a failed write is reported by Flush.
func TestStreamError(t *testing.T) {
	tr := New(&clock{}, false)
	tr.Stream(failing{})
	tr.End(tr.Begin("x"))
	if err := tr.Flush(); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("want the write error, got %v", err)
	}
}
