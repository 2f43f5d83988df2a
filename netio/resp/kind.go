package resp

import "strconv"

// Kind identifies the RESP type of a Value.
type Kind uint8

// The RESP kinds. The comment after each constant is the type byte that
// introduces it on the wire.
const (
	// KindInvalid is the zero Kind. Parse never produces it; AppendValue
	// encodes it as a null.
	KindInvalid Kind = iota
	// KindSimpleString is a RESP2/RESP3 simple string ('+').
	KindSimpleString
	// KindSimpleError is a RESP2/RESP3 simple error ('-').
	KindSimpleError
	// KindInteger is a RESP2/RESP3 signed 64-bit integer (':').
	KindInteger
	// KindBulkString is a RESP2/RESP3 length-prefixed binary string ('$').
	KindBulkString
	// KindArray is a RESP2/RESP3 array ('*').
	KindArray
	// KindNull is the RESP3 null ('_'). The RESP2 null bulk string "$-1"
	// and null array "*-1" also parse as KindNull; Value.NullForm records
	// which of the three forms was seen.
	KindNull
	// KindBoolean is a RESP3 boolean ('#').
	KindBoolean
	// KindDouble is a RESP3 double (',').
	KindDouble
	// KindBigNumber is a RESP3 arbitrary-precision integer ('(').
	KindBigNumber
	// KindBulkError is a RESP3 length-prefixed error ('!').
	KindBulkError
	// KindVerbatimString is a RESP3 verbatim string with a three-byte
	// format such as "txt" or "mkd" ('=').
	KindVerbatimString
	// KindMap is a RESP3 map ('%').
	KindMap
	// KindSet is a RESP3 set ('~').
	KindSet
	// KindAttribute is a RESP3 attribute map ('|'). On the wire an
	// attribute always precedes another value and is attached to it (see
	// Value.Attrs); Parse never returns a Value of this kind.
	KindAttribute
	// KindPush is a RESP3 out-of-band push message ('>').
	KindPush
)

var kindNames = [...]string{
	KindInvalid:        "Invalid",
	KindSimpleString:   "SimpleString",
	KindSimpleError:    "SimpleError",
	KindInteger:        "Integer",
	KindBulkString:     "BulkString",
	KindArray:          "Array",
	KindNull:           "Null",
	KindBoolean:        "Boolean",
	KindDouble:         "Double",
	KindBigNumber:      "BigNumber",
	KindBulkError:      "BulkError",
	KindVerbatimString: "VerbatimString",
	KindMap:            "Map",
	KindSet:            "Set",
	KindAttribute:      "Attribute",
	KindPush:           "Push",
}

var kindBytes = [...]byte{
	KindSimpleString:   '+',
	KindSimpleError:    '-',
	KindInteger:        ':',
	KindBulkString:     '$',
	KindArray:          '*',
	KindNull:           '_',
	KindBoolean:        '#',
	KindDouble:         ',',
	KindBigNumber:      '(',
	KindBulkError:      '!',
	KindVerbatimString: '=',
	KindMap:            '%',
	KindSet:            '~',
	KindAttribute:      '|',
	KindPush:           '>',
}

// String returns the name of the kind, such as "BulkString", or
// "Kind(N)" for a value outside the defined constants.
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// Prefix returns the RESP3 type byte that introduces a value of kind k on
// the wire, or 0 for KindInvalid and undefined kinds.
func (k Kind) Prefix() byte {
	if int(k) < len(kindBytes) {
		return kindBytes[k]
	}
	return 0
}

// IsAggregate reports whether values of kind k carry child elements:
// arrays, maps, sets, pushes and attributes.
func (k Kind) IsAggregate() bool {
	switch k {
	case KindArray, KindMap, KindSet, KindPush, KindAttribute:
		return true
	}
	return false
}

// NullForm records which wire form a KindNull value was read from. It
// matters only when a null is written back in RESP2, which has two nulls.
type NullForm uint8

const (
	// NullFormRESP3 is the RESP3 null "_\r\n" (and the form used by the
	// NullValue constructor).
	NullFormRESP3 NullForm = iota
	// NullFormBulk is the RESP2 null bulk string "$-1\r\n".
	NullFormBulk
	// NullFormArray is the RESP2 null array "*-1\r\n".
	NullFormArray
)
