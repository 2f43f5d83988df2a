package wire_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/netio/resp"
	"github.com/respire-go/respire/netio/wire"
)

func push(elems ...resp.Value) resp.Value { return resp.PushOf(elems...) }

func bs(s string) resp.Value { return resp.BulkString(s) }

// TestParseMaintNotice reads every notification in its defined shapes and a range of
// malformed ones, each of which must give a typed error naming the field and never the push.
func TestParseMaintNotice(t *testing.T) {
	good := []struct {
		name string
		v    resp.Value
		want string
	}{
		{"moving", push(bs("MOVING"), resp.Int(7), resp.Int(15), bs("10.0.0.2:6380")), "MOVING seq=7 time=15s to=10.0.0.2:6380"},
		{"moving null", push(bs("MOVING"), bs("8"), bs("30"), resp.NullValue()), "MOVING seq=8 time=30s to=(re-resolve)"},
		{"moving name", push(bs("MOVING"), resp.Int(1), resp.Int(0), bs("Node-2.Example:7000")), "MOVING seq=1 to=node-2.example:7000"},
		{"migrating", push(bs("MIGRATING"), resp.Int(2), resp.Int(10), bs("shard-1"), resp.Int(4)), "MIGRATING seq=2 time=10s shards=2"},
		{"migrated", push(bs("MIGRATED"), resp.Int(3), bs("shard-1")), "MIGRATED seq=3 shards=1"},
		{"migrated bare", push(bs("MIGRATED"), resp.Int(3)), "MIGRATED seq=3"},
		{"failing over", push(bs("FAILING_OVER"), resp.Int(4), resp.Int(2), bs("s")), "FAILING_OVER seq=4 time=2s shards=1"},
		{"failed over", push(bs("FAILED_OVER"), resp.Int(5)), "FAILED_OVER seq=5"},
		{"smigrating", push(bs("SMIGRATING"), resp.Int(6), bs("0-99,200"), resp.Int(300)), "SMIGRATING seq=6 slots=0-99,200,300"},
		{"smigrated", push(bs("SMIGRATED"), resp.Int(9), resp.ArrayOf(bs("10.0.0.3:6379"), bs("0-99")),
			resp.ArrayOf(bs("10.0.0.4:6379"), bs("100,16383"))), "SMIGRATED seq=9 0-99->10.0.0.3:6379 100,16383->10.0.0.4:6379"},
	}
	for _, tc := range good {
		t.Run(tc.name, func(t *testing.T) {
			if !wire.IsMaintNotice(&tc.v) {
				t.Fatal("not recognized")
			}
			n, err := wire.ParseMaintNotice(&tc.v)
			if err != nil {
				t.Fatal(err)
			}
			if n.String() != tc.want {
				t.Fatalf("got %q, want %q", n.String(), tc.want)
			}
		})
	}

	bad := []struct {
		name  string
		v     resp.Value
		where string
	}{
		{"no seq", push(bs("MIGRATED")), ""},
		{"seq not a number", push(bs("MIGRATED"), bs("x")), "element 1"},
		{"negative seq", push(bs("MIGRATED"), resp.Int(-1)), "element 1"},
		{"no time", push(bs("MIGRATING"), resp.Int(1)), ""},
		{"time too long", push(bs("MIGRATING"), resp.Int(1), resp.Int(86401)), "element 2"},
		{"negative time", push(bs("FAILING_OVER"), resp.Int(1), resp.Int(-2)), "element 2"},
		{"moving no endpoint", push(bs("MOVING"), resp.Int(1), resp.Int(2)), ""},
		{"moving bad endpoint", push(bs("MOVING"), resp.Int(1), resp.Int(2), bs("secret-host")), "element 3"},
		{"moving empty host", push(bs("MOVING"), resp.Int(1), resp.Int(2), bs(":6379")), "element 3"},
		{"moving endpoint kind", push(bs("MOVING"), resp.Int(1), resp.Int(2), resp.Int(5)), "element 3"},
		{"shard kind", push(bs("MIGRATED"), resp.Int(1), resp.ArrayOf()), "element 2"},
		{"smigrating no slots", push(bs("SMIGRATING"), resp.Int(1)), ""},
		{"slot out of range", push(bs("SMIGRATING"), resp.Int(1), bs("16384")), "element 2"},
		{"slot order", push(bs("SMIGRATING"), resp.Int(1), bs("9-3")), "element 2"},
		{"slot text", push(bs("SMIGRATING"), resp.Int(1), bs("a-b")), "element 2"},
		{"slot empty", push(bs("SMIGRATING"), resp.Int(1), bs("")), "element 2"},
		{"smigrated entry", push(bs("SMIGRATED"), resp.Int(1), bs("10.0.0.3:6379")), "entry 0"},
		{"smigrated endpoint", push(bs("SMIGRATED"), resp.Int(1), resp.ArrayOf(bs("secret-host"), bs("1"))), "entry 0, endpoint"},
		{"smigrated slots", push(bs("SMIGRATED"), resp.Int(1), resp.ArrayOf(bs("h:1"), bs("x"))), "entry 0, slots"},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			_, err := wire.ParseMaintNotice(&tc.v)
			var me *wire.MaintNoticeError
			if !errors.As(err, &me) || !errors.Is(err, wire.ErrMalformedMaintNotice) {
				t.Fatalf("error %v is not a *MaintNoticeError", err)
			}
			if me.Where != tc.where {
				t.Fatalf("where %q, want %q", me.Where, tc.where)
			}
			if !strings.HasPrefix(err.Error(), "respire: ") || strings.Contains(err.Error(), "secret") {
				t.Fatalf("message %q", err.Error())
			}
		})
	}

	// Too many elements is refused before anything is read from them.
	elems := []resp.Value{bs("MIGRATED"), resp.Int(1)}
	for range wire.MaxMaintNoticeElements {
		elems = append(elems, bs("s"))
	}
	big := push(elems...)
	if _, err := wire.ParseMaintNotice(&big); !errors.Is(err, wire.ErrMalformedMaintNotice) {
		t.Fatalf("oversized notice: %v", err)
	}

	// Other pushes and replies are not notices.
	for _, v := range []resp.Value{
		push(bs("message"), bs("ch"), bs("x")),
		push(bs("invalidate"), resp.ArrayOf(bs("k"))),
		resp.ArrayOf(bs("MOVING"), resp.Int(1), resp.Int(1), resp.NullValue()),
		resp.ErrorValue("MOVED 1 h:1"),
		push(),
	} {
		if _, err := wire.ParseMaintNotice(&v); !errors.Is(err, wire.ErrNotMaintNotice) {
			t.Fatalf("%v: %v", v, err)
		}
	}
}

// TestParseMaintNoticeTimes checks the time field's units: seconds.
func TestParseMaintNoticeTimes(t *testing.T) {
	v := push(bs("MOVING"), resp.Int(1), resp.Int(90), resp.NullValue())
	n, err := wire.ParseMaintNotice(&v)
	if err != nil || n.Time != 90*time.Second || n.Target != (fsm.Endpoint{}) {
		t.Fatalf("%v %v", n, err)
	}
}

// FuzzParseMaintNotice parses arbitrary frames: ParseMaintNotice never panics, returns a notice
// or one of its two errors, and a parsed notice respects its bounds.
func FuzzParseMaintNotice(f *testing.F) {
	for _, seed := range []string{
		">4\r\n$6\r\nMOVING\r\n:1\r\n:15\r\n$13\r\n10.0.0.2:6380\r\n",
		">4\r\n$6\r\nMOVING\r\n:1\r\n:15\r\n_\r\n",
		">4\r\n$9\r\nMIGRATING\r\n:2\r\n:10\r\n$7\r\nshard-1\r\n",
		">2\r\n$8\r\nMIGRATED\r\n:3\r\n",
		">3\r\n$10\r\nSMIGRATING\r\n:6\r\n$8\r\n0-99,200\r\n",
		">3\r\n$9\r\nSMIGRATED\r\n:9\r\n*2\r\n$13\r\n10.0.0.3:6379\r\n$4\r\n0-99\r\n",
		">3\r\n$7\r\nmessage\r\n$1\r\nc\r\n$1\r\nx\r\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var v resp.Value
		if _, err := resp.Parse(data, &v, nil); err != nil {
			return
		}
		n, err := wire.ParseMaintNotice(&v)
		if err != nil {
			if !errors.Is(err, wire.ErrNotMaintNotice) && !errors.Is(err, wire.ErrMalformedMaintNotice) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		if n.Kind == 0 || n.Seq < 0 || n.Time < 0 || n.Time > 24*time.Hour || len(n.Slots) > fsm.SlotCount {
			t.Fatalf("notice out of bounds: %v", n)
		}
		for _, r := range n.Slots {
			if r.First > r.Last || r.Last >= fsm.SlotCount {
				t.Fatalf("bad range %v", r)
			}
		}
		_ = n.String()
	})
}
