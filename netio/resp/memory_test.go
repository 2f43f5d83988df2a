package resp

import (
	"io"
	"runtime"
	"strconv"
	"testing"
)

// largeBulk returns the encoding of a bulk string of n bytes.
func largeBulk(n int) []byte {
	b := make([]byte, 0, n+32)
	b = append(b, '$')
	b = strconv.AppendInt(b, int64(n), 10)
	b = append(b, '\r', '\n')
	for i := 0; i < n; i++ {
		b = append(b, byte('a'+i%26))
	}
	return append(b, '\r', '\n')
}

// nullArray returns the encoding of an array of RESP3 nulls about wire bytes long.
func nullArray(wire int) []byte {
	k := wire / 3
	b := make([]byte, 0, 3*k+32)
	b = AppendArrayHeader(b, k)
	for i := 0; i < k; i++ {
		b = append(b, '_', '\r', '\n')
	}
	return b
}

// socketLike returns data in pieces of at most 256 KiB, as a socket read would.
type socketLike struct {
	data []byte
}

func (s *socketLike) Read(p []byte) (int, error) {
	if len(s.data) == 0 {
		return 0, io.EOF
	}
	n := copy(p[:min(len(p), 256<<10)], s.data)
	s.data = s.data[n:]
	return n, nil
}

// heapAfterGC returns the live heap after two collections.
func heapAfterGC() int64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

// largeReplyCases are the replies of issue 10: large bulk strings and a long array of RESP3
// nulls, whose memory must stay proportional to their wire size.
var largeReplyCases = []struct {
	name string
	wire func() []byte
}{
	{"bulk-64MiB", func() []byte { return largeBulk(64 << 20) }},
	{"nulls-50MB", func() []byte { return nullArray(50_000_000) }},
	{"bulk-500MB", func() []byte { return largeBulk(500_000_000) }},
}

// BenchmarkReaderLargeReply reads one large reply through a fresh Reader, then one small reply
// into a fresh Value, as a connection does for the command after a large one. B/op is what one
// large reply allocates. It reports the wire size, the live heap while the large reply is
// held (held-B), and the live heap the Reader keeps once the large reply is dropped
// (retained-B), both measured with runtime.ReadMemStats after GC.
func BenchmarkReaderLargeReply(b *testing.B) {
	for _, tc := range largeReplyCases {
		b.Run(tc.name, func(b *testing.B) {
			data := tc.wire()
			small := []byte("+OK\r\n")
			var held, retained int64
			b.ReportAllocs()
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				b.StopTimer()
				base := heapAfterGC()
				src := &socketLike{data: data}
				b.StartTimer()
				r := NewReader(src, nil)
				var v Value
				if err := r.Read(&v); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				held = heapAfterGC() - base
				runtime.KeepAlive(&v)
				v = Value{}
				src.data = small
				var w Value
				if err := r.Read(&w); err != nil {
					b.Fatal(err)
				}
				retained = heapAfterGC() - base
				runtime.KeepAlive(r)
				b.StartTimer()
			}
			b.ReportMetric(float64(len(data)), "wire-B")
			b.ReportMetric(float64(held), "held-B")
			b.ReportMetric(float64(held)/float64(len(data)), "held/wire")
			b.ReportMetric(float64(retained), "retained-B")
		})
	}
}

// TestLargeReplyMemory reads large replies through a Reader and checks, with
// runtime.ReadMemStats after GC, the two memory promises of issue 10: the bound (reading a reply
// allocates at most about twice its wire size, and holding it costs at most its wire size, for
// a bulk string and for an array of RESP3 nulls alike) and the shrink (once the reply is dropped
// and a small one read, the Reader keeps only a small buffer). Before the compact storage, a
// 64 MiB bulk string allocated 5 times its size and left 128 MiB in the Reader; an array of
// nulls held 36 times its wire size.
func TestLargeReplyMemory(t *testing.T) {
	cases := []struct {
		name string
		wire []byte
	}{
		{"bulk-64MiB", largeBulk(64 << 20)},
		{"nulls-30MB", nullArray(30_000_000)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			wire := int64(len(tc.wire))
			src := &socketLike{data: tc.wire}
			var before, after runtime.MemStats
			base := heapAfterGC()
			runtime.ReadMemStats(&before)
			r := NewReader(src, nil)
			var v Value
			if err := r.Read(&v); err != nil {
				t.Fatal(err)
			}
			runtime.ReadMemStats(&after)
			allocated := int64(after.TotalAlloc - before.TotalAlloc)
			held := heapAfterGC() - base
			if v.Len() == 0 && len(v.Str) == 0 {
				t.Fatal("empty value")
			}
			v = Value{}
			src.data = []byte("+OK\r\n")
			var w Value
			if err := r.Read(&w); err != nil {
				t.Fatal(err)
			}
			retained := heapAfterGC() - base
			runtime.KeepAlive(r)
			t.Logf("wire %d B: allocated %d B (%.2fx), held %d B (%.2fx), retained %d B",
				wire, allocated, float64(allocated)/float64(wire), held, float64(held)/float64(wire), retained)
			if allocated > 2*wire+1<<20 {
				t.Errorf("reading allocated %d B for %d wire bytes, want at most twice", allocated, wire)
			}
			if held > wire+1<<20 {
				t.Errorf("holding the reply costs %d B for %d wire bytes, want at most its wire size", held, wire)
			}
			if retained > 64<<10 {
				t.Errorf("the Reader retains %d B after the reply was dropped", retained)
			}
		})
	}
}
