package resp

import (
	"errors"
	"io"
)

// readerInitialSize is the initial buffer size of a Reader.
const readerInitialSize = 4096

// readerRetainedSize bounds the buffer a Reader keeps between values: a
// larger one, grown for a long line or request, is replaced by a small one
// once the value that needed it is read.
const readerRetainedSize = 64 << 10

// readerRetainedStorage bounds the value storage a Reader keeps for reuse:
// storage that held a larger value is dropped rather than kept.
const readerRetainedStorage = 64 << 10

// maxEmptyReads bounds how many consecutive (0, nil) results the
// underlying reader may return before Read gives up with
// io.ErrNoProgress.
const maxEmptyReads = 100

// Reader reads RESP values from an io.Reader through a private buffer. It
// calls the underlying Read only when it needs more bytes, and decodes a
// value as its bytes arrive, so a large reply arriving in many pieces is
// examined once, not once per piece.
//
// Memory. The buffer holds only the line being decoded: it starts at
// 4 KiB, grows only for a line longer than that (up to Limits.MaxLineLen),
// and shrinks back once such a value is read. Each value is stored in the
// compact form described at Parse, which costs about its wire size or
// less, and the payload of a large bulk string is read straight into that
// storage, so reading a value costs at most about twice its wire size at
// any moment, and the storage is sized from the bytes that arrived, never
// from what a length header announces alone. Once Read returns, the storage
// belongs to the destination Value; the Reader keeps the destination's
// previous storage for the next value only when it is small.
//
// A Reader is not safe for concurrent use.
type Reader struct {
	rd      io.Reader
	lim     limits
	buf     []byte
	r, w    int   // buf[r:w] holds unread bytes
	off     int64 // stream offset of buf[r]
	start   int64 // stream offset of the value being decoded
	dec     decoder
	pend    *store // storage the next value is decoded into
	partial bool   // dec holds the value that starts at start
	ahead   int    // the buffer may grow to this size when reads fill it (SetReadAhead)
	filled  bool   // the last read filled all the free space of the buffer
	noFast  bool   // decode every value with the general decoder (tests of the fast path)
	err     error  // sticky *ProtocolError
	rerr    error  // pending error from the underlying reader
}

// NewReader returns a Reader that reads from rd and enforces lim (nil
// means the defaults).
func NewReader(rd io.Reader, lim *Limits) *Reader {
	return &Reader{rd: rd, lim: lim.resolve()}
}

// Reset discards all buffered data, any partly read value and any error
// and makes r read from rd, keeping its buffer for reuse.
func (r *Reader) Reset(rd io.Reader) {
	r.rd = rd
	r.r, r.w, r.off = 0, 0, 0
	r.abandon()
	r.err, r.rerr = nil, nil
}

// MaxReadAhead bounds SetReadAhead.
const MaxReadAhead = readerRetainedSize

// SetReadAhead lets the buffer grow up to n bytes (at most MaxReadAhead;
// zero or less: off, the default) for a stream that keeps it full: when a
// read of the underlying reader fills all the free space of the buffer,
// the next read goes into a buffer twice as large, until it reaches n. A
// busy stream of small values then takes one read of the underlying
// reader for up to n bytes instead of one per 4 KiB, and a quiet one keeps
// its 4 KiB. The buffer never shrinks below what it grew to this way, so n
// is memory the Reader may keep for as long as it lives.
func (r *Reader) SetReadAhead(n int) { r.ahead = min(n, MaxReadAhead) }

// Buffered returns the number of bytes read from the underlying reader
// but not yet consumed by Read or ReadCommand.
func (r *Reader) Buffered() int { return r.w - r.r }

// Read reads exactly one value into *v, with the storage rules of Parse:
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
			if !r.partial && r.readFast(v) {
				return nil
			}
			r.begin()
			n, err := r.dec.feed(r.buf[r.r:r.w])
			r.consume(n)
			if err == nil {
				r.deliver(v)
				return nil
			}
			if err != errMore {
				var pe *ProtocolError
				if errors.As(err, &pe) {
					pe.Offset += r.start
				}
				r.err = err
				r.abandon()
				return err
			}
		}
		if r.partial && r.w == r.r && r.rerr == nil && r.dec.bulk > 0 && r.dec.bulk >= len(r.buf) {
			// A large payload: read it straight into the value's storage.
			if err := r.readPayload(); err != nil {
				return err
			}
			continue
		}
		if err := r.more(); err != nil {
			return err
		}
	}
}

// ReadBuffered is Read without the underlying reader: it decodes the next
// value from the bytes already buffered only. It reports true with the value
// in *v when they hold a whole value; it reports false, leaving *v
// unchanged, when they hold none or only the beginning of one, which it then
// keeps decoded so that the next Read (or ReadBuffered) continues it. It
// never blocks. Errors follow the rules of Read; an error of the underlying
// reader is left for the next Read to return.
//
// A driver that pairs replies with requests uses it to take, after a
// blocking Read, every reply that the same read brought, and to do the
// pairing for all of them at once.
func (r *Reader) ReadBuffered(v *Value) (bool, error) {
	if r.err != nil {
		return false, r.err
	}
	if r.w == r.r {
		return false, nil
	}
	if !r.partial && r.readFast(v) {
		return true, nil
	}
	r.begin()
	n, err := r.dec.feed(r.buf[r.r:r.w])
	r.consume(n)
	switch {
	case err == nil:
		r.deliver(v)
		return true, nil
	case err == errMore:
		return false, nil
	}
	var pe *ProtocolError
	if errors.As(err, &pe) {
		pe.Offset += r.start
	}
	r.err = err
	r.abandon()
	return false, err
}

// begin starts decoding the next value unless one is partly decoded.
func (r *Reader) begin() {
	if r.partial {
		return
	}
	if r.pend == nil {
		r.pend = new(store)
	}
	r.dec.begin(r.pend.tape, &r.lim, false, true)
	r.start = r.off
	r.partial = true
}

// deliver hands the decoded value to *v, whose previous storage becomes the
// Reader's for the next value unless it is large.
func (r *Reader) deliver(v *Value) {
	m := r.pend
	m.tape = r.dec.out
	old := v.mem
	decodeAt(m.tape, 0, v)
	v.mem = m
	r.pend = nil
	if old != nil && cap(old.tape) <= readerRetainedStorage {
		r.pend = old
	}
	r.dec.out = nil
	r.partial = false
	r.shrink()
}

// shrink replaces a buffer grown beyond readerRetainedSize by a small one once what remains
// buffered fits in it. Called after each value.
func (r *Reader) shrink() {
	if len(r.buf) > readerRetainedSize && r.w-r.r <= readerInitialSize {
		nb := make([]byte, readerInitialSize)
		r.w = copy(nb, r.buf[r.r:r.w])
		r.r = 0
		r.buf = nb
	}
}

// abandon drops the value being decoded, keeping its storage if small.
func (r *Reader) abandon() {
	if r.partial && r.pend != nil {
		r.pend.tape = r.dec.out[:0]
		if cap(r.pend.tape) > readerRetainedStorage {
			r.pend = nil
		}
	}
	r.dec.out = nil
	r.partial = false
}

// readPayload reads part of a bulk payload from the underlying reader
// straight into the value's storage.
func (r *Reader) readPayload() error {
	for range maxEmptyReads {
		dst := r.dec.payloadSpace()
		n, err := r.rd.Read(dst)
		if n < 0 || n > len(dst) {
			r.err = errors.New("respire: underlying reader returned an invalid count")
			r.abandon()
			return r.err
		}
		r.dec.payloadRead(n)
		r.off += int64(n)
		if err != nil {
			if n > 0 {
				r.rerr = err
				return nil
			}
			if err == io.EOF {
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
	r.abandon()
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
		if err == io.EOF && (r.w > r.r || r.midValue()) {
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
			// Unreachable while the decoder and ParseCommand enforce
			// MaxReplyLen and MaxLineLen, kept as a backstop for the
			// memory bound.
			r.err = &ProtocolError{Offset: r.off, Reason: "value does not fit in the reader buffer", Limit: "MaxReplyLen"}
			return r.err
		}
		size := min(max(2*len(r.buf), readerInitialSize), limit)
		nb := make([]byte, size)
		copy(nb, r.buf[:r.w])
		r.buf = nb
	}
	if r.filled && len(r.buf) < r.ahead {
		// The last read filled the buffer: more is likely waiting (SetReadAhead).
		nb := make([]byte, min(2*len(r.buf), r.ahead))
		copy(nb, r.buf[:r.w])
		r.buf = nb
	}
	for range maxEmptyReads {
		free := len(r.buf) - r.w
		n, err := r.rd.Read(r.buf[r.w:])
		if n < 0 || n > free {
			r.err = errors.New("respire: underlying reader returned an invalid count")
			return r.err
		}
		r.w += n
		r.filled = n == free
		if err != nil {
			if n > 0 {
				r.rerr = err
				return nil
			}
			if err == io.EOF && (r.w > r.r || r.midValue()) {
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

// midValue reports whether part of a value has been consumed.
func (r *Reader) midValue() bool { return r.partial && r.dec.started() }
