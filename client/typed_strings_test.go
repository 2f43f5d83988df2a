package client_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/respire-go/respire/client"
)

// type C is the client every step gets.
type C = *client.Client

func TestTypedStrings(t *testing.T) {
	runGroup(t, nil, groupOptions{}, []step{
		{"SET", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return none(c.Set(ctx, k("s"), "hello"))
		}, nil, nil},
		{"APPEND", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.Append(ctx, k("s"), " world"))
		}, int64(11), nil},
		{"GET", func(ctx context.Context, c C, k func(string) string) (any, error) { return opt(c.Get(ctx, k("s"))) }, some("hello world"), nil},
		{"GET missing", func(ctx context.Context, c C, k func(string) string) (any, error) { return opt(c.Get(ctx, k("nope"))) }, client.Optional[string]{}, nil},
		{"GETRANGE", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.GetRange(ctx, k("s"), 0, 4))
		}, "hello", nil},
		{"SUBSTR", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.SubStr(ctx, k("s"), -5, -1))
		}, "world", nil},
		{"SETRANGE", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.SetRange(ctx, k("s"), 6, "there"))
		}, int64(11), nil},
		{"STRLEN", func(ctx context.Context, c C, k func(string) string) (any, error) { return val(c.StrLen(ctx, k("s"))) }, int64(11), nil},
		{"GETSET", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return opt(c.GetSet(ctx, k("s"), "x"))
		}, some("hello there"), nil},
		{"GETDEL", func(ctx context.Context, c C, k func(string) string) (any, error) { return opt(c.GetDel(ctx, k("s"))) }, some("x"), nil},
		{"GETDEL gone", func(ctx context.Context, c C, k func(string) string) (any, error) { return opt(c.GetDel(ctx, k("s"))) }, client.Optional[string]{}, nil},
		{"INCR", func(ctx context.Context, c C, k func(string) string) (any, error) { return val(c.Incr(ctx, k("n"))) }, int64(1), nil},
		{"INCRBY", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.IncrBy(ctx, k("n"), 10))
		}, int64(11), nil},
		{"DECR", func(ctx context.Context, c C, k func(string) string) (any, error) { return val(c.Decr(ctx, k("n"))) }, int64(10), nil},
		{"DECRBY", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.DecrBy(ctx, k("n"), 4))
		}, int64(6), nil},
		{"INCRBYFLOAT", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.IncrByFloat(ctx, k("n"), 0.5))
		}, 6.5, nil},
		{"MSET", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return none(c.MSet(ctx, k("a"), "1", k("b"), "2"))
		}, nil, nil},
		{"MSETNX refused", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.MSetNX(ctx, k("a"), "9", k("c"), "3"))
		}, false, nil},
		{"MGET", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.MGet(ctx, k("a"), k("c"), k("b")))
		},
			[]client.OptionalString{some("1"), {}, some("2")}, nil},
		{"SETNX", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.SetNX(ctx, k("a"), "x"))
		}, false, nil},
		{"SETEX", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return none(c.SetEx(ctx, k("ex"), 90*time.Second, "v"))
		}, nil, nil},
		{"PSETEX", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return none(c.PSetEx(ctx, k("px"), 1500*time.Millisecond, "v"))
		}, nil, nil},
		{"GETEX persist", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return opt(c.GetEx(ctx, k("ex"), client.GetExOptions{Persist: true}))
		}, some("v"), nil},
		{"GETEX ttl", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return opt(c.GetEx(ctx, k("px"), client.GetExOptions{TTL: time.Minute}))
		}, some("v"), nil},
		{"SET with options", func(ctx context.Context, c C, k func(string) string) (any, error) {
			set, prev, had, err := c.SetWithOptions(ctx, k("a"), "new", client.SetOptions{Get: true, XX: true, ExpireAt: time.Now().Add(time.Hour)})
			return fmt.Sprintf("%v %v %v", set, prev, had), err
		}, "true 1 true", nil},
		{"SET NX refused", func(ctx context.Context, c C, k func(string) string) (any, error) {
			set, _, _, err := c.SetWithOptions(ctx, k("a"), "other", client.SetOptions{NX: true})
			return set, err
		}, false, nil},
		{"LCS", func(ctx context.Context, c C, k func(string) string) (any, error) {
			if err := c.MSet(ctx, k("l1"), "ohmytext", k("l2"), "mynewtext"); err != nil {
				return nil, err
			}
			return val(c.LCS(ctx, k("l1"), k("l2")))
		}, "mytext", nil},
		{"LCS LEN", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.LCSLen(ctx, k("l1"), k("l2")))
		}, int64(6), nil},
		{"LCS IDX", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.LCSIdx(ctx, k("l1"), k("l2"), client.LCSIdxOptions{MinMatchLen: 4, WithMatchLen: true}))
		}, client.LCSMatch{Matches: []client.LCSRange{{A: [2]int64{4, 7}, B: [2]int64{5, 8}, Len: 4}}, Len: 6}, nil},
		expectErr("WRONGTYPE", "WRONGTYPE", func(ctx context.Context, c C, k func(string) string) error {
			if _, err := c.LPush(ctx, k("list"), "x"); err != nil {
				return err
			}
			_, _, err := c.Get(ctx, k("list"))
			return err
		}),
	})
}

// TestTypedArgumentErrors: invalid arguments fail before anything is sent, with a
// *ConfigError naming the option, and the batch form reports the same error.
func TestTypedArgumentErrors(t *testing.T) {
	c, err := client.Create(client.Options{Endpoints: []client.Endpoint{{Host: "127.0.0.1", Port: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	var ce *client.ConfigError
	for name, err := range map[string]error{
		"HSET odd": func() error { _, err := c.HSet(ctx, "h", "f"); return err }(),
		"DEL none": func() error { _, err := c.Del(ctx); return err }(),
		"SET NX and XX": func() error {
			_, _, _, err := c.SetWithOptions(ctx, "k", "v", client.SetOptions{NX: true, XX: true})
			return err
		}(),
		"XREAD with Block": func() error {
			_, err := c.XRead(ctx, client.XReadArgs{Streams: []client.XStreamOffset{{Key: "s", ID: "0"}}, Block: time.Second})
			return err
		}(),
		"ZADD NX and GT": func() error {
			_, err := c.ZAddArgs(ctx, "z", client.ZAddOptions{NX: true, GT: true}, client.ZMember{Member: "m"})
			return err
		}(),
		"BLPOP negative":  func() error { _, _, _, err := c.BLPop(ctx, -time.Second, "l"); return err }(),
		"XTRIM neither":   func() error { _, err := c.XTrim(ctx, "s", client.XTrimOptions{}); return err }(),
		"HSCAN TYPE":      func() error { _, err := c.HScan(ctx, "h", 0, client.ScanOptions{Type: "string"}); return err }(),
		"BITFIELD_RO SET": func() error { _, err := c.BitFieldRO(ctx, "b", client.BitFieldSet("u8", "0", 1)); return err }(),
		"GEOSEARCH shape": func() error { _, err := c.GeoSearch(ctx, "g", client.GeoSearchQuery{Member: "m"}); return err }(),
	} {
		if !errors.As(err, &ce) {
			t.Errorf("%s: %v, want a *ConfigError", name, err)
		} else if !strings.HasPrefix(err.Error(), "respire: ") {
			t.Errorf("%s: %q lacks the respire: prefix", name, err)
		}
	}
	var b client.Batch
	f := b.HSet("h", "odd")
	if _, err := f.Result(); !errors.As(err, &ce) {
		t.Fatalf("batch HSET odd: %v", err)
	}
	if err := c.Pipeline(ctx, &b); !errors.As(err, &ce) {
		t.Fatalf("a batch with an invalid command ran: %v", err)
	}
}
