package client

import (
	"strconv"
	"testing"

	"github.com/respire-go/respire/netio/resp"
)

// BenchmarkDecodeZMembers measures decoding a ZRANGE WITHSCORES reply of 10 members, parsed
// under RESP3 (pairs, scores as doubles) and RESP2 (a flat list, scores as strings).
func BenchmarkDecodeZMembers(b *testing.B) {
	r3, r2 := []byte("*10\r\n"), []byte("*20\r\n")
	for i := range 10 {
		m := "member:" + strconv.Itoa(i)
		s := strconv.Itoa(i*7) + ".5"
		r3 = append(r3, "*2\r\n$"+strconv.Itoa(len(m))+"\r\n"+m+"\r\n,"+s+"\r\n"...)
		r2 = append(r2, "$"+strconv.Itoa(len(m))+"\r\n"+m+"\r\n$"+strconv.Itoa(len(s))+"\r\n"+s+"\r\n"...)
	}
	benchDecode(b, r3, r2, func(v *resp.Value) (int, error) {
		zs, err := decZMembers(v)
		return len(zs), err
	})
}

// BenchmarkDecodeStringMap measures decoding an HGETALL reply of 10 fields of 64-byte values,
// parsed under RESP3 (a map) and RESP2 (a flat list).
func BenchmarkDecodeStringMap(b *testing.B) {
	r3, r2 := []byte("%10\r\n"), []byte("*20\r\n")
	val := "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	for i := range 10 {
		f := "f" + strconv.Itoa(i)
		kv := "$" + strconv.Itoa(len(f)) + "\r\n" + f + "\r\n$64\r\n" + val + "\r\n"
		r3 = append(r3, kv...)
		r2 = append(r2, kv...)
	}
	benchDecode(b, r3, r2, func(v *resp.Value) (int, error) {
		m, err := decStringMap(v)
		return len(m), err
	})
}

// benchDecode runs dec on the parsed RESP3 and RESP2 forms of one reply, each a sub-benchmark;
// dec returns the length of its result, which must be 10.
func benchDecode(b *testing.B, r3, r2 []byte, dec func(*resp.Value) (int, error)) {
	for _, tc := range []struct {
		name string
		in   []byte
	}{{"RESP3", r3}, {"RESP2", r2}} {
		b.Run(tc.name, func(b *testing.B) {
			var v resp.Value
			if _, err := resp.Parse(tc.in, &v, nil); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if n, err := dec(&v); err != nil || n != 10 {
					b.Fatal(n, err)
				}
			}
		})
	}
}
