package resp

import "encoding/binary"

// Parse and Reader store a value in a compact form, the tape: one byte slice in which every
// nested value is an entry. The tape costs about the value's wire size or less, whatever its
// shape: a RESP3 null costs one byte instead of a Value of its own, and a bulk string costs its
// payload plus two or three bytes. Values are decoded from it on access (Value.Elem, Value.All).
//
// Entries, by their first byte (the tag):
//
//	string tags (simple, error, bulk, bulk error, big number, double)
//	                  uvarint length, then the bytes (a double keeps its wire text)
//	tagVerbatim       uvarint length (3 + text), the 3-byte format, then the text
//	tagInt            zigzag uvarint
//	tagTrue ... tagNullArray
//	                  nothing more
//	aggregate tags    uvarint element count n (a map counts keys and values); when n > 0, a
//	                  4-byte little-endian body length, the index, then the body: the n
//	                  element entries one after another
//	tagAttrs          4-byte count, 4-byte body length, then the body, with no index
//
// The index of an aggregate holds (n-1)/indexStride 4-byte offsets, relative to the body, of
// elements indexStride, 2*indexStride, ..., so that Elem reaches any element after at most
// indexStride-1 skips, and a skip costs one header read whatever the skipped entry holds.
//
// An attribute entry (tagAttrs) directly precedes the entry of the value it belongs to; the
// offsets of the index point at the attribute entry when an element has one.
//
// The 4-byte fields bound a tape to 4 GiB; MaxReplyLenCeiling keeps every reply well below.
const (
	tagSimple byte = 1 + iota
	tagError
	tagBulk
	tagBulkError
	tagBigNumber
	tagDouble
	tagVerbatim
	tagInt
	tagTrue
	tagFalse
	tagNull
	tagNullBulk
	tagNullArray
	tagArray
	tagSet
	tagPush
	tagMap
	tagAttrs
)

// indexStride is the distance, in elements, between two index entries of an aggregate.
const indexStride = 8

// attrsHeader is the size of an attribute entry's header: tag, count, body length.
const attrsHeader = 9

// indexLen returns the number of index entries of an aggregate of n elements.
func indexLen(n int) int {
	if n <= 1 {
		return 0
	}
	return (n - 1) / indexStride
}

// tagKinds maps each tag to the Kind of its value.
var tagKinds = [...]Kind{
	tagSimple:    KindSimpleString,
	tagError:     KindSimpleError,
	tagBulk:      KindBulkString,
	tagBulkError: KindBulkError,
	tagBigNumber: KindBigNumber,
	tagDouble:    KindDouble,
	tagVerbatim:  KindVerbatimString,
	tagInt:       KindInteger,
	tagTrue:      KindBoolean,
	tagFalse:     KindBoolean,
	tagNull:      KindNull,
	tagNullBulk:  KindNull,
	tagNullArray: KindNull,
	tagArray:     KindArray,
	tagSet:       KindSet,
	tagPush:      KindPush,
	tagMap:       KindMap,
	tagAttrs:     KindAttribute,
}

func isAggregateTag(tag byte) bool { return tag >= tagArray && tag <= tagAttrs }

// uvarint decodes the unsigned varint at t[p:] and returns it with its length.
func uvarint(t []byte, p int) (uint64, int) {
	if b := t[p]; b < 0x80 {
		return uint64(b), 1
	}
	x, k := binary.Uvarint(t[p:])
	return x, k
}

// uvarintLen returns the encoded length of x.
func uvarintLen(x uint64) int {
	n := 1
	for x >= 0x80 {
		x >>= 7
		n++
	}
	return n
}

func u32(t []byte, p int) int { return int(binary.LittleEndian.Uint32(t[p:])) }

func zigzag(x int64) uint64 { return uint64(x<<1) ^ uint64(x>>63) }

func unzigzag(u uint64) int64 { return int64(u>>1) ^ -int64(u&1) }

// strAt returns the bounds of the length-prefixed bytes at t[p:].
func strAt(t []byte, p int) (start, end int) {
	n, k := uvarint(t, p)
	start = p + k
	return start, start + int(n)
}

// attrsEnd returns the offset just past the attribute entry at t[p:].
func attrsEnd(t []byte, p int) int { return p + attrsHeader + u32(t, p+5) }

// aggregate describes the aggregate entry whose tag is at t[p:].
type aggregate struct {
	n     int // elements
	index int // offset of the index in t, or -1 when there is none
	body  int // offset of the first element entry in t
	end   int // offset just past the entry
}

func aggregateAt(t []byte, p int) aggregate {
	if t[p] == tagAttrs {
		body := p + attrsHeader
		return aggregate{n: u32(t, p+1), index: -1, body: body, end: body + u32(t, p+5)}
	}
	n, k := uvarint(t, p+1)
	if n == 0 {
		return aggregate{index: -1, body: p + 1 + k, end: p + 1 + k}
	}
	index := p + 1 + k + 4
	body := index + 4*indexLen(int(n))
	return aggregate{n: int(n), index: index, body: body, end: body + u32(t, p+1+k)}
}

// elemAt returns the offset in t of element i of a, which must exist.
func (a *aggregate) elemAt(t []byte, i int) int {
	p := a.body
	if blk := i / indexStride; blk > 0 && a.index >= 0 {
		p += u32(t, a.index+4*(blk-1))
		i -= blk * indexStride
	}
	for ; i > 0; i-- {
		p = skipEntry(t, p)
	}
	return p
}

// skipEntry returns the offset just past the entry at t[p:], attribute prefix included.
func skipEntry(t []byte, p int) int {
	if t[p] == tagAttrs {
		p = attrsEnd(t, p)
	}
	switch tag := t[p]; {
	case tag <= tagVerbatim:
		_, end := strAt(t, p+1)
		return end
	case tag == tagInt:
		_, k := uvarint(t, p+1)
		return p + 1 + k
	case tag <= tagNullArray:
		return p + 1
	}
	return aggregateAt(t, p).end
}

// decodeAt decodes the entry at t[p:] into *v, overwriting every field, and returns the offset
// just past it. String payloads alias t. A value with children or attributes keeps its entry
// (ent) to reach them.
func decodeAt(t []byte, p int, v *Value) int {
	start := p
	withAttrs := t[p] == tagAttrs
	if withAttrs {
		p = attrsEnd(t, p)
	}
	tag := t[p]
	var end int
	switch tag {
	case tagSimple, tagError, tagBulk, tagBulkError, tagBigNumber:
		s, e := strAt(t, p+1)
		*v = Value{Kind: tagKinds[tag], Str: t[s:e:e]}
		end = e
	case tagDouble:
		s, e := strAt(t, p+1)
		*v = Value{Kind: KindDouble, Float: parseDouble(t[s:e])}
		end = e
	case tagVerbatim:
		s, e := strAt(t, p+1)
		*v = Value{Kind: KindVerbatimString, Format: [3]byte{t[s], t[s+1], t[s+2]}, Str: t[s+3 : e : e]}
		end = e
	case tagInt:
		x, k := uvarint(t, p+1)
		*v = Value{Kind: KindInteger, Int: unzigzag(x)}
		end = p + 1 + k
	case tagTrue, tagFalse:
		*v = Value{Kind: KindBoolean, Bool: tag == tagTrue}
		end = p + 1
	case tagNull:
		*v = Value{Kind: KindNull, NullForm: NullFormRESP3}
		end = p + 1
	case tagNullBulk:
		*v = Value{Kind: KindNull, NullForm: NullFormBulk}
		end = p + 1
	case tagNullArray:
		*v = Value{Kind: KindNull, NullForm: NullFormArray}
		end = p + 1
	default:
		end = aggregateAt(t, p).end
		*v = Value{Kind: tagKinds[tag], ent: t[start:end:end]}
		return end
	}
	if withAttrs {
		v.ent = t[start:end:end]
	}
	return end
}
