//go:build linux

package netio

import (
	"errors"
	"io"
	"net"
	"os"
	"sync/atomic"
	"syscall"
	"unsafe"
)

// sysChunk bounds the bytes one raw read or write asks for: a raw system call holds its P for
// its whole duration (the runtime cannot hand the P to another goroutine meanwhile), so a large
// copy is split into calls of at most this size.
const sysChunk = 256 << 10

// sysConn is a plain TCP or Unix connection whose reads by the connection's reader goroutine and
// writes by its writer goroutine are made with raw system calls on its non-blocking socket
// (RawSyscall through syscall.RawConn), the runtime's poller waiting for readiness as it does for
// net.Conn.
//
// A socket read or write of a connection made by package net goes through the runtime's system
// call bookkeeping (entersyscall and exitsyscall), which, when the process's Ps were idle, also
// wakes the runtime's monitor thread. On a non-blocking socket the call never blocks, so the
// bookkeeping buys nothing; under load it is a measured share of the client's CPU (a CPU
// profile of SET at one caller on a Cluster had 11 % of the client's samples in that wake-up).
//
// A caller writing or reading its own commands (writeDirect and the caller-reads mode, the lone
// caller's path) keeps net's calls: with raw calls there, single commands at one caller measured
// slower in some sets of interleaved rounds on the two-vCPU guests this project is measured on
// (docs/performance.md, "Raw system calls"); the goroutines, which carry the I/O when several
// callers are active, make raw calls. The flags are set by whoever owns a side before each call
// on it (one owner at a time: the writer goroutine or a caller in writeDirect; the reader
// goroutine or a caller reading its replies), so the fields of one direction are never used by
// two goroutines at once.
type sysConn struct {
	net.Conn
	rc syscall.RawConn

	// Read side.
	reader bool // the reader goroutine reads: raw reads
	rp     []byte
	rn     int
	rerr   syscall.Errno
	readFn func(fd uintptr) bool

	// Write side.
	writer  bool // the writer goroutine writes: raw writes
	wp      []byte
	wn      int
	werr    syscall.Errno
	writeFn func(fd uintptr) bool

	// rawReads and rawWrites count the raw system calls that moved bytes (tests).
	rawReads, rawWrites atomic.Uint64
}

// wrapSys returns nc as a *sysConn when it is a plain TCP or Unix connection made by package
// net, and nc itself otherwise (TLS, a user's own net.Conn, test pipes).
func wrapSys(nc net.Conn) net.Conn {
	var rc syscall.RawConn
	var err error
	switch t := nc.(type) {
	case *net.TCPConn:
		rc, err = t.SyscallConn()
	case *net.UnixConn:
		rc, err = t.SyscallConn()
	default:
		return nc
	}
	if err != nil {
		return nc
	}
	s := &sysConn{Conn: nc, rc: rc}
	s.readFn = s.readSys
	s.writeFn = s.writeSys
	return s
}

// sysOf returns the *sysConn that wrapSys made of nc, or nil.
func sysOf(nc net.Conn) *sysConn {
	s, _ := nc.(*sysConn)
	return s
}

// readerReads records whether the next reads are the reader goroutine's (raw) or a caller's own
// (net's). A nil s (a connection that is not a *sysConn) ignores it.
func (s *sysConn) readerReads(reader bool) {
	if s != nil {
		s.reader = reader
	}
}

// writerWrites records whether the next writes are the writer goroutine's (raw) or a caller's
// own (net's). A nil s (a connection that is not a *sysConn) ignores it.
func (s *sysConn) writerWrites(writer bool) {
	if s != nil {
		s.writer = writer
	}
}

// readSys is the raw read, called by the RawConn with the socket's descriptor; false asks the
// poller to wait until the socket is readable.
func (s *sysConn) readSys(fd uintptr) bool {
	for {
		n, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&s.rp[0])), uintptr(len(s.rp)))
		switch e {
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			return false
		}
		s.rn, s.rerr = int(n), e
		return true
	}
}

// Read implements io.Reader: the reader goroutine's reads are raw, of at most sysChunk bytes; a
// caller's own go through net.
func (s *sysConn) Read(p []byte) (int, error) {
	if !s.reader || len(p) == 0 {
		return s.Conn.Read(p)
	}
	s.rp, s.rn, s.rerr = p[:min(len(p), sysChunk)], 0, 0
	err := s.rc.Read(s.readFn)
	s.rp = nil
	switch {
	case err != nil:
		return 0, s.opError("read", err)
	case s.rerr != 0:
		return 0, s.opError("read", os.NewSyscallError("read", s.rerr))
	case s.rn == 0:
		return 0, io.EOF
	}
	s.rawReads.Add(1)
	return s.rn, nil
}

// writeSys is the raw write, called by the RawConn with the socket's descriptor: it writes
// until everything is written or the socket is full (false: the poller waits until it is
// writable, and writeSys is called again for the rest).
func (s *sysConn) writeSys(fd uintptr) bool {
	for s.wn < len(s.wp) {
		rest := s.wp[s.wn:]
		n, _, e := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&rest[0])), uintptr(min(len(rest), sysChunk)))
		switch e {
		case 0:
			s.wn += int(n)
			s.rawWrites.Add(1)
		case syscall.EINTR:
		case syscall.EAGAIN:
			return false
		default:
			s.werr = e
			return true
		}
	}
	return true
}

// Write implements io.Writer: the writer goroutine's writes are raw, a caller's own go through
// net.
func (s *sysConn) Write(p []byte) (int, error) {
	if !s.writer || len(p) == 0 {
		return s.Conn.Write(p)
	}
	s.wp, s.wn, s.werr = p, 0, 0
	err := s.rc.Write(s.writeFn)
	n := s.wn
	s.wp = nil
	switch {
	case err != nil:
		return n, s.opError("write", err)
	case s.werr != 0:
		return n, s.opError("write", os.NewSyscallError("write", s.werr))
	}
	return n, nil
}

// opError gives a raw call's failure the shape net gives its own: a *net.OpError with op "read"
// or "write" (the RawConn names them "raw-read" and "raw-write") and the connection's addresses.
func (s *sysConn) opError(op string, err error) error {
	var oe *net.OpError
	if errors.As(err, &oe) {
		err = oe.Err
	}
	local, remote := s.LocalAddr(), s.RemoteAddr()
	network := "tcp"
	if _, unix := s.Conn.(*net.UnixConn); unix {
		network = "unix"
	}
	return &net.OpError{Op: op, Net: network, Source: local, Addr: remote, Err: err}
}
