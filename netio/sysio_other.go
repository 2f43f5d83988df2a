//go:build !linux

package netio

import "net"

// sysConn is the Linux raw-system-call connection (sysio_linux.go); elsewhere there is none and
// every connection uses package net's calls.
type sysConn struct{}

// wrapSys returns nc: raw system calls are made on Linux only.
func wrapSys(nc net.Conn) net.Conn { return nc }

// sysOf returns nil: no connection is a *sysConn here.
func sysOf(net.Conn) *sysConn { return nil }

// readerReads does nothing here.
func (s *sysConn) readerReads(bool) {}

// writerWrites does nothing here.
func (s *sysConn) writerWrites(bool) {}
