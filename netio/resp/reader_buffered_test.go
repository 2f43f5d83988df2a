package resp

import (
	"errors"
	"io"
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
