package topo

import "github.com/respire-go/respire/fsm"

// crc16Table holds the CRC16 of every byte for the polynomial x^16 + x^12 + x^5 + 1 (0x1021),
// processed most significant bit first: the XMODEM variant Redis Cluster hashes keys with.
var crc16Table = func() (t [256]uint16) {
	for i := range t {
		c := uint16(i) << 8
		for range 8 {
			if c&0x8000 != 0 {
				c = c<<1 ^ 0x1021
			} else {
				c <<= 1
			}
		}
		t[i] = c
	}
	return t
}()

// KeySlot returns the hash slot of a key, from 0 to 16383, as Redis Cluster computes it: the
// CRC16 (XMODEM) of the key modulo 16384. When the key holds a hash tag, only the tag is hashed:
// the bytes between the first '{' and the first '}' after it, provided there is at least one. So
// "{user:42}:name" and "{user:42}:email" share a slot, while "{}x" and "x{" hash whole. It does
// not allocate.
func KeySlot(key []byte) uint16 { return keySlot(key) }

// KeySlotString is KeySlot for a key held in a string. It does not allocate.
func KeySlotString(key string) uint16 { return keySlot(key) }

func keySlot[K string | []byte](key K) uint16 {
	for i := 0; i < len(key); i++ {
		if key[i] != '{' {
			continue
		}
		for j := i + 1; j < len(key); j++ {
			if key[j] == '}' {
				if j > i+1 {
					key = key[i+1 : j]
				}
				break
			}
		}
		break
	}
	var c uint16
	for i := 0; i < len(key); i++ {
		c = c<<8 ^ crc16Table[byte(c>>8)^key[i]]
	}
	return c % fsm.SlotCount
}
