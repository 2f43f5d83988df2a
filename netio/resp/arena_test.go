package resp

import (
	"bytes"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"pgregory.net/rapid"
)

// decoded returns wire decoded into a Value of its own storage, failing the test on an error.
func decoded(t interface {
	Helper()
	Fatalf(string, ...any)
}, wire string) Value {
	t.Helper()
	var v Value
	if _, err := Parse([]byte(wire), &v, nil); err != nil {
		t.Fatalf("Parse(%q): %v", wire, err)
	}
	return v
}

// within reports whether p, not empty, lies inside b's capacity.
func within(b, p []byte) bool {
	if len(p) == 0 || cap(b) == 0 {
		return false
	}
	at := uintptr(unsafe.Pointer(unsafe.SliceData(p)))
	base := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	return at >= base && at+uintptr(len(p)) <= base+uintptr(cap(b))
}

// ownerBlock returns the arena block p lies in, or nil.
func ownerBlock(a *Arena, p []byte) []byte {
	for _, b := range append(append([][]byte(nil), a.blocks...), a.cur) {
		if within(b[:len(b):len(b)], p) {
			return b
		}
	}
	return nil
}

// TestArenaMoveTakesScalars: each kind Move takes lands in dst equal to src, where Arena says:
// short bulk payloads in its blocks, simple strings and errors in dst's own storage, the other
// scalars in place with no string. dst keeps its storage and src is untouched.
func TestArenaMoveTakesScalars(t *testing.T) {
	cases := []struct {
		name, wire string
		where      string // "arena", "dst" or "none"
	}{
		{"bulk", "$5\r\nhello\r\n", "arena"},
		{"bulk at ArenaMax", "$256\r\n" + strings.Repeat("b", ArenaMax) + "\r\n", "arena"},
		{"empty bulk", "$0\r\n\r\n", "none"},
		{"simple string", "+OK\r\n", "dst"},
		{"simple error", "-ERR wrong\r\n", "dst"},
		{"simple string at ArenaMax", "+" + strings.Repeat("s", ArenaMax) + "\r\n", "dst"},
		{"integer", ":-42\r\n", "none"},
		{"null bulk", "$-1\r\n", "none"},
		{"null array", "*-1\r\n", "none"},
		{"resp3 null", "_\r\n", "none"},
		{"boolean", "#t\r\n", "none"},
		{"double", ",3.25\r\n", "none"},
		{"nan", ",nan\r\n", "none"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var a Arena
			src := decoded(t, tc.wire)
			want := src.Clone()
			srcStr, srcMem := src.Str, src.mem
			// dst held a longer reply before: its storage must survive, its string must go.
			dst := decoded(t, "$300\r\n"+strings.Repeat("x", 300)+"\r\n")
			dstMem, dstTape := dst.mem, dst.mem.tape
			if !a.Move(&dst, &src) {
				t.Fatal("Move declined a scalar it takes")
			}
			if !strictEqual(dst, want) {
				t.Fatalf("moved %v, want %v", dst, want)
			}
			if dst.mem != dstMem || unsafe.SliceData(dst.mem.tape) != unsafe.SliceData(dstTape) || cap(dst.mem.tape) != cap(dstTape) {
				t.Fatal("dst lost its storage")
			}
			if src.mem != srcMem || unsafe.SliceData(src.Str) != unsafe.SliceData(srcStr) || !strictEqual(src, want) {
				t.Fatal("src changed")
			}
			switch tc.where {
			case "arena":
				if ownerBlock(&a, dst.Str) == nil {
					t.Fatal("the bulk payload is not in the arena")
				}
				if cap(dst.Str) != len(dst.Str) {
					t.Fatalf("the payload's capacity %d exceeds its length %d: appending would write the block", cap(dst.Str), len(dst.Str))
				}
				if s, ok := a.String(dst.Str); !ok || s != string(want.Str) {
					t.Fatalf("String = %q, %v", s, ok)
				}
			case "dst":
				if !within(dst.mem.tape, dst.Str) {
					t.Fatal("the simple string's payload is not in dst's own storage")
				}
				if _, ok := a.String(dst.Str); ok {
					t.Fatal("String claims a payload held in dst's storage")
				}
			case "none":
				if len(dst.Str) != 0 {
					t.Fatalf("a payload-less scalar kept a string of %d bytes", len(dst.Str))
				}
			}
			if a.cur != nil && tc.where != "arena" {
				t.Fatal("a value that needs no arena bytes started a block")
			}
		})
	}
}

// TestArenaMoveDeclinesTheRest: longer strings, aggregates, values with attributes, pushes and
// the string kinds it does not take are declined, with dst and src unchanged.
func TestArenaMoveDeclinesTheRest(t *testing.T) {
	cases := map[string]Value{
		"bulk over ArenaMax":          decoded(t, "$257\r\n"+strings.Repeat("b", ArenaMax+1)+"\r\n"),
		"simple string over ArenaMax": decoded(t, "+"+strings.Repeat("s", ArenaMax+1)+"\r\n"),
		"array":                       decoded(t, "*2\r\n$1\r\na\r\n:1\r\n"),
		"empty array":                 decoded(t, "*0\r\n"),
		"map":                         decoded(t, "%1\r\n+k\r\n:1\r\n"),
		"push":                        decoded(t, ">2\r\n+message\r\n$1\r\nx\r\n"),
		"attributes":                  decoded(t, "|1\r\n+ttl\r\n:3\r\n$1\r\nv\r\n"),
		"bulk error":                  decoded(t, "!3\r\nERR\r\n"),
		"verbatim":                    decoded(t, "=7\r\ntxt:abc\r\n"),
		"big number":                  decoded(t, "(123456789012345678901234567890\r\n"),
		"built array":                 ArrayOf(BulkString("a")),
		"built attributes":            BulkString("a").WithAttrs(SimpleString("k"), Int(1)),
	}
	for name, src := range cases {
		t.Run(name, func(t *testing.T) {
			var a Arena
			dst := decoded(t, "$3\r\nold\r\n")
			before, srcBefore := dst, src
			if a.Move(&dst, &src) {
				t.Fatalf("Move took %v", src)
			}
			if !reflect.DeepEqual(dst, before) || !reflect.DeepEqual(src, srcBefore) {
				t.Fatal("a declined Move changed dst or src")
			}
			if a.cur != nil || len(a.blocks) != 0 {
				t.Fatal("a declined Move used the arena")
			}
		})
	}
}

// TestArenaStringClaimsOnlyItsBlocks: String answers without copying for bytes inside the
// arena's blocks (the whole payload or part of it) and refuses any other bytes, empty ones, and
// bytes of blocks Drop forgot.
func TestArenaStringClaimsOnlyItsBlocks(t *testing.T) {
	var a Arena
	var dst Value
	src := BulkString("payload")
	if !a.Move(&dst, &src) {
		t.Fatal("Move declined a short bulk string")
	}
	if s, ok := a.String(dst.Str); !ok || s != "payload" || unsafe.StringData(s) != unsafe.SliceData(dst.Str) {
		t.Fatalf("String of the payload = %q, %v (or a copy)", s, ok)
	}
	if s, ok := a.String(dst.Str[2:5]); !ok || s != "ylo" {
		t.Fatalf("String of part of the payload = %q, %v", s, ok)
	}
	if _, ok := a.String([]byte("payload")); ok {
		t.Fatal("String claimed bytes outside the arena")
	}
	if _, ok := a.String(dst.Str[:0]); ok {
		t.Fatal("String claimed an empty slice")
	}
	block := ownerBlock(&a, dst.Str)
	if _, ok := a.String(block[len(block)-1:]); !ok {
		t.Fatal("String refused the block's last byte")
	}
	// Fill a second block: the first one's bytes still count.
	first := dst.Str
	for a.len() < 2 {
		s := BulkString(strings.Repeat("f", ArenaMax))
		var d Value
		a.Move(&d, &s)
	}
	if _, ok := a.String(first); !ok {
		t.Fatal("String refused bytes of a full block")
	}
	a.Drop()
	if _, ok := a.String(first); ok {
		t.Fatal("String claimed bytes of a block Drop forgot")
	}
	if first := string(first); first != "payload" {
		t.Fatalf("Drop changed a payload: %q", first)
	}
}

// len returns the number of blocks the arena holds (tests).
func (a *Arena) len() int {
	n := len(a.blocks)
	if a.cur != nil {
		n++
	}
	return n
}

// TestArenaKeepsWhatItGaveOut: payloads and the strings taken from them stay unchanged while
// more Moves fill several blocks, after Drop, and after the arena is filled again; no payload
// spans two blocks, every block is ArenaBlock bytes, and so a kept string pins at most that.
func TestArenaKeepsWhatItGaveOut(t *testing.T) {
	var a Arena
	type kept struct {
		v    Value
		s    string
		want string
	}
	var all []kept
	fill := func(round int) {
		for i := range 300 {
			n := 1 + (i*37+round*11)%ArenaMax
			want := strings.Repeat(string(rune('a'+(i+round)%26)), n)
			src := decoded(t, "$"+strconv.Itoa(n)+"\r\n"+want+"\r\n")
			var dst Value
			if !a.Move(&dst, &src) {
				t.Fatalf("Move declined a bulk string of %d bytes", n)
			}
			// The source's storage is rewritten by the next read: the payload must not be it.
			for j := range src.Str {
				src.Str[j] = '#'
			}
			s, ok := a.String(dst.Str)
			if !ok {
				t.Fatal("String refused a payload Move just wrote")
			}
			b := ownerBlock(&a, dst.Str)
			if len(b) != ArenaBlock || cap(b) != ArenaBlock {
				t.Fatalf("a payload lies in a block of %d bytes (cap %d), want %d", len(b), cap(b), ArenaBlock)
			}
			all = append(all, kept{dst, s, want})
		}
	}
	fill(0)
	if a.len() < 4 {
		t.Fatalf("300 payloads filled %d blocks: the test does not span several", a.len())
	}
	a.Drop()
	fill(1)
	fill(2)
	for i, k := range all {
		if string(k.v.Str) != k.want || k.s != k.want {
			t.Fatalf("payload %d changed: value %q, string %q", i, k.v.Str[:min(8, len(k.v.Str))], k.s[:min(8, len(k.s))])
		}
	}
}

// TestArenaMoveMatchesTheDecodedStream: reading a random stream of replies into one scratch
// value and moving each into its own slot (or swapping it in when Move declines, as
// engine.Multi does) leaves every slot equal to the reply written, even though the scratch
// value's storage is rewritten by every read.
func TestArenaMoveMatchesTheDecodedStream(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 60).Draw(t, "n")
		vals := make([]Value, n)
		var stream []byte
		for i := range vals {
			switch rapid.IntRange(0, 9).Draw(t, "shape") {
			case 0:
				vals[i] = drawValue(t, 2)
			case 1:
				size := rapid.SampledFrom([]int{ArenaMax - 1, ArenaMax, ArenaMax + 1, 2 * ArenaMax}).Draw(t, "size")
				vals[i] = Value{Kind: rapid.SampledFrom([]Kind{KindBulkString, KindSimpleString}).Draw(t, "long"), Str: bytes.Repeat([]byte{'L'}, size)}
			default:
				vals[i] = drawValue(t, 0)
			}
			stream = AppendValue(stream, vals[i], 3)
		}
		sizes := rapid.SliceOfN(rapid.IntRange(1, 64), 1, 4).Draw(t, "chunks")
		r := NewReader(&chunkReader{data: stream, sizes: sizes}, nil)
		var a Arena
		slots := make([]Value, n)
		for i := range slots {
			if rapid.Bool().Draw(t, "slotStorage") {
				slots[i] = decoded(t, "+previous\r\n") // a slot with storage of its own, reused
			}
		}
		var scratch Value
		moved := 0
		read := make([]Value, n)
		for i := range vals {
			if err := r.Read(&scratch); err != nil {
				t.Fatalf("reply %d: %v", i, err)
			}
			read[i] = scratch.Clone()
			if a.Move(&slots[i], &scratch) {
				moved++
			} else {
				slots[i], scratch = scratch, slots[i]
			}
			if i == n/2 && rapid.Bool().Draw(t, "drop") {
				a.Drop()
			}
		}
		for i := range vals {
			if !Equal(slots[i], vals[i]) || !strictEqual(slots[i], read[i]) {
				t.Fatalf("slot %d = %v, want %v (read as %v)", i, slots[i], vals[i], read[i])
			}
		}
		if moved == 0 && n > 20 {
			t.Fatalf("Move took none of %d replies", n)
		}
	})
}
