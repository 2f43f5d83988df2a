package resp

import (
	"math"
	"strconv"
)

// All encoders append to dst and return the extended slice, in the style
// of strconv.AppendInt. None of them allocates when dst has enough spare
// capacity.

var crlf = []byte{'\r', '\n'}

func appendHeader(dst []byte, t byte, n int64) []byte {
	dst = append(dst, t)
	dst = strconv.AppendInt(dst, n, 10)
	return append(dst, '\r', '\n')
}

// AppendArrayHeader appends the array header "*<n>\r\n". A negative n
// appends the RESP2 null array "*-1\r\n".
func AppendArrayHeader(dst []byte, n int) []byte {
	if n < 0 {
		n = -1
	}
	return appendHeader(dst, '*', int64(n))
}

// AppendBulk appends b as a bulk string "$<len>\r\n<b>\r\n". A nil b is
// written as an empty bulk string, not a null.
func AppendBulk(dst []byte, b []byte) []byte {
	dst = appendHeader(dst, '$', int64(len(b)))
	dst = append(dst, b...)
	return append(dst, crlf...)
}

// AppendBulkString appends s as a bulk string.
func AppendBulkString(dst []byte, s string) []byte {
	dst = appendHeader(dst, '$', int64(len(s)))
	dst = append(dst, s...)
	return append(dst, crlf...)
}

// AppendBulkInt appends the decimal text of n as a bulk string, which is
// how integer arguments travel in a command ("EXPIRE key 10").
func AppendBulkInt(dst []byte, n int64) []byte {
	var tmp [20]byte
	return AppendBulk(dst, strconv.AppendInt(tmp[:0], n, 10))
}

// AppendCommand appends a command request: an array of bulk strings, one
// per argument, as clients send it.
func AppendCommand(dst []byte, args ...string) []byte {
	dst = appendHeader(dst, '*', int64(len(args)))
	for _, a := range args {
		dst = AppendBulkString(dst, a)
	}
	return dst
}

// AppendCommandBytes is AppendCommand for byte-slice arguments.
func AppendCommandBytes(dst []byte, args ...[]byte) []byte {
	dst = appendHeader(dst, '*', int64(len(args)))
	for _, a := range args {
		dst = AppendBulk(dst, a)
	}
	return dst
}

// AppendValue appends v encoded as a server would send it to a client
// speaking protocol version proto: 3 (or more) selects RESP3, anything
// lower RESP2.
//
// In RESP3 every kind is written natively. Attrs, when present, are
// written as an attribute map just before the value; a KindAttribute
// value on its own is written as a map; KindInvalid and undefined kinds
// are written as a null.
//
// In RESP2 the RESP3-only kinds are downgraded the way Redis does it:
// map and attribute values become flat arrays of key, value, ...; sets and
// pushes become arrays; doubles and big numbers become bulk strings of
// their text; booleans become the integers 1 and 0; verbatim strings
// become bulk strings of their text without the format prefix; bulk errors
// become simple errors; nulls become "$-1", or "*-1" when NullForm is
// NullFormArray; and attributes are dropped, at every depth.
//
// The output is always well formed: CR and LF inside simple strings and
// simple errors are replaced with spaces, a map or attribute list with an
// odd number of entries is completed with a null, and a verbatim string
// with a zero Format is written with format "txt". BigNumber text is
// written unchecked.
func AppendValue(dst []byte, v Value, proto int) []byte {
	return appendValue(dst, &v, proto >= 3)
}

func appendValue(dst []byte, v *Value, r3 bool) []byte {
	if r3 {
		if n := v.attrLen(); n > 0 {
			a := v.Attrs()
			dst = appendHeader(dst, '|', int64((n+1)/2))
			dst = appendPairs(dst, &a, true)
		}
	}
	switch v.Kind {
	case KindSimpleString:
		dst = appendLine(dst, '+', v.Str)
	case KindSimpleError:
		dst = appendLine(dst, '-', v.Str)
	case KindInteger:
		dst = appendHeader(dst, ':', v.Int)
	case KindBulkString:
		dst = AppendBulk(dst, v.Str)
	case KindBoolean:
		switch {
		case r3 && v.Bool:
			dst = append(dst, "#t\r\n"...)
		case r3:
			dst = append(dst, "#f\r\n"...)
		case v.Bool:
			dst = append(dst, ":1\r\n"...)
		default:
			dst = append(dst, ":0\r\n"...)
		}
	case KindDouble:
		if r3 {
			dst = append(dst, ',')
			dst = appendDouble(dst, v.Float)
			dst = append(dst, crlf...)
		} else {
			var tmp [32]byte
			dst = AppendBulk(dst, appendDouble(tmp[:0], v.Float))
		}
	case KindBigNumber:
		if r3 {
			dst = append(dst, '(')
			dst = append(dst, v.Str...)
			dst = append(dst, crlf...)
		} else {
			dst = AppendBulk(dst, v.Str)
		}
	case KindBulkError:
		if r3 {
			dst = appendHeader(dst, '!', int64(len(v.Str)))
			dst = append(dst, v.Str...)
			dst = append(dst, crlf...)
		} else {
			dst = appendLine(dst, '-', v.Str)
		}
	case KindVerbatimString:
		if r3 {
			format := v.Format
			if format == [3]byte{} {
				format = [3]byte{'t', 'x', 't'}
			}
			dst = appendHeader(dst, '=', int64(len(v.Str)+4))
			dst = append(dst, format[0], format[1], format[2], ':')
			dst = append(dst, v.Str...)
			dst = append(dst, crlf...)
		} else {
			dst = AppendBulk(dst, v.Str)
		}
	case KindArray:
		dst = appendAggregate(dst, '*', v, r3)
	case KindSet:
		dst = appendAggregate(dst, aggregateByte('~', r3), v, r3)
	case KindPush:
		dst = appendAggregate(dst, aggregateByte('>', r3), v, r3)
	case KindMap, KindAttribute:
		n := v.Len()
		if r3 {
			dst = appendHeader(dst, '%', int64((n+1)/2))
		} else {
			dst = appendHeader(dst, '*', int64(n+n%2))
		}
		dst = appendPairs(dst, v, r3)
	default: // KindNull, KindInvalid, undefined kinds
		switch {
		case r3:
			dst = append(dst, "_\r\n"...)
		case v.NullForm == NullFormArray:
			dst = append(dst, "*-1\r\n"...)
		default:
			dst = append(dst, "$-1\r\n"...)
		}
	}
	return dst
}

func aggregateByte(t byte, r3 bool) byte {
	if r3 {
		return t
	}
	return '*'
}

func appendAggregate(dst []byte, t byte, v *Value, r3 bool) []byte {
	dst = appendHeader(dst, t, int64(v.Len()))
	return appendElements(dst, v, r3)
}

// appendElements writes the elements of aggregate v.
func appendElements(dst []byte, v *Value, r3 bool) []byte {
	it := v.elements()
	var tmp Value
	for e := it.next(&tmp); e != nil; e = it.next(&tmp) {
		dst = appendValue(dst, e, r3)
	}
	return dst
}

// appendPairs writes the flattened key/value entries of kv, completing an
// odd list with a null. The caller has written the header.
func appendPairs(dst []byte, kv *Value, r3 bool) []byte {
	dst = appendElements(dst, kv, r3)
	if kv.Len()%2 == 1 {
		if r3 {
			dst = append(dst, "_\r\n"...)
		} else {
			dst = append(dst, "$-1\r\n"...)
		}
	}
	return dst
}

// appendLine writes a simple string or error, replacing CR and LF (which
// would end the line early) with spaces, as Redis does for error replies.
func appendLine(dst []byte, t byte, s []byte) []byte {
	dst = append(dst, t)
	start := len(dst)
	dst = append(dst, s...)
	for i := start; i < len(dst); i++ {
		if dst[i] == '\r' || dst[i] == '\n' {
			dst[i] = ' '
		}
	}
	return append(dst, crlf...)
}

// appendDouble writes f in the RESP3 double syntax: "inf", "-inf", "nan",
// or the shortest decimal that reads back as exactly f.
func appendDouble(dst []byte, f float64) []byte {
	switch {
	case math.IsInf(f, 1):
		return append(dst, "inf"...)
	case math.IsInf(f, -1):
		return append(dst, "-inf"...)
	case math.IsNaN(f):
		return append(dst, "nan"...)
	}
	return strconv.AppendFloat(dst, f, 'g', -1, 64)
}
