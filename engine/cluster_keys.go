package engine

import (
	"strconv"

	"github.com/respire-go/respire/internal/command"
	"github.com/respire-go/respire/netio/topo"
)

// Keyless is the slot of a command without keys: any primary may run it.
const Keyless = -1

// CrossSlotError reports a command whose keys hash to different slots: a Cluster node would
// reject it with CROSSSLOT, so it is refused before it is sent or queued. It carries no key;
// KeyArg locates the first conflicting key among the command's arguments for callers that
// opted in to see it.
type CrossSlotError struct {
	// Command is the command's name ("MGET").
	Command string
	// ExpectedSlot is the slot of the command's first key, ConflictingSlot the first other slot.
	ExpectedSlot, ConflictingSlot int
	// KeyArg is the index, among the command's arguments (the name is 0), of the first key in
	// ConflictingSlot.
	KeyArg int
}

// Error implements error.
func (e *CrossSlotError) Error() string {
	return "respire: " + e.Command + " keys map to different Cluster slots (" + strconv.Itoa(e.ExpectedSlot) +
		" and " + strconv.Itoa(e.ConflictingSlot) + "); give them one hash tag, such as {order:42}"
}

// maxStackArgs is how many arguments FrameSlot examines without allocating.
const maxStackArgs = 32

// FrameSlot returns the Cluster slot of an encoded command (a RESP array of bulk strings): the
// slot of its keys, as the command table's key specifications find them (the same rule for
// typed and raw commands), or Keyless for a command without keys or unknown to the table. Keys
// in different slots give a *CrossSlotError. A shard channel routes like a key (SPUBLISH).
// It allocates nothing for commands of up to 32 arguments.
func FrameSlot(frame []byte) (int, error) {
	var stack [maxStackArgs][]byte
	args, ok := frameArgs(frame, stack[:0])
	if !ok || len(args) == 0 {
		return Keyless, nil
	}
	var sub []byte
	if len(args) > 1 {
		sub = args[1]
	}
	info := command.Lookup(args[0], sub)
	if info == nil {
		return Keyless, nil
	}
	var idx [maxStackArgs]int
	keys, _ := info.Keys(args, idx[:0])
	if len(keys) == 0 && info.PubSub() && len(args) > 1 && shardChannelCommand(info.Name()) {
		keys = append(keys, 1)
	}
	if len(keys) == 0 {
		return Keyless, nil
	}
	slot := int(topo.KeySlot(args[keys[0]]))
	for _, k := range keys[1:] {
		if s := int(topo.KeySlot(args[k])); s != slot {
			return Keyless, &CrossSlotError{Command: info.Name(), ExpectedSlot: slot, ConflictingSlot: s, KeyArg: k}
		}
	}
	return slot, nil
}

// shardChannelCommand reports whether a pub/sub command's first argument is a shard channel,
// which Redis routes like a key although its key specification says not_key.
func shardChannelCommand(name string) bool {
	return name == "SPUBLISH" || name == "SSUBSCRIBE" || name == "SUNSUBSCRIBE"
}

// FrameArgs returns the arguments of an encoded command, as views into frame, appended to dst;
// ok is false when frame is not a RESP array of bulk strings.
func FrameArgs(frame []byte, dst [][]byte) ([][]byte, bool) { return frameArgs(frame, dst) }

func frameArgs(frame []byte, dst [][]byte) ([][]byte, bool) {
	n, i, ok := frameHeader(frame, 0, '*')
	if !ok {
		return dst, false
	}
	for k := 0; k < n; k++ {
		var size int
		size, i, ok = frameHeader(frame, i, '$')
		if !ok || size < 0 || i+size+2 > len(frame) {
			return dst, false
		}
		dst = append(dst, frame[i:i+size])
		i += size + 2
	}
	return dst, true
}

// frameHeader reads "<kind><decimal>\r\n" at i and returns the number and the index after it.
func frameHeader(b []byte, i int, kind byte) (int, int, bool) {
	if i >= len(b) || b[i] != kind {
		return 0, i, false
	}
	i++
	n, digits := 0, 0
	for i < len(b) && b[i] >= '0' && b[i] <= '9' && digits < 10 {
		n = n*10 + int(b[i]-'0')
		i++
		digits++
	}
	if digits == 0 || i+1 >= len(b) || b[i] != '\r' || b[i+1] != '\n' {
		return 0, i, false
	}
	return n, i + 2, true
}
