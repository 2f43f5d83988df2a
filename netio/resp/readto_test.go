package resp

import (
	"bytes"
	"testing"

	"pgregory.net/rapid"
)

// TestReadBufferedToMatchesReadBuffered: on random streams of fast, slow, malformed and
// over-limit values under several limit sets, ReadBufferedTo either declines, consuming nothing,
// or reads exactly the value ReadBuffered reads from the same bytes (kind, null form, integer,
// string) and leaves the same bytes buffered; what it declines ReadBuffered still reads or fails
// on, as it would without it.
func TestReadBufferedToMatchesReadBuffered(t *testing.T) {
	taken := 0
	for _, lim := range []*Limits{nil, fastLimits, replyLimits, headerLimits} {
		rapid.Check(t, func(rt *rapid.T) {
			var data []byte
			for _, i := range rapid.SliceOfN(rapid.IntRange(0, len(fastPieces)-1), 1, 8).Draw(rt, "pieces") {
				data = append(data, fastPieces[i]...)
			}
			// The first value is read from the socket side (filling both buffers alike), the
			// rest from what is buffered.
			data = append([]byte(":1\r\n"), data...)
			to, ref := NewReader(bytes.NewReader(data), lim), NewReader(bytes.NewReader(data), lim)
			var a Arena
			var got, want Value
			if to.Read(&got) != nil || ref.Read(&want) != nil {
				rt.Fatal("first value")
			}
			for k := 0; ; k++ {
				before := to.Buffered()
				took := to.ReadBufferedTo(&got, &a)
				if !took && to.Buffered() != before {
					rt.Fatalf("value %d: declined but consumed %d bytes", k, before-to.Buffered())
				}
				ok, err := ref.ReadBuffered(&want)
				if took {
					if !ok || err != nil {
						rt.Fatalf("value %d: ReadBufferedTo took %v, ReadBuffered %v %v", k, got, ok, err)
					}
					if !strictEqual(got, want) || got.NullForm != want.NullForm || to.Buffered() != ref.Buffered() {
						rt.Fatalf("value %d: ReadBufferedTo %#v, ReadBuffered %#v", k, got, want)
					}
					taken++
					continue
				}
				okTo, errTo := to.ReadBuffered(&got)
				if okTo != ok || (errTo == nil) != (err == nil) {
					rt.Fatalf("value %d: after a decline %v %v, reference %v %v", k, okTo, errTo, ok, err)
				}
				if !ok || err != nil {
					return
				}
				if !strictEqual(got, want) {
					rt.Fatalf("value %d: after a decline %#v, reference %#v", k, got, want)
				}
			}
		})
	}
	if taken == 0 {
		t.Fatal("ReadBufferedTo never took a value: the check compared nothing")
	}
}
