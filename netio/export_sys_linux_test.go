//go:build linux

package netio

import "net"

// SysCounts reports how many raw reads and writes moved bytes on c's socket, and whether c makes
// raw system calls at all.
func SysCounts(c *Conn) (reads, writes uint64, raw bool) {
	if c.sys == nil {
		return 0, 0, false
	}
	return c.sys.rawReads.Load(), c.sys.rawWrites.Load(), true
}

// WrapSys exposes wrapSys with both directions raw (the goroutines' mode), or net's calls.
func WrapSys(nc net.Conn, raw bool) (net.Conn, func() (reads, writes uint64)) {
	w := wrapSys(nc)
	s := sysOf(w)
	if s == nil {
		return w, nil
	}
	s.readerReads(raw)
	s.writerWrites(raw)
	return w, func() (uint64, uint64) { return s.rawReads.Load(), s.rawWrites.Load() }
}
