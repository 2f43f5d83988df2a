package client

import (
	"strconv"

	"github.com/respire-go/respire/netio/resp"
)

// The typed commands encode their frames with these helpers rather than the generic ones of
// netio/resp: an argument's length header of up to two digits (every key and most values) is
// written as bytes, without formatting an integer, and a command's words (its name and
// subcommand) are encoded once per command (cmdSpec.head) and appended as one copy. The bytes
// are those of resp.AppendBulkString and resp.AppendArrayHeader (TestEncodeMatchesResp).

// appendBulkArg appends s as a bulk string: "$<len>\r\n<s>\r\n".
func appendBulkArg(b []byte, s string) []byte { return appendBulk(b, s) }

// appendBulkArgBytes is appendBulkArg for bytes.
func appendBulkArgBytes(b []byte, p []byte) []byte { return appendBulk(b, p) }

// appendBulk is appendBulkArg for either form of the argument.
func appendBulk[S string | []byte](b []byte, s S) []byte {
	switch n := len(s); {
	case n < 10:
		b = append(b, '$', byte('0'+n), '\r', '\n')
	case n < 100:
		b = append(b, '$', byte('0'+n/10), byte('0'+n%10), '\r', '\n')
	default:
		b = append(b, '$')
		b = strconv.AppendInt(b, int64(n), 10)
		b = append(b, '\r', '\n')
	}
	b = append(b, s...)
	return append(b, '\r', '\n')
}

// appendBulkArgInt appends the decimal text of n as a bulk string (EXPIRE's seconds, ...).
func appendBulkArgInt(b []byte, n int64) []byte {
	if n >= 0 && n < 10 {
		return append(b, '$', '1', '\r', '\n', byte('0'+n), '\r', '\n')
	}
	var tmp [20]byte
	return appendBulkArgBytes(b, strconv.AppendInt(tmp[:0], n, 10))
}

// appendArrayHead appends a command's array header "*<n>\r\n"; n is never negative here.
func appendArrayHead(b []byte, n int) []byte {
	if n < 10 {
		return append(b, '*', byte('0'+n), '\r', '\n')
	}
	return resp.AppendArrayHeader(b, n)
}

// encodeWords encodes a command's words as the bulk strings that start its frames.
func encodeWords(words []string) string {
	var b []byte
	for _, w := range words {
		b = appendBulkArg(b, w)
	}
	return string(b)
}
