package client

import (
	"strconv"

	"github.com/respire-go/respire/netio/resp"
)

// Defaults and bounds of ReplyLimits.
const (
	// DefaultMaxBulkLen is the default ReplyLimits.MaxBulkLen: 512 MiB, Redis's own
	// proto-max-bulk-len.
	DefaultMaxBulkLen = resp.DefaultMaxBulkLen
	// DefaultMaxElements is the default ReplyLimits.MaxElements: 2^24 (16,777,216).
	DefaultMaxElements = resp.DefaultMaxElements
	// DefaultMaxDepth is the default ReplyLimits.MaxDepth.
	DefaultMaxDepth = resp.DefaultMaxDepth
	// DefaultMaxReplyLen is the default ReplyLimits.MaxReplyLen: 1 GiB.
	DefaultMaxReplyLen = resp.DefaultMaxReplyLen

	// MinBulkLen, MinElements, MinDepth and MinReplyLen are the smallest values ReplyLimits
	// accepts: below them the connection handshake itself could not complete.
	MinBulkLen  = 512
	MinElements = 64
	MinDepth    = 4
	MinReplyLen = 4 << 10
	// MaxDepthCeiling is the largest ReplyLimits.MaxDepth.
	MaxDepthCeiling = resp.MaxDepthCeiling
	// MaxReplyLenCeiling is the largest ReplyLimits.MaxReplyLen: 2 GiB - 1.
	MaxReplyLenCeiling = resp.MaxReplyLenCeiling
)

// ReplyLimits bounds what a client accepts from a server in one reply, on every connection
// (commands, dedicated, pub/sub, handshakes). The zero value of each field means its default.
//
// A reply is decoded as it arrives and every limit is checked when the header that would exceed
// it is read, before anything is allocated for it: a header announcing a 2 GiB bulk string costs
// nothing when MaxBulkLen is 1 MiB. A reply over a limit fails its connection like any I/O
// failure, with a *ProtocolError (ErrProtocol) whose Limit names the field ("MaxBulkLen",
// "MaxElements", "MaxDepth" or "MaxReplyLen"): the command waiting for it, and every other
// command already written on that connection, end with an *UnknownOutcomeError wrapping it;
// commands not yet written fail without being sent; the connection is replaced as after any
// failure.
//
// Memory follows the bytes received, not the limits: a reply costs about its wire size (at most
// about twice while it is read), and a connection returns to a small footprint once a large
// reply has been consumed. The limits bound the worst case a server can make the client hold.
type ReplyLimits struct {
	// MaxBulkLen caps the length of one bulk string, bulk error or verbatim string in a reply
	// (default DefaultMaxBulkLen, 512 MiB). Set: at least MinBulkLen (512) and at most the
	// effective MaxReplyLen.
	MaxBulkLen int
	// MaxElements caps the elements of one aggregate: an array, set or push, or a map, whose
	// keys and values both count (default DefaultMaxElements, 2^24). Set: at least MinElements
	// (64) and at most the effective MaxReplyLen. The elements of all aggregates of a reply
	// together are bounded by MaxReplyLen, each taking at least three bytes.
	MaxElements int
	// MaxDepth caps the nesting of aggregates: a flat array has depth 1 (default
	// DefaultMaxDepth, 64). Set: at least MinDepth (4) and at most MaxDepthCeiling (65,536).
	MaxDepth int
	// MaxReplyLen caps the encoded size of one reply in bytes (default DefaultMaxReplyLen,
	// 1 GiB). Set: at least MinReplyLen (4 KiB) and at most MaxReplyLenCeiling (2 GiB - 1).
	MaxReplyLen int
}

// validate checks every set field against its bounds.
func (l *ReplyLimits) validate() error {
	reply := l.MaxReplyLen
	if reply == 0 {
		reply = DefaultMaxReplyLen
	}
	for _, f := range []struct {
		name           string
		value, lo, hi  int
		hiName, loName string
	}{
		{"MaxReplyLen", l.MaxReplyLen, MinReplyLen, MaxReplyLenCeiling, "MaxReplyLenCeiling (2 GiB - 1)", "MinReplyLen (4 KiB)"},
		{"MaxBulkLen", l.MaxBulkLen, MinBulkLen, reply, "MaxReplyLen (" + strconv.Itoa(reply) + ")", "MinBulkLen (512)"},
		{"MaxElements", l.MaxElements, MinElements, reply, "MaxReplyLen (" + strconv.Itoa(reply) + ")", "MinElements (64)"},
		{"MaxDepth", l.MaxDepth, MinDepth, MaxDepthCeiling, "MaxDepthCeiling (65536)", "MinDepth (4)"},
	} {
		switch {
		case f.value < 0:
			return configErr("ReplyLimits."+f.name, "must not be negative (zero means the default)")
		case f.value == 0:
		case f.value < f.lo:
			return configErr("ReplyLimits."+f.name, "must be at least "+f.loName)
		case f.value > f.hi:
			return configErr("ReplyLimits."+f.name, "must be at most "+f.hiName)
		}
	}
	return nil
}

// resp returns the parser limits. The total count of values in a reply is left to MaxReplyLen,
// which bounds it already (every value takes at least three bytes).
func (l *ReplyLimits) resp() *resp.Limits {
	reply := l.MaxReplyLen
	if reply == 0 {
		reply = DefaultMaxReplyLen
	}
	return &resp.Limits{
		MaxBulkLen:  l.MaxBulkLen,
		MaxElements: l.MaxElements,
		MaxDepth:    l.MaxDepth,
		MaxReplyLen: reply,
		MaxValues:   reply,
	}
}
