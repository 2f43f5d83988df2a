package resp

import "testing"

func BenchmarkAppendCommandSET(b *testing.B) {
	dst := make([]byte, 0, 256)
	b.ReportAllocs()
	for b.Loop() {
		dst = AppendCommand(dst[:0], "SET", key16, value64)
	}
	b.SetBytes(int64(len(dst)))
}

func benchParse(b *testing.B, in []byte) {
	var v Value
	b.ReportAllocs()
	b.SetBytes(int64(len(in)))
	for b.Loop() {
		if _, err := Parse(in, &v, nil); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParseBulk64(b *testing.B)  { benchParse(b, inBulk64) }
func BenchmarkParseOK(b *testing.B)      { benchParse(b, inOK) }
func BenchmarkParseInt(b *testing.B)     { benchParse(b, inInt) }
func BenchmarkParseArray10(b *testing.B) { benchParse(b, inArr10) }
func BenchmarkParseNested(b *testing.B)  { benchParse(b, inNested) }

func BenchmarkParseCommandSET(b *testing.B) {
	in := AppendCommand(nil, "SET", key16, value64)
	var args [][]byte
	b.ReportAllocs()
	b.SetBytes(int64(len(in)))
	for b.Loop() {
		if _, err := ParseCommand(in, &args, nil); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAppendValueNested(b *testing.B) {
	var v Value
	if _, err := Parse(inNested, &v, nil); err != nil {
		b.Fatal(err)
	}
	dst := make([]byte, 0, 256)
	b.ReportAllocs()
	for b.Loop() {
		dst = AppendValue(dst[:0], v, 3)
	}
}

func BenchmarkReaderRead(b *testing.B) {
	var stream []byte
	stream = append(stream, inBulk64...)
	stream = append(stream, inOK...)
	stream = append(stream, inArr10...)
	stream = append(stream, inInt...)
	r := NewReader(&repeatReader{data: stream}, nil)
	var v Value
	b.ReportAllocs()
	for b.Loop() {
		if err := r.Read(&v); err != nil {
			b.Fatal(err)
		}
	}
}
