package resp

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
)

// countingReader counts calls to Read.
type countingReader struct {
	r     io.Reader
	calls int
}

func (c *countingReader) Read(p []byte) (int, error) {
	c.calls++
	return c.r.Read(p)
}

// scriptReader replays a fixed sequence of results.
type scriptReader struct {
	steps []step
}

type step struct {
	data string
	err  error
}

func (s *scriptReader) Read(p []byte) (int, error) {
	if len(s.steps) == 0 {
		return 0, io.EOF
	}
	st := &s.steps[0]
	n := copy(p, st.data)
	st.data = st.data[n:]
	if st.data == "" {
		s.steps = s.steps[1:]
		return n, st.err
	}
	return n, nil
}

var errTimeout = errors.New("test timeout")

func TestReaderReadsOnlyWhenNeeded(t *testing.T) {
	src := &countingReader{r: strings.NewReader("+OK\r\n:1\r\n$3\r\nabc\r\n")}
	r := NewReader(src, nil)
	var v Value
	want := []Value{SimpleString("OK"), Int(1), BulkString("abc")}
	buffered := []int{13, 9, 0}
	for i, w := range want {
		if err := r.Read(&v); err != nil {
			t.Fatal(err)
		}
		if !Equal(v, w) {
			t.Fatalf("value %d = %v, want %v", i, v, w)
		}
		if src.calls != 1 {
			t.Fatalf("after value %d the underlying reader was called %d times, want 1", i, src.calls)
		}
		if r.Buffered() != buffered[i] {
			t.Fatalf("Buffered() = %d, want %d", r.Buffered(), buffered[i])
		}
	}
	if err := r.Read(&v); err != io.EOF {
		t.Fatalf("at end: %v, want io.EOF", err)
	}
}

func TestReaderByteAtATime(t *testing.T) {
	var stream []byte
	for _, tc := range validCases {
		stream = append(stream, tc.in...)
	}
	r := NewReader(&chunkReader{data: stream, sizes: []int{1}}, nil)
	var v Value
	for _, tc := range validCases {
		if err := r.Read(&v); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if !strictEqual(v, tc.want) {
			t.Fatalf("%s: got %v, want %v", tc.name, v, tc.want)
		}
	}
	if err := r.Read(&v); err != io.EOF {
		t.Fatalf("at end: %v", err)
	}
}

func TestReaderEOF(t *testing.T) {
	var v Value
	r := NewReader(strings.NewReader("$5\r\nhel"), nil)
	if err := r.Read(&v); err != io.ErrUnexpectedEOF {
		t.Fatalf("truncated value: %v, want io.ErrUnexpectedEOF", err)
	}
	r = NewReader(strings.NewReader(""), nil)
	if err := r.Read(&v); err != io.EOF {
		t.Fatalf("empty stream: %v, want io.EOF", err)
	}
	// Data delivered together with io.EOF is used first.
	r = NewReader(&scriptReader{steps: []step{{"+A\r\n+B\r\n", io.EOF}}}, nil)
	for _, want := range []string{"A", "B"} {
		if err := r.Read(&v); err != nil || !Equal(v, SimpleString(want)) {
			t.Fatalf("got %v, %v; want %s", v, err, want)
		}
	}
	if err := r.Read(&v); err != io.EOF {
		t.Fatalf("after data with EOF: %v", err)
	}
	// A cut mid-value delivered with EOF is unexpected.
	r = NewReader(&scriptReader{steps: []step{{"+A\r\n+B", io.EOF}}}, nil)
	if err := r.Read(&v); err != nil {
		t.Fatal(err)
	}
	if err := r.Read(&v); err != io.ErrUnexpectedEOF {
		t.Fatalf("cut with EOF: %v", err)
	}
}

func TestReaderResumesAfterReadError(t *testing.T) {
	src := &scriptReader{steps: []step{
		{"*2\r\n$5\r\nhel", nil},
		{"", errTimeout},
		{"lo\r\n:", errTimeout},
		{"7\r\n", nil},
	}}
	r := NewReader(src, nil)
	v := Int(99)
	if err := r.Read(&v); err != errTimeout {
		t.Fatalf("first Read: %v, want the timeout", err)
	}
	if !Equal(v, Int(99)) {
		t.Fatalf("destination modified on error: %v", v)
	}
	// The second timeout came with data, so it is reported only after that
	// data is used, and is then reported once.
	if err := r.Read(&v); err != errTimeout {
		t.Fatalf("second Read: %v, want the timeout", err)
	}
	if err := r.Read(&v); err != nil {
		t.Fatalf("third Read: %v", err)
	}
	if !Equal(v, ArrayOf(BulkString("hello"), Int(7))) {
		t.Fatalf("got %v", v)
	}
}

func TestReaderProtocolErrorSticky(t *testing.T) {
	r := NewReader(strings.NewReader("+OK\r\n*2\r\n:1\r\n:x\r\n+never\r\n"), nil)
	var v Value
	if err := r.Read(&v); err != nil {
		t.Fatal(err)
	}
	err := r.Read(&v)
	var pe *ProtocolError
	if !errors.As(err, &pe) {
		t.Fatalf("got %v, want a ProtocolError", err)
	}
	if pe.Offset != 14 {
		t.Fatalf("offset %d, want the stream offset 14", pe.Offset)
	}
	if again := r.Read(&v); again != err {
		t.Fatalf("error not sticky: %v", again)
	}
	r.Reset(strings.NewReader(":5\r\n"))
	if err := r.Read(&v); err != nil || !Equal(v, Int(5)) {
		t.Fatalf("after Reset: %v, %v", v, err)
	}
}

// TestReaderHostileHeader checks that the buffer grows with the data that
// actually arrives, not with an announced length.
func TestReaderHostileHeader(t *testing.T) {
	big := &Limits{MaxBulkLen: 1 << 40, MaxReplyLen: 1 << 40}
	data := "$2000000000\r\n" + strings.Repeat("x", 1<<20)
	r := NewReader(&chunkReader{data: []byte(data), sizes: []int{4096}}, big)
	var v Value
	if err := r.Read(&v); err != io.ErrUnexpectedEOF {
		t.Fatalf("got %v, want io.ErrUnexpectedEOF", err)
	}
	if c := cap(r.buf); c > readerInitialSize {
		t.Fatalf("buffer grew to %d bytes for a payload it need not hold", c)
	}
	if c := cap(r.dec.out); c > 2<<20 {
		t.Fatalf("storage grew to %d bytes for 1 MiB of data", c)
	}
	if v.mem != nil {
		t.Fatal("the destination got storage for an incomplete value")
	}
	// With the default limits the header is refused before its data is read.
	src := &countingReader{r: strings.NewReader(data)}
	r = NewReader(src, nil)
	err := r.Read(&v)
	var pe *ProtocolError
	if !errors.As(err, &pe) || pe.Limit != "MaxBulkLen" {
		t.Fatalf("got %v, want a MaxBulkLen error", err)
	}
	if src.calls != 1 || cap(r.buf) > 4096 {
		t.Fatalf("read %d times into %d bytes before refusing", src.calls, cap(r.buf))
	}
}

func TestReaderBufferBoundedByMaxReplyLen(t *testing.T) {
	lim := &Limits{MaxReplyLen: 10000, MaxLineLen: 100}
	// Many small elements: the value outgrows MaxReplyLen line by line.
	stream := "*100000\r\n" + strings.Repeat(":1\r\n", 100000)
	r := NewReader(&chunkReader{data: []byte(stream), sizes: []int{777}}, lim)
	var v Value
	err := r.Read(&v)
	var pe *ProtocolError
	if !errors.As(err, &pe) || pe.Limit != "MaxReplyLen" {
		t.Fatalf("got %v, want a MaxReplyLen error", err)
	}
	if c := cap(r.buf); c > 10000+100+64 {
		t.Fatalf("buffer grew to %d", c)
	}
	// A value exactly at the limit is fine.
	exact := "$9991\r\n" + strings.Repeat("y", 9991) + "\r\n"
	if len(exact) != 10000 {
		t.Fatalf("test value is %d bytes", len(exact))
	}
	r = NewReader(&chunkReader{data: []byte(exact), sizes: []int{333}}, lim)
	if err := r.Read(&v); err != nil || len(v.Str) != 9991 {
		t.Fatalf("value at the limit: %v", err)
	}
}

// TestReaderLargeArrayChunked reads a large reply arriving in small
// pieces; the resumable scan keeps this linear.
func TestReaderLargeArrayChunked(t *testing.T) {
	const n = 200000
	var stream []byte
	stream = AppendArrayHeader(stream, n)
	for i := range n {
		stream = AppendBulkInt(stream, int64(i))
	}
	r := NewReader(&chunkReader{data: stream, sizes: []int{1000, 17, 4096}}, nil)
	var v Value
	if err := r.Read(&v); err != nil {
		t.Fatal(err)
	}
	if v.Len() != n || string(v.Elem(n-1).Str) != "199999" || string(v.Elem(12345).Str) != "12345" {
		t.Fatalf("got %d elements", v.Len())
	}
}

type zeroReader struct{}

func (zeroReader) Read([]byte) (int, error) { return 0, nil }

type liarReader struct{}

func (liarReader) Read(p []byte) (int, error) { return len(p) + 1, nil }

func TestReaderMisbehavingSource(t *testing.T) {
	var v Value
	if err := NewReader(zeroReader{}, nil).Read(&v); err != io.ErrNoProgress {
		t.Errorf("endless empty reads: %v", err)
	}
	if err := NewReader(liarReader{}, nil).Read(&v); err == nil || !strings.HasPrefix(err.Error(), "respire: ") {
		t.Errorf("impossible count: %v", err)
	}
}

func TestReaderReadCommand(t *testing.T) {
	stream := string(AppendCommand(nil, "SET", "key", "va\r\nlue")) + "PING\r\n" + "*0\r\n" + "  GET   key \n" +
		string(AppendCommand(nil, "DEL", "a", "b"))
	want := [][]string{{"SET", "key", "va\r\nlue"}, {"PING"}, {}, {"GET", "key"}, {"DEL", "a", "b"}}
	for _, size := range []int{1, 3, 1000} {
		r := NewReader(&chunkReader{data: []byte(stream), sizes: []int{size}}, nil)
		var args [][]byte
		for i, w := range want {
			if err := r.ReadCommand(&args); err != nil {
				t.Fatalf("chunk %d, command %d: %v", size, i, err)
			}
			if got := argStrings(args); strings.Join(got, "|") != strings.Join(w, "|") || len(got) != len(w) {
				t.Fatalf("chunk %d, command %d: got %q, want %q", size, i, got, w)
			}
		}
		if err := r.ReadCommand(&args); err != io.EOF {
			t.Fatalf("at end: %v", err)
		}
	}
	r := NewReader(strings.NewReader("*1\r\n:1\r\n"), nil)
	var args [][]byte
	err := r.ReadCommand(&args)
	var pe *ProtocolError
	if !errors.As(err, &pe) || pe.Offset != 4 {
		t.Fatalf("bad command: %v", err)
	}
}

func argStrings(args [][]byte) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = string(a)
	}
	return out
}

func TestReaderMatchesParse(t *testing.T) {
	// Reading a stream value by value gives what Parse gives on the
	// concatenation, value by value.
	var stream []byte
	for _, tc := range validCases {
		stream = append(stream, tc.in...)
	}
	r := NewReader(bytes.NewReader(stream), nil)
	var a, b Value
	for off := 0; off < len(stream); {
		n, err := Parse(stream[off:], &a, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Read(&b); err != nil {
			t.Fatal(err)
		}
		if !strictEqual(a, b) {
			t.Fatalf("at %d: Parse %v, Reader %v", off, a, b)
		}
		off += n
	}
}

// TestReaderPayloadStraightIntoStorage reads a bulk string larger than the buffer, whose payload
// the Reader reads straight into the value's storage, through a read error in the middle of the
// payload and a cut with EOF.
func TestReaderPayloadStraightIntoStorage(t *testing.T) {
	payload := strings.Repeat("0123456789", 10000)
	wire := "$100000\r\n" + payload + "\r\n+next\r\n"
	src := &askReader{r: &scriptReader{steps: []step{
		{wire[:5000], nil},
		{"", errTimeout},
		{wire[5000:60000], errTimeout},
		{wire[60000:], nil},
	}}}
	r := NewReader(src, nil)
	var v Value
	if err := r.Read(&v); err != errTimeout {
		t.Fatalf("first Read: %v", err)
	}
	if err := r.Read(&v); err != errTimeout {
		t.Fatalf("second Read: %v", err)
	}
	if err := r.Read(&v); err != nil || string(v.Str) != payload {
		t.Fatalf("third Read: %v, %d bytes", err, len(v.Str))
	}
	if v.StorageSize() != len(payload)+4 {
		t.Errorf("storage of %d bytes for a %d-byte payload, want it sized exactly", v.StorageSize(), len(payload))
	}
	if cap(r.buf) > readerInitialSize {
		t.Errorf("the buffer grew to %d for a payload it need not hold", cap(r.buf))
	}
	if src.largest <= readerInitialSize {
		t.Errorf("the largest read asked for %d bytes: the payload went through the buffer", src.largest)
	}
	if err := r.Read(&v); err != nil || !Equal(v, SimpleString("next")) {
		t.Fatalf("value after the payload: %v, %v", v, err)
	}
	r = NewReader(&scriptReader{steps: []step{{wire[:70000], io.EOF}}}, nil)
	if err := r.Read(&v); err != io.ErrUnexpectedEOF {
		t.Fatalf("payload cut by EOF: %v", err)
	}
}

// askReader records the largest read asked of it.
type askReader struct {
	r       io.Reader
	largest int
}

func (a *askReader) Read(p []byte) (int, error) {
	a.largest = max(a.largest, len(p))
	return a.r.Read(p)
}

// TestReaderBufferShrinks checks that a buffer grown for one long line goes back to its initial
// size once that value is read.
func TestReaderBufferShrinks(t *testing.T) {
	long := "+" + strings.Repeat("x", 200<<10) + "\r\n"
	r := NewReader(&chunkReader{data: []byte(long + ":1\r\n"), sizes: []int{8192}}, &Limits{MaxLineLen: 1 << 20})
	var v Value
	if err := r.Read(&v); err != nil || len(v.Str) != 200<<10 {
		t.Fatalf("long line: %v", err)
	}
	if cap(r.buf) > readerInitialSize {
		t.Errorf("buffer of %d bytes kept after the long line", cap(r.buf))
	}
	if err := r.Read(&v); err != nil || !Equal(v, Int(1)) {
		t.Fatalf("after the long line: %v, %v", v, err)
	}
}
