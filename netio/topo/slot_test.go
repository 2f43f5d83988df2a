package topo

import (
	"strings"
	"testing"

	"github.com/respire-go/respire/fsm"
	"pgregory.net/rapid"
)

// Expected slots from Redis 7.0's CLUSTER KEYSLOT.
var keySlots = []struct {
	key  string
	slot uint16
}{
	{"123456789", 12739}, // CRC16/XMODEM's check value 0x31C3
	{"foo", 12182},
	{"a", 15495},
	{"{b}a", 3300},
	{"{t}a", 15891},
	{"{}x", 10595}, // an empty tag: the whole key
	{"x{", 3596},
	{"{a}{b}", 15495}, // the first tag
	{"{{a}}", 10276},  // the tag is "{a"
	{"foo{}{bar}", 8363},
	{"foo{{bar}}zap", 4015},
	{"foo{bar}{zap}", 5061},
	{"", 0},
	{"{", 4092},
	{"}", 12090},
	{"{user1000}.following", 3443},
	{"user1000", 3443},
	{"{}", 15257},
	{"{{}}", 4092},
}

func TestKeySlot(t *testing.T) {
	for _, c := range keySlots {
		if got := KeySlotString(c.key); got != c.slot {
			t.Errorf("KeySlotString(%q) = %d, want %d", c.key, got, c.slot)
		}
		if got := KeySlot([]byte(c.key)); got != c.slot {
			t.Errorf("KeySlot(%q) = %d, want %d", c.key, got, c.slot)
		}
	}
}

// naiveCRC16 is CRC16/XMODEM computed bit by bit, straight from its definition.
func naiveCRC16(b []byte) uint16 {
	var crc uint16
	for _, c := range b {
		crc ^= uint16(c) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}

// naiveSlot applies the hash tag rule of the Cluster specification in the most literal way.
func naiveSlot(key string) uint16 {
	if open := strings.Index(key, "{"); open >= 0 {
		if end := strings.Index(key[open+1:], "}"); end > 0 {
			key = key[open+1 : open+1+end]
		}
	}
	return naiveCRC16([]byte(key)) % fsm.SlotCount
}

func TestKeySlotMatchesNaiveOracle(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		// Keys over a small alphabet rich in braces, so that tags of every shape occur.
		key := rapid.StringOfN(rapid.SampledFrom([]rune("{}ab\x00\xff")), 0, 24, -1).Draw(t, "key")
		if rapid.Bool().Draw(t, "arbitrary") {
			key = string(rapid.SliceOfN(rapid.Byte(), 0, 64).Draw(t, "bytes"))
		}
		want := naiveSlot(key)
		if got := KeySlotString(key); got != want {
			t.Fatalf("KeySlotString(%q) = %d, want %d", key, got, want)
		}
		if got := KeySlot([]byte(key)); got != want {
			t.Fatalf("KeySlot(%q) = %d, want %d", key, got, want)
		}
	})
}

func TestKeySlotDoesNotAllocate(t *testing.T) {
	key := []byte("{user:42}:profile:name")
	if n := testing.AllocsPerRun(1000, func() { _ = KeySlot(key) }); n != 0 {
		t.Fatalf("KeySlot: %v allocations", n)
	}
	s := "{user:42}:profile:name"
	if n := testing.AllocsPerRun(1000, func() { _ = KeySlotString(s) }); n != 0 {
		t.Fatalf("KeySlotString: %v allocations", n)
	}
}

func FuzzKeySlot(f *testing.F) {
	for _, c := range keySlots {
		f.Add([]byte(c.key))
	}
	f.Fuzz(func(t *testing.T, key []byte) {
		got := KeySlot(key)
		if want := naiveSlot(string(key)); got != want {
			t.Fatalf("KeySlot(%q) = %d, naive %d", key, got, want)
		}
		if KeySlotString(string(key)) != got {
			t.Fatalf("KeySlotString and KeySlot disagree on %q", key)
		}
	})
}

var sinkSlot uint16

func BenchmarkKeySlot(b *testing.B) {
	for _, c := range []struct{ name, key string }{
		{"short", "foo"},
		{"tagged", "{user:1000}:profile:followers"},
		{"long", strings.Repeat("k", 256)},
	} {
		key := []byte(c.key)
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(key)))
			for b.Loop() {
				sinkSlot = KeySlot(key)
			}
		})
	}
}
