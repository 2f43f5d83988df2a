package client_test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/respire-go/respire/client"
)

func TestTypedGenericKeys(t *testing.T) {
	runGroup(t, nil, groupOptions{admin: true}, []step{
		{"setup", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return none(c.MSet(ctx, k("a"), "1", k("b"), "2", k("c"), "3"))
		}, nil, nil},
		{"EXISTS", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.Exists(ctx, k("a"), k("b"), k("x")))
		}, int64(2), nil},
		{"TYPE", func(ctx context.Context, c C, k func(string) string) (any, error) { return val(c.Type(ctx, k("a"))) }, "string", nil},
		{"TYPE none", func(ctx context.Context, c C, k func(string) string) (any, error) { return val(c.Type(ctx, k("x"))) }, "none", nil},
		{"TTL none", func(ctx context.Context, c C, k func(string) string) (any, error) { return val(c.TTL(ctx, k("a"))) }, client.NoExpiry, nil},
		{"PTTL missing", func(ctx context.Context, c C, k func(string) string) (any, error) { return val(c.PTTL(ctx, k("x"))) }, client.KeyMissing, nil},
		{"EXPIRE", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.Expire(ctx, k("a"), 100*time.Second))
		}, true, nil},
		{"EXPIRE NX refused", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.ExpireIf(ctx, k("a"), time.Hour, client.ExpireNX))
		}, false, nil},
		{"EXPIRE GT", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.ExpireIf(ctx, k("a"), time.Hour, client.ExpireGT))
		}, true, nil},
		{"TTL", func(ctx context.Context, c C, k func(string) string) (any, error) { return val(c.TTL(ctx, k("a"))) }, nil, func(got any) error {
			if d := got.(time.Duration); d < 59*time.Minute || d > time.Hour {
				return fmt.Errorf("ttl %v", d)
			}
			return nil
		}},
		{"PEXPIRE", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.PExpire(ctx, k("b"), 5*time.Second))
		}, true, nil},
		{"PTTL", func(ctx context.Context, c C, k func(string) string) (any, error) { return val(c.PTTL(ctx, k("b"))) }, nil, func(got any) error {
			if d := got.(time.Duration); d <= 0 || d > 5*time.Second || d%time.Millisecond != 0 {
				return fmt.Errorf("pttl %v", d)
			}
			return nil
		}},
		{"EXPIREAT", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.ExpireAt(ctx, k("c"), time.Unix(4102444800, 0)))
		}, true, nil},
		{"EXPIRETIME", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return opt(c.ExpireTime(ctx, k("c")))
		}, some(time.Unix(4102444800, 0)), nil},
		{"PEXPIREAT", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.PExpireAt(ctx, k("c"), time.UnixMilli(4102444800123)))
		}, true, nil},
		{"PEXPIRETIME", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return opt(c.PExpireTime(ctx, k("c")))
		}, some(time.UnixMilli(4102444800123)), nil},
		{"EXPIRETIME none", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return opt(c.ExpireTime(ctx, k("x")))
		}, client.Optional[time.Time]{}, nil},
		{"PERSIST", func(ctx context.Context, c C, k func(string) string) (any, error) { return val(c.Persist(ctx, k("c"))) }, true, nil},
		{"COPY", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.Copy(ctx, k("a"), k("a2"), false))
		}, true, nil},
		{"COPY no replace", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.Copy(ctx, k("b"), k("a2"), false))
		}, false, nil},
		{"COPY DB", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.CopyToDB(ctx, k("a"), k("a"), 3, true))
		}, true, nil},
		{"RENAME", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return none(c.Rename(ctx, k("a2"), k("a3")))
		}, nil, nil},
		{"RENAMENX", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.RenameNX(ctx, k("a3"), k("b")))
		}, false, nil},
		{"MOVE", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.Move(ctx, k("a3"), 4))
		}, true, nil},
		{"TOUCH", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.Touch(ctx, k("a"), k("b"), k("a3")))
		}, int64(2), nil},
		{"OBJECT ENCODING", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return opt(c.ObjectEncoding(ctx, k("a")))
		}, some("int"), nil},
		{"OBJECT REFCOUNT", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.ObjectRefCount(ctx, k("a")))
		}, nil, func(got any) error {
			if got.(int64) < 1 {
				return errors.New("refcount below 1")
			}
			return nil
		}},
		{"OBJECT IDLETIME", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.ObjectIdleTime(ctx, k("a")))
		}, nil, func(got any) error {
			if d := got.(time.Duration); d < 0 || d > time.Minute {
				return fmt.Errorf("idle %v", d)
			}
			return nil
		}},
		expectErr("OBJECT FREQ without LFU", "ERR", func(ctx context.Context, c C, k func(string) string) error {
			_, err := c.ObjectFreq(ctx, k("a"))
			return err
		}),
		{"OBJECT HELP", func(ctx context.Context, c C, k func(string) string) (any, error) { return val(c.ObjectHelp(ctx)) }, nil, nonEmpty},
		{"DUMP and RESTORE", func(ctx context.Context, c C, k func(string) string) (any, error) {
			blob, ok, err := c.Dump(ctx, k("b"))
			if err != nil || !ok {
				return nil, fmt.Errorf("dump: %v %v", ok, err)
			}
			if err := c.Restore(ctx, k("restored"), time.Minute, blob, client.RestoreOptions{Replace: true}); err != nil {
				return nil, err
			}
			return opt(c.Get(ctx, k("restored")))
		}, some("2"), nil},
		{"DUMP missing", func(ctx context.Context, c C, k func(string) string) (any, error) { return opt(c.Dump(ctx, k("x"))) }, client.Optional[string]{}, nil},
		{"KEYS", func(ctx context.Context, c C, k func(string) string) (any, error) {
			keys, err := c.Keys(ctx, k("[ab]"))
			sort.Strings(keys)
			return keys, err
		}, nil, lenIs(2)},
		{"SCAN", func(ctx context.Context, c C, k func(string) string) (any, error) {
			var all []string
			cursor := uint64(0)
			for {
				page, err := c.Scan(ctx, cursor, client.ScanOptions{Match: k("*"), Count: 2, Type: "string"})
				if err != nil {
					return nil, err
				}
				all = append(all, page.Keys...)
				if cursor = page.Cursor; cursor == 0 {
					break
				}
			}
			sort.Strings(all)
			return all, nil
		}, nil, func(got any) error {
			keys := got.([]string)
			if len(keys) < 4 || !strings.HasSuffix(keys[0], ":a") {
				return fmt.Errorf("scan found %v", keys)
			}
			return nil
		}},
		{"RANDOMKEY", func(ctx context.Context, c C, k func(string) string) (any, error) { return opt(c.RandomKey(ctx)) }, nil, func(got any) error {
			if !got.(client.Optional[string]).Valid {
				return errors.New("no key")
			}
			return nil
		}},
		{"SORT", func(ctx context.Context, c C, k func(string) string) (any, error) {
			if _, err := c.RPush(ctx, k("sort"), "3", "1", "2"); err != nil {
				return nil, err
			}
			return val(c.Sort(ctx, k("sort"), client.SortOptions{Desc: true}))
		}, []string{"3", "2", "1"}, nil},
		{"SORT_RO", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.SortRO(ctx, k("sort"), client.SortOptions{Count: 2}))
		}, []string{"1", "2"}, nil},
		{"SORT STORE", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.SortStore(ctx, k("sort"), k("sorted"), client.SortOptions{}))
		}, int64(3), nil},
		{"UNLINK", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.Unlink(ctx, k("sorted"), k("x")))
		}, int64(1), nil},
		{"DEL", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.Del(ctx, k("a"), k("b"), k("x")))
		}, int64(2), nil},
		{"WAIT", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.Wait(ctx, 0, 10*time.Millisecond))
		}, int64(0), nil},
		{"MIGRATE", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.Migrate(ctx, "127.0.0.1", 1, 0, 100*time.Millisecond, client.MigrateOptions{Keys: []string{k("x")}}))
		}, "NOKEY", nil},
	})
}

func TestTypedHashes(t *testing.T) {
	runGroup(t, nil, groupOptions{}, []step{
		{"HSET", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.HSet(ctx, k("h"), "a", "1", "b", "2"))
		}, int64(2), nil},
		{"HSET map", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.HSetMap(ctx, k("h"), map[string]string{"c": "3", "a": "10"}))
		}, int64(1), nil},
		{"HMSET", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return none(c.HMSet(ctx, k("h"), "d", "4"))
		}, nil, nil},
		{"HSETNX", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.HSetNX(ctx, k("h"), "a", "x"))
		}, false, nil},
		{"HGET", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return opt(c.HGet(ctx, k("h"), "a"))
		}, some("10"), nil},
		{"HGET missing", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return opt(c.HGet(ctx, k("h"), "zz"))
		}, client.Optional[string]{}, nil},
		{"HGETALL", func(ctx context.Context, c C, k func(string) string) (any, error) { return val(c.HGetAll(ctx, k("h"))) },
			map[string]string{"a": "10", "b": "2", "c": "3", "d": "4"}, nil},
		{"HGETALL missing", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.HGetAll(ctx, k("none")))
		}, map[string]string{}, nil},
		{"HMGET", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.HMGet(ctx, k("h"), "b", "zz"))
		},
			[]client.OptionalString{some("2"), {}}, nil},
		{"HEXISTS", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.HExists(ctx, k("h"), "b"))
		}, true, nil},
		{"HINCRBY", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.HIncrBy(ctx, k("h"), "b", 5))
		}, int64(7), nil},
		{"HINCRBYFLOAT", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.HIncrByFloat(ctx, k("h"), "c", 0.25))
		}, 3.25, nil},
		{"HKEYS", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return sorted(c.HKeys(ctx, k("h")))
		}, []string{"a", "b", "c", "d"}, nil},
		{"HVALS", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return sorted(c.HVals(ctx, k("h")))
		}, []string{"10", "3.25", "4", "7"}, nil},
		{"HLEN", func(ctx context.Context, c C, k func(string) string) (any, error) { return val(c.HLen(ctx, k("h"))) }, int64(4), nil},
		{"HSTRLEN", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.HStrLen(ctx, k("h"), "c"))
		}, int64(4), nil},
		{"HRANDFIELD", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return opt(c.HRandField(ctx, k("h")))
		}, nil, func(got any) error {
			if !got.(client.Optional[string]).Valid {
				return errors.New("no field")
			}
			return nil
		}},
		{"HRANDFIELD count", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.HRandFields(ctx, k("h"), 3))
		}, nil, lenIs(3)},
		{"HRANDFIELD WITHVALUES", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.HRandFieldsWithValues(ctx, k("h"), -5))
		}, nil, func(got any) error {
			fv := got.([]client.FieldValue)
			if len(fv) != 5 {
				return errors.New("want 5 pairs")
			}
			want := map[string]string{"a": "10", "b": "7", "c": "3.25", "d": "4"}
			for _, p := range fv {
				if want[p.Field] != p.Value {
					return fmt.Errorf("pair %v does not belong to the hash", p)
				}
			}
			return nil
		}},
		{"HSCAN", func(ctx context.Context, c C, k func(string) string) (any, error) {
			page, err := c.HScan(ctx, k("h"), 0, client.ScanOptions{Match: "[ab]"})
			sort.Slice(page.Fields, func(i, j int) bool { return page.Fields[i].Field < page.Fields[j].Field })
			return page, err
		}, client.HScanPage{Fields: []client.FieldValue{{Field: "a", Value: "10"}, {Field: "b", Value: "7"}}}, nil},
		{"HDEL", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.HDel(ctx, k("h"), "a", "zz"))
		}, int64(1), nil},
	})
}

func sorted(ss []string, err error) (any, error) {
	sort.Strings(ss)
	return ss, err
}

func TestTypedLists(t *testing.T) {
	runGroup(t, nil, groupOptions{}, []step{
		{"RPUSH", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.RPush(ctx, k("l"), "a", "b", "c"))
		}, int64(3), nil},
		{"LPUSH", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.LPush(ctx, k("l"), "z"))
		}, int64(4), nil},
		{"LPUSHX missing", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.LPushX(ctx, k("none"), "z"))
		}, int64(0), nil},
		{"RPUSHX", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.RPushX(ctx, k("l"), "d"))
		}, int64(5), nil},
		{"LRANGE", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.LRange(ctx, k("l"), 0, -1))
		}, []string{"z", "a", "b", "c", "d"}, nil},
		{"LLEN", func(ctx context.Context, c C, k func(string) string) (any, error) { return val(c.LLen(ctx, k("l"))) }, int64(5), nil},
		{"LINDEX", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return opt(c.LIndex(ctx, k("l"), -1))
		}, some("d"), nil},
		{"LINDEX out", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return opt(c.LIndex(ctx, k("l"), 99))
		}, client.Optional[string]{}, nil},
		{"LINSERT", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.LInsertBefore(ctx, k("l"), "b", "ab"))
		}, int64(6), nil},
		{"LINSERT after", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.LInsertAfter(ctx, k("l"), "nope", "x"))
		}, int64(-1), nil},
		{"LPOS", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return opt(c.LPos(ctx, k("l"), "b", client.LPosOptions{}))
		}, some(int64(3)), nil},
		{"LPOS missing", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return opt(c.LPos(ctx, k("l"), "q", client.LPosOptions{}))
		}, client.Optional[int64]{}, nil},
		{"LPOS COUNT", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.LPosCount(ctx, k("l"), "a", 0, client.LPosOptions{MaxLen: 10}))
		}, []int64{1}, nil},
		{"LSET", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return none(c.LSet(ctx, k("l"), 0, "y"))
		}, nil, nil},
		{"LREM", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.LRem(ctx, k("l"), 0, "ab"))
		}, int64(1), nil},
		{"LTRIM", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return none(c.LTrim(ctx, k("l"), 0, 3))
		}, nil, nil},
		{"LPOP", func(ctx context.Context, c C, k func(string) string) (any, error) { return opt(c.LPop(ctx, k("l"))) }, some("y"), nil},
		{"RPOP", func(ctx context.Context, c C, k func(string) string) (any, error) { return opt(c.RPop(ctx, k("l"))) }, some("c"), nil},
		{"LMOVE", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return opt(c.LMove(ctx, k("l"), k("l2"), client.ListLeft, client.ListRight))
		}, some("a"), nil},
		{"RPOPLPUSH", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return opt(c.RPopLPush(ctx, k("l"), k("l2")))
		}, some("b"), nil},
		{"LPOP empty", func(ctx context.Context, c C, k func(string) string) (any, error) { return opt(c.LPop(ctx, k("l"))) }, client.Optional[string]{}, nil},
		{"LPOP count", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.LPopCount(ctx, k("l2"), 5))
		}, []string{"b", "a"}, nil},
		{"LPOP count missing", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.LPopCount(ctx, k("l2"), 5))
		}, []string(nil), nil},
		{"RPOP count", func(ctx context.Context, c C, k func(string) string) (any, error) {
			if _, err := c.RPush(ctx, k("l3"), "1", "2", "3"); err != nil {
				return nil, err
			}
			return val(c.RPopCount(ctx, k("l3"), 2))
		}, []string{"3", "2"}, nil},
		{"LMPOP", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return opt(c.LMPop(ctx, client.ListLeft, 0, k("none"), k("l3")))
		}, some(client.KeyValues{Key: "", Values: []string{"1"}}), func(got any) error {
			kv := got.(client.Optional[client.KeyValues])
			if !kv.Valid || !strings.HasSuffix(kv.Value.Key, ":l3") || fmt.Sprint(kv.Value.Values) != "[1]" {
				return errors.New("want l3's head")
			}
			return nil
		}},
		{"LMPOP empty", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return opt(c.LMPop(ctx, client.ListLeft, 2, k("none")))
		}, client.Optional[client.KeyValues]{}, nil},
		{"BLMPOP", func(ctx context.Context, c C, k func(string) string) (any, error) {
			if _, err := c.RPush(ctx, k("b1"), "x", "y"); err != nil {
				return nil, err
			}
			return opt(c.BLMPop(ctx, time.Second, client.ListRight, 5, k("b1")))
		}, nil, func(got any) error {
			kv := got.(client.Optional[client.KeyValues])
			if !kv.Valid || fmt.Sprint(kv.Value.Values) != "[y x]" {
				return errors.New("want y x")
			}
			return nil
		}},
		{"BLMPOP timeout", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return opt(c.BLMPop(ctx, 10*time.Millisecond, client.ListRight, 0, k("b1")))
		}, client.Optional[client.KeyValues]{}, nil},
		{"BLPOP", func(ctx context.Context, c C, k func(string) string) (any, error) {
			if _, err := c.RPush(ctx, k("b2"), "p"); err != nil {
				return nil, err
			}
			key, v, ok, err := c.BLPop(ctx, time.Second, k("b1"), k("b2"))
			return fmt.Sprintf("%v %v %v", strings.HasSuffix(key, ":b2"), v, ok), err
		}, "true p true", nil},
		{"BRPOP timeout", func(ctx context.Context, c C, k func(string) string) (any, error) {
			_, _, ok, err := c.BRPop(ctx, 10*time.Millisecond, k("b2"))
			return ok, err
		}, false, nil},
		{"BLMOVE", func(ctx context.Context, c C, k func(string) string) (any, error) {
			if _, err := c.RPush(ctx, k("b3"), "m"); err != nil {
				return nil, err
			}
			return opt(c.BLMove(ctx, k("b3"), k("b4"), client.ListLeft, client.ListLeft, time.Second))
		}, some("m"), nil},
		{"BRPOPLPUSH", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return opt(c.BRPopLPush(ctx, k("b4"), k("b3"), time.Second))
		}, some("m"), nil},
	})
}

func TestTypedSets(t *testing.T) {
	runGroup(t, nil, groupOptions{}, []step{
		{"SADD", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.SAdd(ctx, k("s1"), "a", "b", "c"))
		}, int64(3), nil},
		{"SADD 2", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.SAdd(ctx, k("s2"), "b", "c", "d"))
		}, int64(3), nil},
		{"SCARD", func(ctx context.Context, c C, k func(string) string) (any, error) { return val(c.SCard(ctx, k("s1"))) }, int64(3), nil},
		{"SMEMBERS", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return sorted(c.SMembers(ctx, k("s1")))
		}, []string{"a", "b", "c"}, nil},
		{"SISMEMBER", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.SIsMember(ctx, k("s1"), "a"))
		}, true, nil},
		{"SMISMEMBER", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.SMIsMember(ctx, k("s1"), "a", "z"))
		}, []bool{true, false}, nil},
		{"SINTER", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return sorted(c.SInter(ctx, k("s1"), k("s2")))
		}, []string{"b", "c"}, nil},
		{"SINTERCARD", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.SInterCard(ctx, 1, k("s1"), k("s2")))
		}, int64(1), nil},
		{"SINTERSTORE", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.SInterStore(ctx, k("i"), k("s1"), k("s2")))
		}, int64(2), nil},
		{"SUNION", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return sorted(c.SUnion(ctx, k("s1"), k("s2")))
		}, []string{"a", "b", "c", "d"}, nil},
		{"SUNIONSTORE", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.SUnionStore(ctx, k("u"), k("s1"), k("s2")))
		}, int64(4), nil},
		{"SDIFF", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return sorted(c.SDiff(ctx, k("s1"), k("s2")))
		}, []string{"a"}, nil},
		{"SDIFFSTORE", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.SDiffStore(ctx, k("d"), k("s1"), k("s2")))
		}, int64(1), nil},
		{"SMOVE", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.SMove(ctx, k("s1"), k("s2"), "a"))
		}, true, nil},
		{"SRANDMEMBER", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return opt(c.SRandMember(ctx, k("s1")))
		}, nil, func(got any) error {
			if o := got.(client.Optional[string]); !o.Valid || (o.Value != "b" && o.Value != "c") {
				return errors.New("not a member")
			}
			return nil
		}},
		{"SRANDMEMBER count", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.SRandMembers(ctx, k("s1"), -3))
		}, nil, lenIs(3)},
		{"SSCAN", func(ctx context.Context, c C, k func(string) string) (any, error) {
			page, err := c.SScan(ctx, k("s2"), 0, client.ScanOptions{Count: 100})
			sort.Strings(page.Keys)
			return page, err
		}, client.ScanPage{Keys: []string{"a", "b", "c", "d"}}, nil},
		{"SPOP", func(ctx context.Context, c C, k func(string) string) (any, error) { return opt(c.SPop(ctx, k("d"))) }, some("a"), nil},
		{"SPOP empty", func(ctx context.Context, c C, k func(string) string) (any, error) { return opt(c.SPop(ctx, k("d"))) }, client.Optional[string]{}, nil},
		{"SPOP count", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return sorted(c.SPopCount(ctx, k("i"), 5))
		}, []string{"b", "c"}, nil},
		{"SREM", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.SRem(ctx, k("s2"), "a", "q"))
		}, int64(1), nil},
	})
}
