package client

import (
	"strings"
	"testing"
	"unsafe"

	"github.com/respire-go/respire/netio/resp"
)

// TestPackedDecodersMatchTheirTwins: for every reply kind, the packed decoders give the value
// and the error (or its absence) of the decoders they replace, so a batch's typed results do
// not depend on packing, under RESP2 or RESP3.
func TestPackedDecodersMatchTheirTwins(t *testing.T) {
	replies := []resp.Value{
		resp.BulkString("value"), resp.BulkString(""), resp.BulkString(strings.Repeat("x", maxPackedText+1)),
		resp.SimpleString("OK"), resp.Verbatim("txt", "some text"), resp.NullBulk(), resp.NullValue(),
		resp.Int(42), resp.Double(1.5), resp.BigNumber("123456789012345678901234567890"),
		resp.Bool(true), resp.Bool(false), resp.ArrayOf(resp.BulkString("a")), resp.MapOf(),
	}
	pack := &textPack{}
	for _, v := range replies {
		want, wantErr := decOptString(&v)
		got, gotErr := decOptStringPacked(&v, pack)
		if got != want || (gotErr == nil) != (wantErr == nil) {
			t.Errorf("?string of %v: %+v, %v; unpacked %+v, %v", v, got, gotErr, want, wantErr)
		}
		ws, wsErr := decString(&v)
		gs, gsErr := decStringPacked(&v, pack)
		if gs != ws || (gsErr == nil) != (wsErr == nil) {
			t.Errorf("string of %v: %q, %v; unpacked %q, %v", v, gs, gsErr, ws, wsErr)
		}
		if s, _ := decStringPacked(&v, nil); s != ws {
			t.Errorf("string of %v without a pack: %q, want %q", v, s, ws)
		}
	}
}

// TestBatchPacksShortStrings: the GETs of a batch put their short values in shared blocks of
// at most packBlock bytes (a kept value holds one block, never the batch), allocate long
// values alone, and a value handed out never changes, however often the batch runs again.
func TestBatchPacksShortStrings(t *testing.T) {
	c := &Client{}
	var b Batch
	run := func(values []string) []*Future[Optional[string]] {
		t.Helper()
		futs := make([]*Future[Optional[string]], len(values))
		for i := range values {
			futs[i] = b.Get("k")
		}
		cls, cmds, g := b.start(c, modePipeline)
		for i := range cmds {
			completeAll(cmds[i:i+1], resp.BulkString(values[i]))
		}
		<-g.done
		if err := b.settle(c, cls, true, nil, false, modePipeline, nil); err != nil {
			t.Fatal(err)
		}
		b.done()
		return futs
	}
	short := make([]string, 300)
	for i := range short {
		short[i] = strings.Repeat(string(rune('a'+i%26)), 1+i%64)
	}
	first := run(short)
	blocks := map[uintptr]bool{}
	for i, f := range first {
		v, err := f.Result()
		if err != nil || v.Value != short[i] {
			t.Fatalf("value %d: %q, %v", i, v.Value, err)
		}
		blocks[uintptr(unsafe.Pointer(unsafe.StringData(v.Value)))/packBlock] = true
	}
	// 300 values of 32.5 bytes on average fill about 10 KiB: two blocks, three at most when
	// the blocks are not aligned.
	if len(blocks) > 4 {
		t.Fatalf("300 short values spread over %d blocks", len(blocks))
	}
	// A second run writes other values: the first run's are unchanged.
	other := make([]string, len(short))
	for i := range other {
		other[i] = strings.ToUpper(short[i])
	}
	second := run(other)
	for i := range first {
		if v := first[i].Val(); v.Value != short[i] {
			t.Fatalf("value %d of the first run changed to %q", i, v.Value)
		}
		if v := second[i].Val(); v.Value != other[i] {
			t.Fatalf("value %d of the second run: %q", i, v.Value)
		}
	}
	// Long values are allocated alone: about one allocation each.
	long := make([]string, 50)
	for i := range long {
		long[i] = strings.Repeat("L", maxPackedText+1+i)
	}
	var pack textPack
	allocs := testing.AllocsPerRun(20, func() {
		for _, s := range long {
			_ = pack.text(unsafe.Slice(unsafe.StringData(s), len(s)))
		}
	})
	if allocs != 50 {
		t.Fatalf("%v allocations for 50 long values, want one each (they must not be packed)", allocs)
	}
	shortAllocs := testing.AllocsPerRun(20, func() {
		for _, s := range short[:100] {
			_ = pack.text(unsafe.Slice(unsafe.StringData(s), len(s)))
		}
	})
	if shortAllocs > 2 {
		t.Fatalf("%v allocations for 100 short values, want them packed", shortAllocs)
	}
}
