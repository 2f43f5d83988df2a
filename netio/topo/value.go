package topo

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
	case resp.KindMap, resp.KindArray:
		return elems(v), v.Len()%2 == 0
	}
	return nil, false
}

// elems returns the elements of an aggregate value as a slice, or nil for other kinds. Topology
// replies are parsed rarely, so the parsers trade one allocation per aggregate for plain
// indexing.
func elems(v *resp.Value) []resp.Value {
	n := v.Len()
	if n == 0 {
		return nil
	}
	out := make([]resp.Value, 0, n)
	for _, e := range v.All() {
		out = append(out, e)
	}
	return out
}

// isText reports whether v is a string-like value equal to s, without allocating.
func isText(v *resp.Value, s string) bool {
	switch v.Kind {
	case resp.KindSimpleString, resp.KindBulkString, resp.KindVerbatimString:
		return string(v.Str) == s
	}
	return false
}
