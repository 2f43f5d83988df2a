package client

import (
	"bytes"
	"strconv"
	"strings"

	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/internal/command"
	"github.com/respire-go/respire/netio/resp"
)

// Key prefixes are applied in one place: namespace.rewrite turns a command's encoded frame into
// the frame that is sent, with every key argument prefixed. Typed commands (run), raw ones
// (Client.Do, DedicatedConn.Do, View.Do) and batches (Batch.prepare) all go through it before
// their frames reach the engine, so whatever reads the frame afterwards (the connection, and
// the Cluster router computing a key's hash slot from the frame) sees the physical keys.
//
// The key positions come from the command table (command.Info.Keys: Redis's own key
// specifications, every kind: fixed index, keyword search, ranges, key counts), with four
// exceptions that the table cannot describe: KEYS and SCAN take a glob pattern rather than a
// key; SORT's BY, GET and STORE arguments are marked incomplete by Redis; MIGRATE's key may be
// empty in its KEYS form. RANDOMKEY is refused: nothing confines it to the namespace.

// MaxKeyPrefixLen bounds Options.KeyPrefix, Options.PubSubPrefix and the composed prefix of a
// View, in bytes. Longer prefixes are refused with a *ConfigError before anything is sent.
const MaxKeyPrefixLen = 1024

// ErrKeyPrefix: a command was refused because a key prefix cannot be applied to it. Nothing
// was sent. Match it with errors.Is; a *KeyPrefixError says why.
var ErrKeyPrefix = sentinel("respire: command refused under a key prefix")

// KeyPrefixError reports a command that cannot run under a key prefix (Options.KeyPrefix or
// a View): respire cannot tell where its keys are (a command unknown to the command table, a
// malformed call), or the command reaches keys outside the namespace (RANDOMKEY). Nothing was
// sent. errors.Is(err, ErrKeyPrefix) matches it. It never holds the prefix or the keys.
type KeyPrefixError struct {
	// Command is the refused command's name, upper case.
	Command string
	// Reason says why.
	Reason string
}

// Error implements error.
func (e *KeyPrefixError) Error() string {
	return "respire: " + e.Command + " cannot run under a key prefix: " + e.Reason
}

// Is matches ErrKeyPrefix.
func (e *KeyPrefixError) Is(target error) bool { return target == ErrKeyPrefix }

// namespace holds the prefixes a client or a view applies. A nil *namespace applies none, and
// costs the hot path one nil comparison.
type namespace struct {
	// key is prepended to every key argument, and removed from the keys of replies.
	key string
	// keyGlob is key with the glob metacharacters escaped, for KEYS and SCAN MATCH patterns.
	keyGlob string
	// channel is prepended to the channels of PUBLISH and SPUBLISH (and of subscriptions, in
	// pubsub.go): Options.PubSubPrefix. Views keep their client's.
	channel string
	// channelGlob is channel with the glob metacharacters escaped, for PSUBSCRIBE patterns.
	channelGlob string
	// err, when set, fails every command: a view whose composed prefix is too long.
	err error
}

// newNamespace returns the namespace of key and channel prefixes, or nil when both are empty.
func newNamespace(key, channel string) *namespace {
	if key == "" && channel == "" {
		return nil
	}
	return &namespace{key: key, keyGlob: escapeGlob(key), channel: channel, channelGlob: escapeGlob(channel)}
}

// withKey returns the namespace with more appended to its key prefix.
func (ns *namespace) withKey(more string) *namespace {
	key, channel := "", ""
	if ns != nil {
		if ns.err != nil {
			return ns
		}
		key, channel = ns.key, ns.channel
	}
	if more == "" {
		return ns
	}
	if len(key)+len(more) > MaxKeyPrefixLen {
		return &namespace{err: configErr("WithKeyPrefix", "the composed key prefix is longer than MaxKeyPrefixLen ("+
			strconv.Itoa(MaxKeyPrefixLen)+" bytes)")}
	}
	return newNamespace(key+more, channel)
}

// keyPrefix returns the key prefix ("" for none).
func (ns *namespace) keyPrefix() string {
	if ns == nil {
		return ""
	}
	return ns.key
}

// escapeGlob escapes the characters Redis's glob matching gives a meaning (* ? [ ] \), so that
// a prefix matches only itself inside a pattern.
func escapeGlob(s string) string {
	n := 0
	for i := 0; i < len(s); i++ {
		if isGlobMeta(s[i]) {
			n++
		}
	}
	if n == 0 {
		return s
	}
	out := make([]byte, 0, len(s)+n)
	for i := 0; i < len(s); i++ {
		if isGlobMeta(s[i]) {
			out = append(out, '\\')
		}
		out = append(out, s[i])
	}
	return string(out)
}

func isGlobMeta(c byte) bool { return c == '*' || c == '?' || c == '[' || c == ']' || c == '\\' }

// replyKeys says where a command's reply holds keys, which rewrite's caller strips of the
// prefix before decoding (strip).
type replyKeys uint8

const (
	// replyNoKeys: the reply holds no key (or only physical names, documented as such).
	replyNoKeys replyKeys = iota
	// replyKeyList: every element is a key (KEYS).
	replyKeyList
	// replyScanPage: [cursor, [key, ...]] (SCAN).
	replyScanPage
	// replyFirstKey: the first element is a key (BLPOP, BRPOP, BZPOPMIN, BZPOPMAX, LMPOP,
	// BLMPOP, ZMPOP, BZMPOP).
	replyFirstKey
	// replyStreams: a map or list of [stream, entries] (XREAD, XREADGROUP).
	replyStreams
)

// replyKeysOf returns where the reply to the command holds keys.
func replyKeysOf(info *command.Info) replyKeys {
	switch info.Name() {
	case "KEYS":
		return replyKeyList
	case "SCAN":
		return replyScanPage
	case "BLPOP", "BRPOP", "BZPOPMIN", "BZPOPMAX", "LMPOP", "BLMPOP", "ZMPOP", "BZMPOP":
		return replyFirstKey
	case "XREAD", "XREADGROUP":
		return replyStreams
	}
	return replyNoKeys
}

// argOp is what rewrite does to one argument.
type argOp uint8

const (
	opKeep    argOp = iota
	opKey           // prepend the key prefix
	opGlob          // prepend the escaped key prefix (a pattern over keys)
	opChannel       // prepend the channel prefix
)

// frameArgsStack is how many arguments rewrite handles without allocating.
const frameArgsStack = 32

// rewrite appends to dst the frame of the command, as it must be sent in the namespace: every
// key prefixed (and patterns over keys, and PUBLISH's channel). info is the command's entry in
// the table (nil for a command the table does not know) and name its name for errors. It
// returns where the reply holds keys. A command the namespace cannot be applied to fails with a
// *KeyPrefixError; dst is then returned as it was.
func (ns *namespace) rewrite(dst, frame []byte, info *command.Info, name string) ([]byte, replyKeys, error) {
	if ns.err != nil {
		return dst, replyNoKeys, ns.err
	}
	if info == nil {
		if ns.key != "" {
			return dst, replyNoKeys, &KeyPrefixError{Command: name,
				Reason: "the command table does not know it, so respire cannot tell which arguments are keys"}
		}
		return append(dst, frame...), replyNoKeys, nil
	}
	var argStack [frameArgsStack][]byte
	args, ok := splitFrame(frame, argStack[:0])
	if !ok {
		panic("respire: rewrite of a frame respire did not encode")
	}
	var opStack [frameArgsStack]argOp
	ops := opStack[:0]
	if len(args) > len(opStack) {
		ops = make([]argOp, 0, len(args))
	}
	ops = ops[:len(args)]
	clear(ops)
	appendMatch := false
	rk := replyNoKeys
	if ns.key != "" {
		var err error
		appendMatch, err = ns.keyOps(info, args, ops)
		if err != nil {
			return dst, replyNoKeys, err
		}
		rk = replyKeysOf(info)
	}
	if ns.channel != "" && len(args) > 1 {
		switch info.Name() {
		case "PUBLISH", "SPUBLISH":
			ops[1] = opChannel
		}
	}
	n := len(args)
	if appendMatch {
		n += 2
	}
	dst = resp.AppendArrayHeader(dst, n)
	for i, a := range args {
		switch ops[i] {
		case opKeep:
			dst = resp.AppendBulk(dst, a)
		case opKey:
			dst = appendPrefixed(dst, ns.key, a)
		case opGlob:
			dst = appendPrefixed(dst, ns.keyGlob, a)
		case opChannel:
			dst = appendPrefixed(dst, ns.channel, a)
		}
	}
	if appendMatch {
		dst = resp.AppendBulkString(dst, "MATCH")
		dst = appendPrefixed(dst, ns.keyGlob, []byte{'*'})
	}
	return dst, rk, nil
}

// keyOps marks the arguments of the call that are keys (opKey) or patterns over keys (opGlob).
// appendMatch asks for a MATCH pattern to be added (SCAN without one).
func (ns *namespace) keyOps(info *command.Info, args [][]byte, ops []argOp) (appendMatch bool, err error) {
	name := info.Name()
	refuse := func(reason string) error { return &KeyPrefixError{Command: name, Reason: reason} }
	switch name {
	case "KEYS":
		if len(args) != 2 {
			return false, refuse("KEYS takes one pattern")
		}
		ops[1] = opGlob
		return false, nil
	case "SCAN":
		// SCAN cursor [MATCH pattern] [COUNT count] [TYPE type]: options come in pairs.
		matched := false
		for j := 2; j+1 < len(args); j += 2 {
			if bytes.EqualFold(args[j], []byte("MATCH")) {
				ops[j+1] = opGlob
				matched = true
			}
		}
		return !matched, nil
	case "RANDOMKEY":
		return false, refuse("it returns a key of the whole database, outside the namespace")
	case "SORT", "SORT_RO":
		return false, sortOps(args, ops, name)
	}
	var idxStack [frameArgsStack]int
	keys, complete := info.Keys(args, idxStack[:0])
	if !complete {
		if name != "MIGRATE" {
			return false, refuse("its key positions cannot be determined from its arguments")
		}
		complete = true // MIGRATE's one incomplete case: an empty key before KEYS, skipped below
	}
	for _, k := range keys {
		if name == "MIGRATE" && k == 3 && len(args[k]) == 0 {
			continue
		}
		ops[k] = opKey
	}
	return false, nil
}

// sortOps marks SORT's keys: the sorted key, the BY pattern (a key pattern, unless it has no
// '*': then it only disables sorting), each GET pattern but "#" (the element itself), and the
// STORE destination. SORT key [BY pattern] [LIMIT offset count] [GET pattern ...] [ASC|DESC]
// [ALPHA] [STORE destination].
func sortOps(args [][]byte, ops []argOp, name string) error {
	if len(args) < 2 {
		return &KeyPrefixError{Command: name, Reason: "it needs a key"}
	}
	ops[1] = opKey
	for j := 2; j < len(args); j++ {
		a := args[j]
		switch {
		case bytes.EqualFold(a, []byte("BY")) && j+1 < len(args):
			j++
			if bytes.IndexByte(args[j], '*') >= 0 {
				ops[j] = opKey
			}
		case bytes.EqualFold(a, []byte("GET")) && j+1 < len(args):
			j++
			if !bytes.Equal(args[j], []byte("#")) {
				ops[j] = opKey
			}
		case bytes.EqualFold(a, []byte("STORE")) && j+1 < len(args):
			j++
			ops[j] = opKey
		case bytes.EqualFold(a, []byte("LIMIT")):
			j += 2
		}
	}
	return nil
}

// appendPrefixed appends the bulk string prefix+a.
func appendPrefixed(dst []byte, prefix string, a []byte) []byte {
	dst = append(dst, '$')
	dst = strconv.AppendInt(dst, int64(len(prefix)+len(a)), 10)
	dst = append(dst, '\r', '\n')
	dst = append(dst, prefix...)
	dst = append(dst, a...)
	return append(dst, '\r', '\n')
}

// splitFrame returns the arguments of a frame this package encoded (an array of bulk strings),
// as slices of it, appended to dst; ok is false for anything else.
func splitFrame(frame []byte, dst [][]byte) ([][]byte, bool) {
	n, p, ok := frameInt(frame, 0, '*')
	if !ok {
		return dst, false
	}
	for range n {
		var l int
		l, p, ok = frameInt(frame, p, '$')
		if !ok || l < 0 || p+l+2 > len(frame) {
			return dst, false
		}
		dst = append(dst, frame[p:p+l:p+l])
		p += l + 2
	}
	return dst, p == len(frame)
}

// frameInt reads "<tag><digits>\r\n" at p and returns the number and the position after it.
func frameInt(frame []byte, p int, tag byte) (int, int, bool) {
	if p >= len(frame) || frame[p] != tag {
		return 0, p, false
	}
	p++
	n, digits := 0, 0
	for p < len(frame) && frame[p] >= '0' && frame[p] <= '9' {
		n = n*10 + int(frame[p]-'0')
		p++
		digits++
	}
	if digits == 0 || digits > 10 || p+1 >= len(frame) || frame[p] != '\r' || frame[p+1] != '\n' {
		return 0, p, false
	}
	return n, p + 2, true
}

// strip returns the reply with the key prefix removed from the keys it holds (where says
// where). A key without the prefix (which a correct server never returns here) is left as it
// is. Error replies and nulls are returned unchanged. The result shares v's storage.
func (ns *namespace) strip(v *resp.Value, where replyKeys) resp.Value {
	if where == replyNoKeys || !v.Kind.IsAggregate() {
		return *v
	}
	switch where {
	case replyKeyList:
		return ns.stripEach(v, func(int) bool { return true })
	case replyScanPage:
		return ns.mapElems(v, func(i int, e resp.Value) resp.Value {
			if i == 1 && e.Kind.IsAggregate() {
				return ns.stripEach(&e, func(int) bool { return true })
			}
			return e
		})
	case replyFirstKey:
		return ns.stripEach(v, func(i int) bool { return i == 0 })
	case replyStreams:
		if v.Kind == resp.KindMap {
			return ns.stripEach(v, func(i int) bool { return i%2 == 0 })
		}
		return ns.mapElems(v, func(_ int, e resp.Value) resp.Value {
			if e.Kind.IsAggregate() {
				return ns.stripEach(&e, func(i int) bool { return i == 0 })
			}
			return e
		})
	}
	return *v
}

// stripEach removes the prefix from the elements whose index which selects.
func (ns *namespace) stripEach(v *resp.Value, which func(int) bool) resp.Value {
	return ns.mapElems(v, func(i int, e resp.Value) resp.Value {
		if which(i) {
			return ns.unkey(e)
		}
		return e
	})
}

// mapElems rebuilds an aggregate with its elements passed through f.
func (ns *namespace) mapElems(v *resp.Value, f func(int, resp.Value) resp.Value) resp.Value {
	elems := make([]resp.Value, 0, v.Len())
	for i, e := range v.All() {
		elems = append(elems, f(i, e))
	}
	switch v.Kind {
	case resp.KindMap:
		return resp.MapOf(elems...)
	case resp.KindSet:
		return resp.SetOf(elems...)
	case resp.KindPush:
		return resp.PushOf(elems...)
	}
	return resp.ArrayOf(elems...)
}

// unkey removes the key prefix from a string element.
func (ns *namespace) unkey(e resp.Value) resp.Value {
	switch e.Kind {
	case resp.KindBulkString, resp.KindSimpleString, resp.KindVerbatimString:
		if len(e.Str) >= len(ns.key) && string(e.Str[:len(ns.key)]) == ns.key {
			e.Str = e.Str[len(ns.key):]
		}
	}
	return e
}

// prefixKeys returns keys with the key prefix (WATCH, built by hand).
func (ns *namespace) prefixKeys(keys []string) []string {
	if ns == nil || ns.key == "" {
		return keys
	}
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = ns.key + k
	}
	return out
}

// applyTo rewrites a prepared call's frame in the namespace (typed and raw calls). The call
// keeps both buffers for reuse. It returns where the reply holds keys.
func (ns *namespace) applyTo(cl *call, info *command.Info) (replyKeys, error) {
	out, rk, err := ns.rewrite(cl.alt[:0], cl.cmd.Frame, info, cl.cmd.Name)
	if err != nil {
		cl.alt = out
		return replyNoKeys, err
	}
	cl.cmd.Frame, cl.alt = out, cl.cmd.Frame[:0]
	return rk, nil
}

// topic returns the physical name of a subscription's channel, shard channel or pattern: with
// the channel prefix (escaped for a pattern, so that the prefix matches only itself).
func (ns *namespace) topic(kind fsm.TopicKind, name string) string {
	if ns == nil || ns.channel == "" {
		return name
	}
	if kind == fsm.TopicPattern {
		return ns.channelGlob + name
	}
	return ns.channel + name
}

// untopic returns the name an application gave a channel, shard channel or pattern: without
// the channel prefix.
func (ns *namespace) untopic(kind fsm.TopicKind, name string) string {
	if ns == nil || ns.channel == "" {
		return name
	}
	prefix := ns.channel
	if kind == fsm.TopicPattern {
		prefix = ns.channelGlob
	}
	return strings.TrimPrefix(name, prefix)
}
