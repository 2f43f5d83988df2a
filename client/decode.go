package client

import (
	"strconv"
	"strings"
	"time"

	"github.com/respire-go/respire/engine"
	"github.com/respire-go/respire/netio/resp"
)

// Replies are decoded once, into Go types that do not depend on the protocol: RESP3 maps and
// RESP2 flat arrays both become maps, RESP3 doubles and RESP2 numeric strings both become
// float64, RESP3 pairs ([member, score] arrays) and RESP2 flat lists both become []ZMember,
// and so on. Every decoder checks the shape it reads and fails with a *ProtocolError naming the
// command on anything else.

// Reply shapes the connection checks before completing a command (engine.Shape): a reply of
// another shape fails the connection with a protocol error and never becomes a value. They are
// engine's table, which the simulator's workload uses too.
var (
	anyReply      = engine.Shape{}
	okShape       = engine.ShapeOK
	okOrNullShape = engine.ShapeOKOrNull
	queuedShape   = engine.ShapeQueued
	pongShape     = engine.ShapePong
	intShape      = engine.ShapeInt
	optIntShape   = engine.ShapeOptInt
	boolShape     = engine.ShapeBool
	textShape     = engine.ShapeText
	bulkShape     = engine.ShapeBulk
	floatShape    = engine.ShapeFloat
	optFloatShape = engine.ShapeOptFloat
	arrayShape    = engine.ShapeArray
	mapShape      = engine.ShapeMap
	optArrayShape = engine.ShapeOptArray
)

// None is the result of a command whose only successful reply is OK (or another fixed
// status): a Future[None] of a Batch carries only an error.
type None struct{}

// Optional is a value that may be absent: Valid is false when Redis replied null (a missing
// key, field or member).
type Optional[T any] struct {
	// Value is the value, the zero value when absent.
	Value T
	// Valid is false when the reply was null.
	Valid bool
}

// OptionalString is a string that may be absent (MGET, HMGET, ...).
type OptionalString = Optional[string]

// ZMember is a member of a sorted set with its score.
type ZMember struct {
	Member string
	Score  float64
}

// writeArgs writes score and member, as ZADD takes them.
func (z ZMember) writeArgs(e *enc) {
	e.float(z.Score)
	e.str(z.Member)
}

// FieldValue is one field of a hash with its value (HRANDFIELD WITHVALUES, HSCAN).
type FieldValue struct {
	Field, Value string
}

// KeyValue is an element popped from a list, with the list's key (BLPOP).
type KeyValue struct {
	Key, Value string
}

// KeyValues is what LMPOP and BLMPOP pop: the key of the list and its elements.
type KeyValues struct {
	Key    string
	Values []string
}

// KeyMembers is what ZMPOP and BZMPOP pop: the key of the sorted set and its members.
type KeyMembers struct {
	Key     string
	Members []ZMember
}

// ScanPage is one step of SCAN or SSCAN: the cursor of the next step (0 when the iteration
// is complete) and the elements of this one.
type ScanPage struct {
	Cursor uint64
	Keys   []string
}

// HScanPage is one step of HSCAN.
type HScanPage struct {
	Cursor uint64
	Fields []FieldValue
}

// ZScanPage is one step of ZSCAN.
type ZScanPage struct {
	Cursor  uint64
	Members []ZMember
}

// unexpected reports a reply whose type does not fit the command.
func unexpected(name string, v *resp.Value) error {
	return &ProtocolError{Reason: "unexpected " + v.Kind.String() + " reply to " + name}
}

// malformed reports a reply of the right kind whose content does not fit the command.
func malformed(name, what string) error {
	return &ProtocolError{Reason: "malformed reply to " + name + ": " + what}
}

// textOf returns the text of a string-like reply.
func textOf(v *resp.Value) (string, bool) {
	switch v.Kind {
	case resp.KindBulkString, resp.KindSimpleString, resp.KindVerbatimString:
		return string(v.Str), true
	}
	return "", false
}

// stringReply decodes a string, a null (found false) or an integer (as its decimal text).
func stringReply(name string, v *resp.Value) (string, bool, error) {
	if v.Kind == resp.KindNull {
		return "", false, nil
	}
	if s, ok := textOf(v); ok {
		return s, true, nil
	}
	switch v.Kind {
	case resp.KindInteger:
		return strconv.FormatInt(v.Int, 10), true, nil
	case resp.KindDouble:
		return strconv.FormatFloat(v.Float, 'f', -1, 64), true, nil
	case resp.KindBigNumber:
		return string(v.Str), true, nil
	case resp.KindBoolean:
		if v.Bool {
			return "1", true, nil
		}
		return "0", true, nil
	}
	return "", false, unexpected(name, v)
}

func intReply(name string, v *resp.Value) (int64, error) {
	switch v.Kind {
	case resp.KindInteger:
		return v.Int, nil
	case resp.KindBulkString, resp.KindSimpleString:
		if n, err := strconv.ParseInt(string(v.Str), 10, 64); err == nil {
			return n, nil
		}
	}
	return 0, unexpected(name, v)
}

// floatReply decodes a RESP3 double, an integer or a RESP2 numeric string.
func floatReply(name string, v *resp.Value) (float64, error) {
	switch v.Kind {
	case resp.KindDouble:
		return v.Float, nil
	case resp.KindInteger:
		return float64(v.Int), nil
	}
	if !isText(v.Kind) {
		return 0, unexpected(name, v)
	}
	f, err := v.AsFloat64()
	if err != nil {
		return 0, malformed(name, "not a number")
	}
	return f, nil
}

// okReply accepts OK and nothing else: another simple string (QUEUED, after a MULTI the
// client did not send) does not mean that the command ran.
func okReply(v *resp.Value) error {
	if v.Kind == resp.KindSimpleString && string(v.Str) == "OK" {
		return nil
	}
	return unexpected("OK", v)
}

// isAggregate reports whether v is an array, a set or a map (the containers replies use).
func isList(v *resp.Value) bool {
	return v.Kind == resp.KindArray || v.Kind == resp.KindSet
}

// The decoders. Each is a plain function (no closure), so that passing it costs nothing.

func decOK(v *resp.Value) (None, error) { return None{}, okReply(v) }

func decStatus(v *resp.Value) (string, error) {
	if s, ok := textOf(v); ok {
		return s, nil
	}
	return "", unexpected("status", v)
}

func decInt(v *resp.Value) (int64, error) { return intReply("integer", v) }

func decBool(v *resp.Value) (bool, error) {
	if v.Kind == resp.KindBoolean {
		return v.Bool, nil
	}
	n, err := intReply("integer", v)
	return n == 1, err
}

func decString(v *resp.Value) (string, error) {
	s, ok, err := stringReply("string", v)
	if err == nil && !ok {
		return "", unexpected("string", v)
	}
	return s, err
}

// decString0 decodes a string, null giving "".
func decString0(v *resp.Value) (string, error) {
	s, _, err := stringReply("string", v)
	return s, err
}

func decOptString(v *resp.Value) (Optional[string], error) {
	s, ok, err := stringReply("string", v)
	return Optional[string]{Value: s, Valid: ok}, err
}

func decFloat(v *resp.Value) (float64, error) { return floatReply("number", v) }

func decOptFloat(v *resp.Value) (Optional[float64], error) {
	if v.Kind == resp.KindNull {
		return Optional[float64]{}, nil
	}
	f, err := floatReply("number", v)
	return Optional[float64]{Value: f, Valid: err == nil}, err
}

func decOptInt(v *resp.Value) (Optional[int64], error) {
	if v.Kind == resp.KindNull {
		return Optional[int64]{}, nil
	}
	n, err := intReply("integer", v)
	return Optional[int64]{Value: n, Valid: err == nil}, err
}

// decStrings decodes a list of strings; a null list is empty and a null element is "".
func decStrings(v *resp.Value) ([]string, error) {
	if v.Kind == resp.KindNull {
		return nil, nil
	}
	if !isList(v) && v.Kind != resp.KindMap {
		return nil, unexpected("list", v)
	}
	out := make([]string, v.Len())
	for i, e := range v.All() {
		s, _, err := stringReply("list", &e)
		if err != nil {
			return nil, err
		}
		out[i] = s
	}
	return out, nil
}

// decEach decodes a list (an array, set or push) element by element with dec.
func decEach[T any](v *resp.Value, dec func(*resp.Value) (T, error)) ([]T, error) {
	if !isList(v) {
		return nil, unexpected("list", v)
	}
	out := make([]T, v.Len())
	var e resp.Value // one variable for every element: dec takes its address, which escapes
	for i, x := range v.All() {
		e = x
		d, err := dec(&e)
		if err != nil {
			return nil, err
		}
		out[i] = d
	}
	return out, nil
}

func decOptStrings(v *resp.Value) ([]OptionalString, error) {
	return decEach(v, func(e *resp.Value) (OptionalString, error) {
		s, ok, err := stringReply("list", e)
		return OptionalString{Value: s, Valid: ok}, err
	})
}

func decInts(v *resp.Value) ([]int64, error) {
	if v.Kind == resp.KindNull {
		return nil, nil
	}
	return decEach(v, func(e *resp.Value) (int64, error) { return intReply("list", e) })
}

func decBools(v *resp.Value) ([]bool, error) { return decEach(v, decBool) }

func decOptFloats(v *resp.Value) ([]Optional[float64], error) { return decEach(v, decOptFloat) }

func decOptInts(v *resp.Value) ([]Optional[int64], error) { return decEach(v, decOptInt) }

// pairsOf checks that v is a map, or a flat array of key/value pairs (RESP2), and returns the
// number of pairs.
func pairsOf(name string, v *resp.Value) (int, error) {
	if (v.Kind != resp.KindMap && v.Kind != resp.KindArray) || v.Len()%2 != 0 {
		return 0, unexpected(name, v)
	}
	return v.Len() / 2, nil
}

// decStringMap decodes a map, or a flat array of key/value pairs, of strings.
func decStringMap(v *resp.Value) (map[string]string, error) {
	n, err := pairsOf("map", v)
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, n)
	var k string
	for i, e := range v.All() {
		s, _, err := stringReply("map", &e)
		if err != nil {
			return nil, err
		}
		if i%2 == 0 {
			k = s
		} else {
			out[k] = s
		}
	}
	return out, nil
}

// decIntMap decodes a map, or a flat array of name/count pairs.
func decIntMap(v *resp.Value) (map[string]int64, error) {
	n, err := pairsOf("map", v)
	if err != nil {
		return nil, err
	}
	out := make(map[string]int64, n)
	var k string
	for i, e := range v.All() {
		if i%2 == 0 {
			if k, _, err = stringReply("map", &e); err != nil {
				return nil, err
			}
			continue
		}
		if out[k], err = intReply("map", &e); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// decValueMap decodes a map, or a flat array of key/value pairs, keeping each value as an
// owned resp.Value (for replies whose values have several shapes).
func decValueMap(v *resp.Value) (map[string]resp.Value, error) {
	n, err := pairsOf("map", v)
	if err != nil {
		return nil, err
	}
	out := make(map[string]resp.Value, n)
	var k string
	for i, e := range v.All() {
		if i%2 == 0 {
			if k, _, err = stringReply("map", &e); err != nil {
				return nil, err
			}
			continue
		}
		out[k] = e.Clone()
	}
	return out, nil
}

// decRecords decodes a list of records (each a map or a flat array of field/value pairs), as
// SENTINEL MASTERS and friends reply; values that are not strings become their decimal text,
// and a nested list its elements joined by commas.
func decRecords(v *resp.Value) ([]map[string]string, error) {
	return decEach(v, decRecord)
}

func decRecord(v *resp.Value) (map[string]string, error) {
	n, err := pairsOf("record", v)
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, n)
	var k string
	for i, e := range v.All() {
		if i%2 == 0 {
			if k, _, err = stringReply("record", &e); err != nil {
				return nil, err
			}
			continue
		}
		if isList(&e) {
			parts, err := decStrings(&e)
			if err != nil {
				return nil, err
			}
			out[k] = strings.Join(parts, ",")
			continue
		}
		if out[k], _, err = stringReply("record", &e); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// decValue returns the reply itself, owning its memory.
func decValue(v *resp.Value) (resp.Value, error) { return ownReply(v), nil }

// zmembersFrom decodes sorted-set members with scores: RESP3 pairs ([member, score] arrays)
// or a RESP2 flat list (member, score, member, score, ...).
func zmembersFrom(name string, v *resp.Value) ([]ZMember, error) {
	if v.Kind == resp.KindNull {
		return nil, nil
	}
	if !isList(v) && v.Kind != resp.KindMap {
		return nil, unexpected(name, v)
	}
	n := v.Len()
	if n == 0 {
		return []ZMember{}, nil
	}
	first := v.Elem(0)
	if isList(&first) {
		out := make([]ZMember, 0, n)
		var buf [2]resp.Value
		for _, p := range v.All() {
			if !isList(&p) || p.Len() != 2 {
				return nil, unexpected(name, &p)
			}
			pair := p.AppendElems(buf[:0])
			z, err := zmemberOf(name, &pair[0], &pair[1])
			if err != nil {
				return nil, err
			}
			out = append(out, z)
		}
		return out, nil
	}
	if n%2 != 0 {
		return nil, malformed(name, "odd member/score list")
	}
	out := make([]ZMember, 0, n/2)
	var m resp.Value
	for i, e := range v.All() {
		if i%2 == 0 {
			m = e
			continue
		}
		z, err := zmemberOf(name, &m, &e)
		if err != nil {
			return nil, err
		}
		out = append(out, z)
	}
	return out, nil
}

// zmemberOf decodes a member and its score.
func zmemberOf(name string, m, s *resp.Value) (ZMember, error) {
	member, _, err := stringReply(name, m)
	if err != nil {
		return ZMember{}, err
	}
	score, err := floatReply(name, s)
	if err != nil {
		return ZMember{}, err
	}
	return ZMember{Member: member, Score: score}, nil
}

func decZMembers(v *resp.Value) ([]ZMember, error) { return zmembersFrom("sorted set", v) }

// decOptZMember decodes ZPOPMIN/ZPOPMAX without a count: [member, score], or an empty list.
func decOptZMember(v *resp.Value) (Optional[ZMember], error) {
	zs, err := zmembersFrom("sorted set", v)
	if err != nil || len(zs) == 0 {
		return Optional[ZMember]{}, err
	}
	return Optional[ZMember]{Value: zs[0], Valid: true}, nil
}

// decFieldValues decodes field/value pairs: RESP3 pairs or a RESP2 flat list.
func decFieldValues(v *resp.Value) ([]FieldValue, error) {
	zs, err := pairList("hash", v)
	if err != nil {
		return nil, err
	}
	out := make([]FieldValue, len(zs))
	for i, p := range zs {
		out[i] = FieldValue{Field: p[0], Value: p[1]}
	}
	return out, nil
}

// pairList decodes a list of string pairs, nested ([a, b] arrays) or flat (a, b, a, b).
func pairList(name string, v *resp.Value) ([][2]string, error) {
	if v.Kind == resp.KindNull {
		return nil, nil
	}
	if !isList(v) && v.Kind != resp.KindMap {
		return nil, unexpected(name, v)
	}
	n := v.Len()
	out := make([][2]string, 0, n/2)
	if n == 0 {
		return out, nil
	}
	first := v.Elem(0)
	if isList(&first) {
		for _, p := range v.All() {
			if !isList(&p) || p.Len() != 2 {
				return nil, unexpected(name, &p)
			}
			a, b := p.Elem(0), p.Elem(1)
			x, _, err := stringReply(name, &a)
			if err != nil {
				return nil, err
			}
			y, _, err := stringReply(name, &b)
			if err != nil {
				return nil, err
			}
			out = append(out, [2]string{x, y})
		}
		return out, nil
	}
	if n%2 != 0 {
		return nil, malformed(name, "odd pair list")
	}
	var x string
	for i, e := range v.All() {
		s, _, err := stringReply(name, &e)
		if err != nil {
			return nil, err
		}
		if i%2 == 0 {
			x = s
		} else {
			out = append(out, [2]string{x, s})
		}
	}
	return out, nil
}

// scanParts splits a SCAN-family reply into its cursor and its elements.
func scanParts(v *resp.Value) (uint64, resp.Value, error) {
	if !isList(v) || v.Len() != 2 {
		return 0, resp.Value{}, unexpected("SCAN", v)
	}
	c, elems := v.Elem(0), v.Elem(1)
	s, ok := textOf(&c)
	if !ok {
		return 0, resp.Value{}, unexpected("SCAN", &c)
	}
	cursor, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, resp.Value{}, malformed("SCAN", "cursor is not a number")
	}
	return cursor, elems, nil
}

func decScan(v *resp.Value) (ScanPage, error) {
	cursor, elems, err := scanParts(v)
	if err != nil {
		return ScanPage{}, err
	}
	keys, err := decStrings(&elems)
	return ScanPage{Cursor: cursor, Keys: keys}, err
}

func decHScan(v *resp.Value) (HScanPage, error) {
	cursor, elems, err := scanParts(v)
	if err != nil {
		return HScanPage{}, err
	}
	fields, err := decFieldValues(&elems)
	return HScanPage{Cursor: cursor, Fields: fields}, err
}

func decZScan(v *resp.Value) (ZScanPage, error) {
	cursor, elems, err := scanParts(v)
	if err != nil {
		return ZScanPage{}, err
	}
	members, err := zmembersFrom("ZSCAN", &elems)
	return ZScanPage{Cursor: cursor, Members: members}, err
}

// TTL values for keys without a timeout and for missing keys.
const (
	// NoExpiry is returned by TTL and PTTL for a key that exists without a timeout.
	NoExpiry time.Duration = -1
	// KeyMissing is returned by TTL and PTTL for a key that does not exist.
	KeyMissing time.Duration = -2
)

func ttlOf(n int64, unit time.Duration) time.Duration {
	switch {
	case n == -1:
		return NoExpiry
	case n < 0:
		return KeyMissing
	}
	return time.Duration(n) * unit
}

func decTTL(v *resp.Value) (time.Duration, error) {
	n, err := intReply("TTL", v)
	return ttlOf(n, time.Second), err
}

func decPTTL(v *resp.Value) (time.Duration, error) {
	n, err := intReply("PTTL", v)
	return ttlOf(n, time.Millisecond), err
}

// decSeconds decodes a count of seconds as a duration.
func decSeconds(v *resp.Value) (time.Duration, error) {
	n, err := intReply("seconds", v)
	return time.Duration(n) * time.Second, err
}

// decOptUnix decodes an absolute Unix time in seconds; negative values (no expiry, no key)
// are absent.
func decOptUnix(v *resp.Value) (Optional[time.Time], error) {
	n, err := intReply("time", v)
	if err != nil || n < 0 {
		return Optional[time.Time]{}, err
	}
	return Optional[time.Time]{Value: time.Unix(n, 0), Valid: true}, nil
}

func decOptUnixMillis(v *resp.Value) (Optional[time.Time], error) {
	n, err := intReply("time", v)
	if err != nil || n < 0 {
		return Optional[time.Time]{}, err
	}
	return Optional[time.Time]{Value: time.UnixMilli(n), Valid: true}, nil
}

func decUnix(v *resp.Value) (time.Time, error) {
	n, err := intReply("time", v)
	return time.Unix(n, 0), err
}

// decTime decodes TIME's reply: seconds and microseconds, as strings.
func decTime(v *resp.Value) (time.Time, error) {
	if !isList(v) || v.Len() != 2 {
		return time.Time{}, unexpected("TIME", v)
	}
	s, us := v.Elem(0), v.Elem(1)
	sec, err := intReply("TIME", &s)
	if err != nil {
		return time.Time{}, err
	}
	micro, err := intReply("TIME", &us)
	if err != nil {
		return time.Time{}, err
	}
	return time.Unix(sec, micro*1000), nil
}

// decKeyed decodes a pop's reply: null when nothing was popped (or a blocking pop's timeout
// expired), otherwise [key, rest...] of n elements, the key a string and the rest decoded by
// rest from the elements after it. name names the command in errors.
func decKeyed[T any](name string, n int, v *resp.Value, rest func(v *resp.Value) (T, error)) (key string, r T, ok bool, err error) {
	if v.Kind == resp.KindNull {
		return "", r, false, nil
	}
	if !isList(v) || v.Len() != n {
		return "", r, false, unexpected(name, v)
	}
	k := v.Elem(0)
	if key, _, err = stringReply(name, &k); err != nil {
		return "", r, false, err
	}
	if r, err = rest(v); err != nil {
		var zero T
		return "", zero, false, err
	}
	return key, r, true, nil
}

// decKeyValues decodes LMPOP's [key, [elements]]; null when nothing was popped.
func decKeyValues(v *resp.Value) (Optional[KeyValues], error) {
	key, values, ok, err := decKeyed("LMPOP", 2, v, func(v *resp.Value) ([]string, error) {
		elems := v.Elem(1)
		return decStrings(&elems)
	})
	return Optional[KeyValues]{Value: KeyValues{Key: key, Values: values}, Valid: ok}, err
}

// decKeyMembers decodes ZMPOP's [key, [[member, score], ...]]; null when nothing was popped.
func decKeyMembers(v *resp.Value) (Optional[KeyMembers], error) {
	key, members, ok, err := decKeyed("ZMPOP", 2, v, func(v *resp.Value) ([]ZMember, error) {
		elems := v.Elem(1)
		return zmembersFrom("ZMPOP", &elems)
	})
	return Optional[KeyMembers]{Value: KeyMembers{Key: key, Members: members}, Valid: ok}, err
}

// decKeyValue decodes BLPOP's [key, element]; null when the timeout expired.
func decKeyValue(v *resp.Value) (Optional[KeyValue], error) {
	key, value, ok, err := decKeyed("BLPOP", 2, v, func(v *resp.Value) (string, error) {
		e := v.Elem(1)
		value, _, err := stringReply("BLPOP", &e)
		return value, err
	})
	return Optional[KeyValue]{Value: KeyValue{Key: key, Value: value}, Valid: ok}, err
}

// KeyMember is a member popped from a sorted set, with its score and the set's key
// (BZPOPMIN, BZPOPMAX).
type KeyMember struct {
	Key string
	ZMember
}

// decKeyMember decodes BZPOPMIN's [key, member, score]; null when the timeout expired.
func decKeyMember(v *resp.Value) (Optional[KeyMember], error) {
	key, z, ok, err := decKeyed("BZPOP", 3, v, func(v *resp.Value) (ZMember, error) {
		m, sc := v.Elem(1), v.Elem(2)
		return zmemberOf("BZPOP", &m, &sc)
	})
	return Optional[KeyMember]{Value: KeyMember{Key: key, ZMember: z}, Valid: ok}, err
}

// decInfoMap decodes a "field:value" text reply, one pair per line (CLUSTER INFO, and each
// section of INFO); comment and blank lines are skipped.
func decInfoMap(v *resp.Value) (map[string]string, error) {
	s, ok := textOf(v)
	if !ok {
		return nil, unexpected("INFO", v)
	}
	out := map[string]string{}
	for _, line := range strings.Split(s, "\n") {
		line = strings.TrimRight(line, "\r")
		if line == "" || line[0] == '#' {
			continue
		}
		if k, val, found := strings.Cut(line, ":"); found {
			out[k] = val
		}
	}
	return out, nil
}

// Addr is a host and port a server reports (SENTINEL GET-MASTER-ADDR-BY-NAME, ROLE).
type Addr struct {
	Host string
	Port int
}

// String returns host:port.
func (a Addr) String() string { return Endpoint(a).String() }

// decAddr decodes [host, port]; null when unknown.
func decAddr(v *resp.Value) (Optional[Addr], error) {
	if v.Kind == resp.KindNull {
		return Optional[Addr]{}, nil
	}
	if !isList(v) || v.Len() != 2 {
		return Optional[Addr]{}, unexpected("address", v)
	}
	h, p := v.Elem(0), v.Elem(1)
	host, _, err := stringReply("address", &h)
	if err != nil {
		return Optional[Addr]{}, err
	}
	port, err := intReply("address", &p)
	if err != nil {
		return Optional[Addr]{}, err
	}
	return Optional[Addr]{Value: Addr{Host: host, Port: int(port)}, Valid: true}, nil
}

// decBitField decodes BITFIELD's list of integers, null for an overflow that FAIL refused.
func decBitField(v *resp.Value) ([]Optional[int64], error) { return decOptInts(v) }
