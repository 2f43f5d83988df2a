package resp

import (
	"errors"
	"io"
	"strings"
	"testing"
)

// TestReaderReadBufferedTakesOnlyBufferedValues checks that ReadBuffered returns the whole values
// a read brought, never calls the underlying reader, and leaves a value cut by the end of the
// buffer for the next Read to finish.
func TestReaderReadBufferedTakesOnlyBufferedValues(t *testing.T) {
	src := &countingReader{r: &scriptReader{steps: []step{
		{data: "+OK\r\n:7\r\n$5\r\nhel"},
		{data: "lo\r\n*2\r\n:1\r\n:2\r\n"},
	}}}
	r := NewReader(src, nil)
	var v Value
	if ok, err := r.ReadBuffered(&v); ok || err != nil {
		t.Fatalf("ReadBuffered on an empty buffer = %v, %v; want false, nil", ok, err)
	}
	if src.calls != 0 {
		t.Fatalf("ReadBuffered called the underlying reader %d times", src.calls)
	}
	if err := r.Read(&v); err != nil || !Equal(v, SimpleString("OK")) {
		t.Fatalf("Read = %v, %v", v, err)
	}
	if ok, err := r.ReadBuffered(&v); !ok || err != nil || !Equal(v, Int(7)) {
		t.Fatalf("ReadBuffered = %v, %v, %v; want the buffered integer", ok, err, v)
	}
	// The bulk string is cut: nothing is returned, v is left alone, and no read happens.
	if ok, err := r.ReadBuffered(&v); ok || err != nil || !Equal(v, Int(7)) {
		t.Fatalf("ReadBuffered on a cut value = %v, %v, %v; want false, nil, v unchanged", ok, err, v)
	}
	if src.calls != 1 {
		t.Fatalf("underlying reads = %d, want 1", src.calls)
	}
	// Read continues the value ReadBuffered started.
	if err := r.Read(&v); err != nil || !Equal(v, BulkString("hello")) {
		t.Fatalf("Read after a cut value = %v, %v", v, err)
	}
	if ok, err := r.ReadBuffered(&v); !ok || err != nil || !Equal(v, ArrayOf(Int(1), Int(2))) {
		t.Fatalf("ReadBuffered = %v, %v, %v; want the buffered array", ok, err, v)
	}
	if r.Buffered() != 0 {
		t.Fatalf("Buffered = %d, want 0", r.Buffered())
	}
	if ok, err := r.ReadBuffered(&v); ok || err != nil {
		t.Fatalf("ReadBuffered at the end = %v, %v", ok, err)
	}
	if err := r.Read(&v); err != io.EOF {
		t.Fatalf("Read at the end = %v, want io.EOF", err)
	}
}

// TestReaderReadBufferedProtocolError checks that a malformed buffered value fails ReadBuffered
// with a sticky *ProtocolError whose offset counts from the start of the stream.
func TestReaderReadBufferedProtocolError(t *testing.T) {
	r := NewReader(&scriptReader{steps: []step{{data: ":1\r\n?x\r\n"}}}, nil)
	var v Value
	if err := r.Read(&v); err != nil {
		t.Fatal(err)
	}
	_, err := r.ReadBuffered(&v)
	var pe *ProtocolError
	if !errors.As(err, &pe) {
		t.Fatalf("ReadBuffered = %v, want a *ProtocolError", err)
	}
	if pe.Offset != 4 {
		t.Fatalf("offset = %d, want 4", pe.Offset)
	}
	if err2 := r.Read(&v); err2 != err {
		t.Fatalf("Read after the error = %v, want the same sticky error", err2)
	}
}

// TestReaderReadBufferedLeavesReadErrorToRead checks that an error the underlying reader returned
// with the last bytes is not lost: ReadBuffered takes the values, Read then returns the error.
func TestReaderReadBufferedLeavesReadErrorToRead(t *testing.T) {
	r := NewReader(&scriptReader{steps: []step{{data: ":1\r\n:2\r\n", err: errTimeout}}}, nil)
	var v Value
	if err := r.Read(&v); err != nil || !Equal(v, Int(1)) {
		t.Fatalf("Read = %v, %v", v, err)
	}
	if ok, err := r.ReadBuffered(&v); !ok || err != nil || !Equal(v, Int(2)) {
		t.Fatalf("ReadBuffered = %v, %v, %v", ok, err, v)
	}
	if err := r.Read(&v); err != errTimeout {
		t.Fatalf("Read = %v, want the underlying reader's error", err)
	}
}

// TestReaderReadAheadGrowsForAFullStream checks SetReadAhead: a stream that keeps the buffer
// full is read in fewer, larger reads, the buffer never exceeds the bound, every value arrives
// intact, and a Reader without read-ahead keeps reading 4 KiB at a time.
func TestReaderReadAheadGrowsForAFullStream(t *testing.T) {
	const values = 20000 // ":12345\r\n", 8 bytes each: 160,000 bytes
	stream := strings.Repeat(":12345\r\n", values)
	read := func(ahead int) (calls, size int) {
		src := &countingReader{r: strings.NewReader(stream)}
		r := NewReader(src, nil)
		r.SetReadAhead(ahead)
		var v Value
		for i := range values {
			if err := r.Read(&v); err != nil || v.Int != 12345 {
				t.Fatalf("value %d: %v, %v", i, v, err)
			}
			size = max(size, len(r.buf))
		}
		return src.calls, size
	}
	calls, size := read(0)
	if size != readerInitialSize || calls < len(stream)/readerInitialSize {
		t.Fatalf("without read-ahead: %d reads, buffer %d; want 4 KiB reads", calls, size)
	}
	calls, size = read(32 << 10)
	if size != 32<<10 {
		t.Fatalf("buffer grew to %d, want 32 KiB", size)
	}
	if want := 4 + len(stream)/(32<<10) + 1; calls > want {
		t.Fatalf("%d reads with read-ahead, want at most %d", calls, want)
	}
	if _, size = read(1 << 30); size != MaxReadAhead {
		t.Fatalf("read-ahead of 1 GiB grew the buffer to %d, want the bound %d", size, MaxReadAhead)
	}
}

// TestReaderReadAheadStaysSmallForAQuietStream checks that reads which do not fill the buffer
// never grow it.
func TestReaderReadAheadStaysSmallForAQuietStream(t *testing.T) {
	steps := make([]step, 300)
	for i := range steps {
		steps[i] = step{data: strings.Repeat(":1\r\n", 500)} // 2,000 bytes per read
	}
	r := NewReader(&scriptReader{steps: steps}, nil)
	r.SetReadAhead(32 << 10)
	var v Value
	for range 300 * 500 {
		if err := r.Read(&v); err != nil {
			t.Fatal(err)
		}
	}
	if len(r.buf) != readerInitialSize {
		t.Fatalf("buffer grew to %d for reads of 2,000 bytes", len(r.buf))
	}
}

// cutReader returns its stream in pieces of the lengths sizes gives, cycling through them.
type cutReader struct {
	data  []byte
	sizes []int
	i     int
}

func (c *cutReader) Read(p []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	n := min(len(p), len(c.data), c.sizes[c.i%len(c.sizes)])
	c.i++
	copy(p, c.data[:n])
	c.data = c.data[n:]
	return n, nil
}

// TestReaderReadBufferedMatchesParse reads every valid case as one stream, cut into pieces of
// many sizes, taking after each blocking Read every value ReadBuffered gives: the values are
// those Parse gives on the concatenation, in order, whatever the cuts.
func TestReaderReadBufferedMatchesParse(t *testing.T) {
	var stream []byte
	for _, tc := range validCases {
		stream = append(stream, tc.in...)
	}
	var want []Value
	for off := 0; off < len(stream); {
		var v Value
		n, err := Parse(stream[off:], &v, nil)
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, v)
		off += n
	}
	for _, sizes := range [][]int{{1}, {2, 3}, {7}, {64, 1, 5}, {4096}} {
		r := NewReader(&cutReader{data: stream, sizes: sizes}, nil)
		r.SetReadAhead(16 << 10)
		var got Value
		for i := 0; i < len(want); {
			if err := r.Read(&got); err != nil {
				t.Fatalf("sizes %v, value %d: %v", sizes, i, err)
			}
			for {
				if !strictEqual(want[i], got) {
					t.Fatalf("sizes %v, value %d: Reader %v, Parse %v", sizes, i, got, want[i])
				}
				i++
				if i == len(want) {
					break
				}
				ok, err := r.ReadBuffered(&got)
				if err != nil {
					t.Fatalf("sizes %v, value %d: %v", sizes, i, err)
				}
				if !ok {
					break
				}
			}
		}
		if err := r.Read(&got); err != io.EOF {
			t.Fatalf("sizes %v: after the last value: %v, want io.EOF", sizes, err)
		}
	}
}
