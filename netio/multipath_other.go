//go:build !linux

package netio

// multipathAvailable reports false: Multipath TCP is a Linux feature here.
func multipathAvailable() bool { return false }
