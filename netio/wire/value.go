package wire

import (
	"github.com/respire-go/respire/netio/resp"
)

// text returns the payload of a string-like value (simple, bulk or verbatim string).
func text(v *resp.Value) (string, bool) {
	switch v.Kind {
	case resp.KindSimpleString, resp.KindBulkString, resp.KindVerbatimString:
		return string(v.Str), true
	}
	return "", false
}

// integer returns the payload of an integer value.
func integer(v *resp.Value) (int64, bool) {
	if v.Kind == resp.KindInteger {
		return v.Int, true
	}
	return 0, false
}

// pairs returns the flattened key/value pairs of a map: a RESP3 map, or the array of alternating
// keys and values that RESP2 sends instead.
func pairs(v *resp.Value) ([]resp.Value, bool) {
	switch v.Kind {
	case resp.KindMap:
		return v.Elems, len(v.Elems)%2 == 0
	case resp.KindArray:
		return v.Elems, len(v.Elems)%2 == 0
	}
	return nil, false
}

// isText reports whether v is a string-like value equal to s, without allocating.
func isText(v *resp.Value, s string) bool {
	switch v.Kind {
	case resp.KindSimpleString, resp.KindBulkString, resp.KindVerbatimString:
		return string(v.Str) == s
	}
	return false
}
