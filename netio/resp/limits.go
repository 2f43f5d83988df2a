package resp

// Default limits, used for every Limits field that is zero or negative.
const (
	// DefaultMaxBulkLen matches Redis' proto-max-bulk-len default.
	DefaultMaxBulkLen = 512 << 20
	// DefaultMaxLineLen matches Redis' limit on inline requests.
	DefaultMaxLineLen = 64 << 10
	// DefaultMaxElements is the default cap on one aggregate's element
	// count.
	DefaultMaxElements = 1 << 24
	// DefaultMaxValues is the default cap on the total number of values in
	// one reply.
	DefaultMaxValues = 1 << 24
	// DefaultMaxDepth is the default cap on aggregate nesting.
	DefaultMaxDepth = 64
	// MaxDepthCeiling is the largest MaxDepth honoured.
	MaxDepthCeiling = 1 << 16
	// DefaultMaxReplyLen is the default cap on the encoded size of one
	// value.
	DefaultMaxReplyLen = 1 << 30
	// MaxReplyLenCeiling is the largest MaxReplyLen honoured (2 GiB - 1), and
	// so the largest value a Reader or Parse accepts: the compact storage
	// of a value addresses its contents with 32-bit offsets.
	MaxReplyLenCeiling = 1<<31 - 1
)

// hardCap keeps every resolved limit far enough below the int range that
// offset arithmetic such as pos+limit+2 cannot overflow.
const hardCap = int(^uint(0)>>1) >> 2

// Limits bounds what Parse, ParseCommand and Reader accept, so hostile or
// corrupt input is rejected with a *ProtocolError instead of exhausting
// memory. The zero value, and a nil *Limits, mean "all defaults"; each
// field that is zero or negative takes its default individually.
//
// Every limit is checked when the header that would exceed it is read,
// before anything is allocated for it, and nothing is allocated on the
// strength of a length header alone: Parse sizes storage only after the
// whole value is present in the buffer, and Reader grows storage with the
// bytes that actually arrive. The limits are therefore sanity bounds on
// what a peer may make this side buffer and decode.
type Limits struct {
	// MaxBulkLen caps the payload length of a bulk string, bulk error or
	// verbatim string, and of each argument of a command request.
	// Default DefaultMaxBulkLen (512 MiB).
	MaxBulkLen int
	// MaxLineLen caps the length, excluding CRLF, of any CRLF-terminated
	// line: simple strings and errors, numbers, length headers, and
	// inline commands. Default DefaultMaxLineLen (64 KiB).
	MaxLineLen int
	// MaxElements caps the element count of a single aggregate, counting
	// both the key and the value of every map or attribute pair, and the
	// argument count of a command. Default DefaultMaxElements (2^24).
	MaxElements int
	// MaxValues caps the total number of nested values in one reply:
	// every element of every aggregate plus every attribute key and
	// value. Default DefaultMaxValues (2^24).
	MaxValues int
	// MaxDepth caps aggregate nesting: a flat array has depth 1, an array
	// inside an array depth 2. Attribute maps count as aggregates.
	// Default DefaultMaxDepth (64); values above MaxDepthCeiling are
	// lowered to it, since decoding recurses once per level.
	MaxDepth int
	// MaxReplyLen caps the encoded size in bytes of one value or command,
	// and with it the memory a value's storage may claim. Default
	// DefaultMaxReplyLen (1 GiB); values above MaxReplyLenCeiling (2 GiB)
	// are lowered to it.
	MaxReplyLen int
}

// limits is Limits with defaults applied and every field clamped to
// [1, hardCap].
type limits struct {
	bulk, line, elems, values, depth, reply int
}

var defaultLimits = limits{
	bulk:   min(DefaultMaxBulkLen, hardCap),
	line:   min(DefaultMaxLineLen, hardCap),
	elems:  min(DefaultMaxElements, hardCap),
	values: min(DefaultMaxValues, hardCap),
	depth:  min(DefaultMaxDepth, hardCap),
	reply:  min(DefaultMaxReplyLen, hardCap),
}

func pick(v, def int) int {
	if v <= 0 {
		v = def
	}
	return min(v, hardCap)
}

func (l *Limits) resolve() limits {
	if l == nil {
		return defaultLimits
	}
	return limits{
		bulk:   pick(l.MaxBulkLen, DefaultMaxBulkLen),
		line:   pick(l.MaxLineLen, DefaultMaxLineLen),
		elems:  pick(l.MaxElements, DefaultMaxElements),
		values: pick(l.MaxValues, DefaultMaxValues),
		depth:  min(pick(l.MaxDepth, DefaultMaxDepth), MaxDepthCeiling),
		reply:  min(pick(l.MaxReplyLen, DefaultMaxReplyLen), MaxReplyLenCeiling),
	}
}
