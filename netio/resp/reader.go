package resp

import (
	"errors"
	"io"
)

// readerInitialSize is the initial buffer size of a Reader.
const readerInitialSize = 4096

// maxEmptyReads bounds how many consecutive (0, nil) results the
// underlying reader may return before Read gives up with
// io.ErrNoProgress.
const maxEmptyReads = 100

// Reader reads RESP values from an io.Reader through a private buffer. It
// calls the underlying Read only when the buffer does not yet hold a
// complete value, and resumes validating a partial value where it left
// off, so a large reply arriving in many pieces is scanned once, not once
// per piece.
//
// The buffer starts at 4 KiB and doubles only while a value that is still
// incomplete fills it, so it grows with the data actually received, never
// with what a length header announces. It never exceeds about
// Limits.MaxReplyLen plus Limits.MaxLineLen.
//
// A Reader is not safe for concurrent use.
type Reader struct {
	rd      io.Reader
	lim     limits
	buf     []byte
	r, w    int   // buf[r:w] holds unread bytes
	off     int64 // stream offset of buf[r]
	st      scanState
	stack   []frame
	partial bool  // st and stack describe the value at buf[r]
	err     error // sticky *ProtocolError
	rerr    error // pending error from the underlying reader
}

// NewReader returns a Reader that reads from rd and enforces lim (nil
// means the defaults).
func NewReader(rd io.Reader, lim *Limits) *Reader {
	return &Reader{rd: rd, lim: lim.resolve()}
}

// Reset discards all buffered data and any error and makes r read from rd,
// keeping its buffer for reuse.
func (r *Reader) Reset(rd io.Reader) {
	r.rd = rd
	r.r, r.w, r.off = 0, 0, 0
	r.partial = false
	r.err, r.rerr = nil, nil
}

// Buffered returns the number of bytes read from the underlying reader
// but not yet consumed as values.
func (r *Reader) Buffered() int { return r.w - r.r }

// Read reads exactly one value into *v, with the aliasing rules of Parse:
// the result lives in v's storage until the next Read or Parse into v.
//
// Errors: a *ProtocolError (whose Offset counts from the start of the
// stream) is sticky, since the stream cannot be resynchronised. An error
// from the underlying reader is returned once, after every complete value
// before it has been read, with io.EOF turned into io.ErrUnexpectedEOF if
// it cut a value short; io.EOF itself means the stream ended cleanly
// between values. After a non-EOF read error such as a timeout, Read may
// be called again and resumes where it stopped. On error *v is unchanged.
func (r *Reader) Read(v *Value) error {
	if r.err != nil {
		return r.err
	}
	for {
		if r.w > r.r {
			if !r.partial {
				r.st = scanState{}
				r.stack = append(r.stack[:0], frame{left: 1})
				r.partial = true
			}
			var err error
			r.stack, err = scan(r.buf[r.r:r.w], &r.st, r.stack, &r.lim)
			if err == nil {
				n := r.st.pos
				fill(r.buf[r.r:r.r+n], v, r.st.nodes, r.st.bytes)
				r.consume(n)
				r.partial = false
				return nil
			}
			if err != ErrIncomplete {
				r.err = r.streamError(err)
				r.partial = false
				return r.err
			}
		}
		if err := r.more(); err != nil {
			return err
		}
	}
}

// ReadCommand reads one command request into *args with the semantics of
// ParseCommand, for a server reading from a stream. An empty request
// ("*0", "*-1", or a blank inline line) yields an empty *args. Unlike
// Read it re-examines a partial request from its start each time more
// bytes arrive, which is cheap for requests of ordinary size. Errors
// follow the rules of Read.
func (r *Reader) ReadCommand(args *[][]byte) error {
	if r.err != nil {
		return r.err
	}
	r.partial = false
	lim := Limits{
		MaxBulkLen: r.lim.bulk, MaxLineLen: r.lim.line, MaxElements: r.lim.elems,
		MaxValues: r.lim.values, MaxDepth: r.lim.depth, MaxReplyLen: r.lim.reply,
	}
	for {
		if r.w > r.r {
			n, err := ParseCommand(r.buf[r.r:r.w], args, &lim)
			if err == nil {
				r.consume(n)
				return nil
			}
			if err != ErrIncomplete {
				r.err = r.streamError(err)
				return r.err
			}
		}
		if err := r.more(); err != nil {
			return err
		}
	}
}

func (r *Reader) consume(n int) {
	r.r += n
	r.off += int64(n)
	if r.r == r.w {
		r.r, r.w = 0, 0
	}
}

// streamError rebases a ProtocolError's offset onto the stream.
func (r *Reader) streamError(err error) error {
	var pe *ProtocolError
	if errors.As(err, &pe) {
		pe.Offset += r.off
	}
	return err
}

// more reads at least one byte into the buffer, compacting or growing it
// first when it is full. It returns the underlying reader's error, if
// any, only once no bytes came with it.
func (r *Reader) more() error {
	if r.rerr != nil {
		err := r.rerr
		r.rerr = nil
		if err == io.EOF && r.w > r.r {
			err = io.ErrUnexpectedEOF
		}
		return err
	}
	if r.r > 0 {
		r.w = copy(r.buf, r.buf[r.r:r.w])
		r.r = 0
	}
	if r.w == len(r.buf) {
		limit := r.lim.reply + r.lim.line + 64
		if len(r.buf) >= limit {
			// Unreachable while scan enforces MaxReplyLen and MaxLineLen,
			// kept as a backstop for the memory bound.
			r.err = &ProtocolError{Offset: r.off, Reason: "value does not fit in the reader buffer", Limit: "MaxReplyLen"}
			return r.err
		}
		size := min(max(2*len(r.buf), readerInitialSize), limit)
		nb := make([]byte, size)
		copy(nb, r.buf[:r.w])
		r.buf = nb
	}
	for range maxEmptyReads {
		n, err := r.rd.Read(r.buf[r.w:])
		if n < 0 || n > len(r.buf)-r.w {
			r.err = errors.New("respire: underlying reader returned an invalid count")
			return r.err
		}
		r.w += n
		if err != nil {
			if n > 0 {
				r.rerr = err
				return nil
			}
			if err == io.EOF && r.w > r.r {
				err = io.ErrUnexpectedEOF
			}
			return err
		}
		if n > 0 {
			return nil
		}
	}
	return io.ErrNoProgress
}
