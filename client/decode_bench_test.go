package client

import (
	"strconv"
	"testing"

	"github.com/respire-go/respire/netio/resp"
)

// BenchmarkDecodeZMembers measures decoding a ZRANGE WITHSCORES reply of 10 members, parsed
// under RESP3 (pairs, scores as doubles) and RESP2 (a flat list, scores as strings).
func BenchmarkDecodeZMembers(b *testing.B) {
	var r3, r2 []byte
	r3 = append(r3, "*10\r\n"...)
	r2 = append(r2, "*20\r\n"...)
	for i := range 10 {
		m := "member:" + strconv.Itoa(i)
		s := strconv.Itoa(i*7) + ".5"
		r3 = append(r3, "*2\r\n$"+strconv.Itoa(len(m))+"\r\n"+m+"\r\n,"+s+"\r\n"...)
		r2 = append(r2, "$"+strconv.Itoa(len(m))+"\r\n"+m+"\r\n$"+strconv.Itoa(len(s))+"\r\n"+s+"\r\n"...)
	}
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
				zs, err := decZMembers(&v)
				if err != nil || len(zs) != 10 {
					b.Fatal(zs, err)
				}
			}
		})
	}
}

// BenchmarkDecodeStringMap measures decoding an HGETALL reply of 10 fields of 64-byte values,
// parsed under RESP3 (a map) and RESP2 (a flat list).
func BenchmarkDecodeStringMap(b *testing.B) {
	var r3, r2 []byte
	r3 = append(r3, "%10\r\n"...)
	r2 = append(r2, "*20\r\n"...)
	val := "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	for i := range 10 {
		f := "f" + strconv.Itoa(i)
		kv := "$" + strconv.Itoa(len(f)) + "\r\n" + f + "\r\n$64\r\n" + val + "\r\n"
		r3 = append(r3, kv...)
		r2 = append(r2, kv...)
	}
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
				m, err := decStringMap(&v)
				if err != nil || len(m) != 10 {
					b.Fatal(m, err)
				}
			}
		})
	}
}
