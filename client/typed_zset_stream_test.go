package client_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/respire-go/respire/client"
	"github.com/respire-go/respire/netio/resp"
)

func zm(member string, score float64) client.ZMember {
	return client.ZMember{Member: member, Score: score}
}

func TestTypedSortedSets(t *testing.T) {
	runGroup(t, nil, groupOptions{}, []step{
		{"ZADD", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.ZAdd(ctx, k("z"), zm("a", 1), zm("b", 2), zm("c", 3.5)))
		}, int64(3), nil},
		{"ZADD CH GT", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.ZAddArgs(ctx, k("z"), client.ZAddOptions{GT: true, CH: true}, zm("a", 0), zm("b", 5)))
		}, int64(1), nil},
		{"ZADD INCR", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return opt(c.ZAddIncr(ctx, k("z"), client.ZAddOptions{}, zm("a", 0.5)))
		}, some(1.5), nil},
		{"ZADD INCR refused", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return opt(c.ZAddIncr(ctx, k("z"), client.ZAddOptions{NX: true}, zm("a", 1)))
		}, client.Optional[float64]{}, nil},
		{"ZCARD", func(ctx context.Context, c C, k func(string) string) (any, error) { return val(c.ZCard(ctx, k("z"))) }, int64(3), nil},
		{"ZSCORE", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return opt(c.ZScore(ctx, k("z"), "c"))
		}, some(3.5), nil},
		{"ZSCORE missing", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return opt(c.ZScore(ctx, k("z"), "q"))
		}, client.Optional[float64]{}, nil},
		{"ZMSCORE", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.ZMScore(ctx, k("z"), "a", "q"))
		},
			[]client.Optional[float64]{some(1.5), {}}, nil},
		{"ZINCRBY", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.ZIncrBy(ctx, k("z"), 1, "c"))
		}, 4.5, nil},
		{"ZRANGE", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.ZRange(ctx, k("z"), 0, -1))
		}, []string{"a", "c", "b"}, nil},
		{"ZRANGE WITHSCORES", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.ZRangeWithScores(ctx, k("z"), 0, -1))
		},
			[]client.ZMember{zm("a", 1.5), zm("c", 4.5), zm("b", 5)}, nil},
		{"ZRANGE BYSCORE REV LIMIT", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.ZRangeArgsWithScores(ctx, k("z"), client.ZRangeOptions{Start: "+inf", Stop: "(1.5", By: client.ByScore, Rev: true, Count: 1}))
		}, []client.ZMember{zm("b", 5)}, nil},
		{"ZRANGE BYLEX", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.ZRangeArgs(ctx, k("lex"), client.ZRangeOptions{Start: "-", Stop: "+", By: client.ByLex}))
		}, []string{}, nil},
		{"ZRANGEBYSCORE", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.ZRangeByScore(ctx, k("z"), "-inf", "5", client.ZLimit{Offset: 1, Count: 5}))
		}, []string{"c", "b"}, nil},
		{"ZRANGEBYSCORE WITHSCORES", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.ZRangeByScoreWithScores(ctx, k("z"), "2", "5", client.ZLimit{}))
		}, []client.ZMember{zm("c", 4.5), zm("b", 5)}, nil},
		{"ZREVRANGE", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.ZRevRange(ctx, k("z"), 0, 0))
		}, []string{"b"}, nil},
		{"ZREVRANGE WITHSCORES", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.ZRevRangeWithScores(ctx, k("z"), 0, 0))
		},
			[]client.ZMember{zm("b", 5)}, nil},
		{"ZREVRANGEBYSCORE", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.ZRevRangeByScore(ctx, k("z"), "+inf", "-inf", client.ZLimit{Count: 2}))
		}, []string{"b", "c"}, nil},
		{"ZREVRANGEBYSCORE WITHSCORES", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.ZRevRangeByScoreWithScores(ctx, k("z"), "2", "-inf", client.ZLimit{}))
		}, []client.ZMember{zm("a", 1.5)}, nil},
		{"ZRANK", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return opt(c.ZRank(ctx, k("z"), "c"))
		}, some(int64(1)), nil},
		{"ZREVRANK", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return opt(c.ZRevRank(ctx, k("z"), "c"))
		}, some(int64(1)), nil},
		{"ZRANK missing", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return opt(c.ZRank(ctx, k("z"), "q"))
		}, client.Optional[int64]{}, nil},
		{"ZCOUNT", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.ZCount(ctx, k("z"), "(1.5", "+inf"))
		}, int64(2), nil},
		{"lex set", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.ZAdd(ctx, k("lex"), zm("a", 0), zm("b", 0), zm("c", 0), zm("d", 0)))
		}, int64(4), nil},
		{"ZLEXCOUNT", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.ZLexCount(ctx, k("lex"), "[b", "+"))
		}, int64(3), nil},
		{"ZRANGEBYLEX", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.ZRangeByLex(ctx, k("lex"), "(a", "[c", client.ZLimit{}))
		}, []string{"b", "c"}, nil},
		{"ZREVRANGEBYLEX", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.ZRevRangeByLex(ctx, k("lex"), "+", "-", client.ZLimit{Count: 1}))
		}, []string{"d"}, nil},
		{"ZREMRANGEBYLEX", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.ZRemRangeByLex(ctx, k("lex"), "[d", "+"))
		}, int64(1), nil},
		{"ZINTER", func(ctx context.Context, c C, k func(string) string) (any, error) {
			if _, err := c.ZAdd(ctx, k("z2"), zm("a", 10), zm("c", 20), zm("x", 1)); err != nil {
				return nil, err
			}
			return val(c.ZInter(ctx, client.ZCombine{Keys: []string{k("z"), k("z2")}}))
		}, []string{"a", "c"}, nil},
		{"ZINTER WITHSCORES", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.ZInterWithScores(ctx, client.ZCombine{Keys: []string{k("z"), k("z2")}, Weights: []float64{2, 1}, Aggregate: client.AggregateMax}))
		}, []client.ZMember{zm("a", 10), zm("c", 20)}, nil},
		{"ZINTERCARD", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.ZInterCard(ctx, 0, k("z"), k("z2")))
		}, int64(2), nil},
		{"ZINTERSTORE", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.ZInterStore(ctx, k("zi"), client.ZCombine{Keys: []string{k("z"), k("z2")}}))
		}, int64(2), nil},
		{"ZUNION", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.ZUnion(ctx, client.ZCombine{Keys: []string{k("z"), k("z2")}, Aggregate: client.AggregateMin}))
		}, []string{"x", "a", "c", "b"}, nil},
		{"ZUNION WITHSCORES", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.ZUnionWithScores(ctx, client.ZCombine{Keys: []string{k("z2")}}))
		}, []client.ZMember{zm("x", 1), zm("a", 10), zm("c", 20)}, nil},
		{"ZUNIONSTORE", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.ZUnionStore(ctx, k("zu"), client.ZCombine{Keys: []string{k("z"), k("z2")}}))
		}, int64(4), nil},
		{"ZDIFF", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.ZDiff(ctx, k("z"), k("z2")))
		}, []string{"b"}, nil},
		{"ZDIFF WITHSCORES", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.ZDiffWithScores(ctx, k("z"), k("z2")))
		},
			[]client.ZMember{zm("b", 5)}, nil},
		{"ZDIFFSTORE", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.ZDiffStore(ctx, k("zd"), k("z"), k("z2")))
		}, int64(1), nil},
		{"ZRANGESTORE", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.ZRangeStore(ctx, k("zr"), k("z"), client.ZRangeOptions{Start: "0", Stop: "1"}))
		}, int64(2), nil},
		{"ZRANDMEMBER", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return opt(c.ZRandMember(ctx, k("zr")))
		}, nil, func(got any) error {
			if o := got.(client.Optional[string]); !o.Valid || (o.Value != "a" && o.Value != "c") {
				return errors.New("not a member")
			}
			return nil
		}},
		{"ZRANDMEMBER count", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.ZRandMembers(ctx, k("zr"), 2))
		}, nil, lenIs(2)},
		{"ZRANDMEMBER WITHSCORES", func(ctx context.Context, c C, k func(string) string) (any, error) {
			zs, err := c.ZRandMembersWithScores(ctx, k("zr"), 2)
			sort.Slice(zs, func(i, j int) bool { return zs[i].Score < zs[j].Score })
			return zs, err
		}, []client.ZMember{zm("a", 1.5), zm("c", 4.5)}, nil},
		{"ZSCAN", func(ctx context.Context, c C, k func(string) string) (any, error) {
			page, err := c.ZScan(ctx, k("zr"), 0, client.ScanOptions{})
			sort.Slice(page.Members, func(i, j int) bool { return page.Members[i].Score < page.Members[j].Score })
			return page, err
		}, client.ZScanPage{Members: []client.ZMember{zm("a", 1.5), zm("c", 4.5)}}, nil},
		{"ZPOPMIN", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return opt(c.ZPopMin(ctx, k("zu")))
		}, some(zm("x", 1)), nil},
		{"ZPOPMAX", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return opt(c.ZPopMax(ctx, k("zu")))
		}, some(zm("c", 24.5)), nil},
		{"ZPOPMIN count", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.ZPopMinCount(ctx, k("zu"), 1))
		}, []client.ZMember{zm("b", 5)}, nil},
		{"ZPOPMAX count", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.ZPopMaxCount(ctx, k("zu"), 5))
		}, []client.ZMember{zm("a", 11.5)}, nil},
		{"ZPOPMIN empty", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return opt(c.ZPopMin(ctx, k("zu")))
		}, client.Optional[client.ZMember]{}, nil},
		{"ZMPOP", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return opt(c.ZMPop(ctx, client.Max, 1, k("zu"), k("zr")))
		}, nil, func(got any) error {
			o := got.(client.Optional[client.KeyMembers])
			if !o.Valid || !strings.HasSuffix(o.Value.Key, ":zr") || fmt.Sprint(o.Value.Members) != "[{c 4.5}]" {
				return errors.New("want zr's c")
			}
			return nil
		}},
		{"ZMPOP empty", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return opt(c.ZMPop(ctx, client.Min, 0, k("zu")))
		}, client.Optional[client.KeyMembers]{}, nil},
		{"BZMPOP", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return opt(c.BZMPop(ctx, time.Second, client.Min, 0, k("zr")))
		}, nil, func(got any) error {
			o := got.(client.Optional[client.KeyMembers])
			if !o.Valid || fmt.Sprint(o.Value.Members) != "[{a 1.5}]" {
				return errors.New("want zr's a")
			}
			return nil
		}},
		{"BZPOPMIN", func(ctx context.Context, c C, k func(string) string) (any, error) {
			key, m, s, ok, err := c.BZPopMin(ctx, time.Second, k("zi"))
			return fmt.Sprintf("%v %s %v %v", strings.HasSuffix(key, ":zi"), m, s, ok), err
		}, "true a 11.5 true", nil},
		{"BZPOPMAX", func(ctx context.Context, c C, k func(string) string) (any, error) {
			_, m, s, ok, err := c.BZPopMax(ctx, time.Second, k("zi"))
			return fmt.Sprintf("%s %v %v", m, s, ok), err
		}, "c 24.5 true", nil},
		{"BZPOPMIN timeout", func(ctx context.Context, c C, k func(string) string) (any, error) {
			_, _, _, ok, err := c.BZPopMin(ctx, 10*time.Millisecond, k("zi"))
			return ok, err
		}, false, nil},
		{"ZREM", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.ZRem(ctx, k("z"), "a", "q"))
		}, int64(1), nil},
		{"ZREMRANGEBYRANK", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.ZRemRangeByRank(ctx, k("z"), 0, 0))
		}, int64(1), nil},
		{"ZREMRANGEBYSCORE", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.ZRemRangeByScore(ctx, k("z"), "-inf", "+inf"))
		}, int64(1), nil},
		{"infinite score", func(ctx context.Context, c C, k func(string) string) (any, error) {
			if _, err := c.ZAdd(ctx, k("inf"), zm("top", math.Inf(1))); err != nil {
				return nil, err
			}
			return opt(c.ZScore(ctx, k("inf"), "top"))
		}, some(math.Inf(1)), nil},
	})
}

func TestTypedStreams(t *testing.T) {
	runGroup(t, nil, groupOptions{}, []step{
		{"XADD", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.XAdd(ctx, k("s"), client.XAddOptions{ID: "1-1"}, "f", "v1"))
		}, "1-1", nil},
		{"XADD 2", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.XAdd(ctx, k("s"), client.XAddOptions{ID: "2-1", Trim: client.XTrimOptions{MaxLen: 10}}, "f", "v2", "g", "w"))
		}, "2-1", nil},
		{"XADD auto id", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.XAdd(ctx, k("s"), client.XAddOptions{}, "f", "v3"))
		}, nil, nonEmpty},
		{"XADD NOMKSTREAM", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.XAdd(ctx, k("none"), client.XAddOptions{NoMkStream: true}, "f", "v"))
		}, "", nil},
		{"XLEN", func(ctx context.Context, c C, k func(string) string) (any, error) { return val(c.XLen(ctx, k("s"))) }, int64(3), nil},
		{"XRANGE", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.XRange(ctx, k("s"), "-", "2-1"))
		},
			[]client.XEntry{{ID: "1-1", Fields: []string{"f", "v1"}}, {ID: "2-1", Fields: []string{"f", "v2", "g", "w"}}}, nil},
		{"XRANGE COUNT", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.XRangeN(ctx, k("s"), "-", "+", 1))
		},
			[]client.XEntry{{ID: "1-1", Fields: []string{"f", "v1"}}}, nil},
		{"XREVRANGE", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.XRevRangeN(ctx, k("s"), "2-1", "-", 1))
		},
			[]client.XEntry{{ID: "2-1", Fields: []string{"f", "v2", "g", "w"}}}, nil},
		{"XREVRANGE all", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.XRevRange(ctx, k("s"), "+", "-"))
		}, nil, lenIs(3)},
		{"XREAD", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.XRead(ctx, client.XReadArgs{Streams: []client.XStreamOffset{{Key: k("s"), ID: "1-1"}}, Count: 1}))
		}, nil, func(got any) error {
			ss := got.([]client.XStream)
			if len(ss) != 1 || len(ss[0].Entries) != 1 || ss[0].Entries[0].ID != "2-1" || ss[0].Entries[0].Values()["g"] != "w" {
				return errors.New("want the entry after 1-1")
			}
			return nil
		}},
		{"XREAD nothing", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.XRead(ctx, client.XReadArgs{Streams: []client.XStreamOffset{{Key: k("s"), ID: "99999999999999-0"}}}))
		}, []client.XStream(nil), nil},
		{"XREAD BLOCK", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.XReadBlock(ctx, client.XReadArgs{Streams: []client.XStreamOffset{{Key: k("s"), ID: "0"}}, Count: 2, Block: time.Second}))
		}, nil, func(got any) error {
			if ss := got.([]client.XStream); len(ss) != 1 || len(ss[0].Entries) != 2 {
				return errors.New("want two entries")
			}
			return nil
		}},
		{"XREAD BLOCK timeout", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.XReadBlock(ctx, client.XReadArgs{Streams: []client.XStreamOffset{{Key: k("s"), ID: "$"}}, Block: 10 * time.Millisecond}))
		}, []client.XStream(nil), nil},
		{"XGROUP CREATE", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return none(c.XGroupCreate(ctx, k("s"), "g", "0", false))
		}, nil, nil},
		{"XGROUP CREATE MKSTREAM", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return none(c.XGroupCreate(ctx, k("s2"), "g", "$", true))
		}, nil, nil},
		{"XGROUP CREATECONSUMER", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.XGroupCreateConsumer(ctx, k("s"), "g", "c1"))
		}, true, nil},
		{"XREADGROUP", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.XReadGroup(ctx, client.XReadGroupArgs{Group: "g", Consumer: "c1", Streams: []client.XStreamOffset{{Key: k("s"), ID: ">"}}, Count: 2}))
		}, nil, func(got any) error {
			if ss := got.([]client.XStream); len(ss) != 1 || len(ss[0].Entries) != 2 || ss[0].Entries[0].ID != "1-1" {
				return errors.New("want the first two entries")
			}
			return nil
		}},
		{"XREADGROUP BLOCK", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.XReadGroupBlock(ctx, client.XReadGroupArgs{Group: "g", Consumer: "c2", Streams: []client.XStreamOffset{{Key: k("s"), ID: ">"}}, Block: time.Second, NoAck: true}))
		}, nil, func(got any) error {
			if ss := got.([]client.XStream); len(ss) != 1 || len(ss[0].Entries) != 1 {
				return errors.New("want the third entry")
			}
			return nil
		}},
		{"XPENDING", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.XPending(ctx, k("s"), "g"))
		},
			client.XPendingSummary{Count: 2, Lowest: "1-1", Highest: "2-1", Consumers: map[string]int64{"c1": 2}}, nil},
		{"XPENDING none", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.XPending(ctx, k("s2"), "g"))
		},
			client.XPendingSummary{Consumers: map[string]int64{}}, nil},
		{"XPENDING extended", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.XPendingExt(ctx, k("s"), "g", client.XPendingOptions{Count: 10, Consumer: "c1"}))
		}, nil, func(got any) error {
			ps := got.([]client.XPendingEntry)
			if len(ps) != 2 || ps[0].ID != "1-1" || ps[0].Consumer != "c1" || ps[0].Deliveries != 1 || ps[0].Idle < 0 {
				return errors.New("want c1's two messages")
			}
			return nil
		}},
		{"XCLAIM", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.XClaim(ctx, k("s"), "g", "c2", 0, []string{"1-1"}, client.XClaimOptions{RetryCount: 5}))
		}, []client.XEntry{{ID: "1-1", Fields: []string{"f", "v1"}}}, nil},
		{"XCLAIM JUSTID", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.XClaimJustID(ctx, k("s"), "g", "c1", 0, []string{"1-1"}, client.XClaimOptions{}))
		}, []string{"1-1"}, nil},
		{"XAUTOCLAIM", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.XAutoClaim(ctx, k("s"), "g", "c3", 0, "0", 1))
		}, nil, func(got any) error {
			r := got.(client.XAutoClaimResult)
			if len(r.Entries) != 1 || r.Entries[0].ID != "1-1" || r.Next != "2-1" || len(r.Deleted) != 0 {
				return errors.New("want 1-1, next 2-1")
			}
			return nil
		}},
		{"XAUTOCLAIM JUSTID", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.XAutoClaimJustID(ctx, k("s"), "g", "c3", 0, "0", 0))
		}, client.XAutoClaimIDs{Next: "0-0", IDs: []string{"1-1", "2-1"}, Deleted: []string{}}, nil},
		{"XACK", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.XAck(ctx, k("s"), "g", "1-1", "9-9"))
		}, int64(1), nil},
		{"XINFO STREAM", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.XInfoStream(ctx, k("s")))
		}, nil, func(got any) error {
			s := got.(client.XStreamInfo)
			if s.Length != 3 || s.Groups != 1 || !s.FirstEntry.Valid || s.FirstEntry.Value.ID != "1-1" || !s.LastEntry.Valid || s.EntriesAdded != 3 {
				return fmt.Errorf("stream info %+v", s)
			}
			return nil
		}},
		{"XINFO STREAM empty", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.XInfoStream(ctx, k("s2")))
		}, nil, func(got any) error {
			if s := got.(client.XStreamInfo); s.Length != 0 || s.FirstEntry.Valid {
				return fmt.Errorf("empty stream info %+v", s)
			}
			return nil
		}},
		{"XINFO STREAM FULL", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.XInfoStreamFull(ctx, k("s"), 1))
		}, nil, func(got any) error {
			m := got.(map[string]resp.Value)
			if n, err := m["length"].AsInt64(); err != nil || n != 3 {
				return fmt.Errorf("length %v %v", n, err)
			}
			return nil
		}},
		{"XINFO GROUPS", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.XInfoGroups(ctx, k("s")))
		}, nil, func(got any) error {
			gs := got.([]client.XGroupInfo)
			if len(gs) != 1 || gs[0].Name != "g" || gs[0].Consumers != 3 || gs[0].Pending != 1 || gs[0].LastDeliveredID == "" {
				return fmt.Errorf("groups %+v", gs)
			}
			return nil
		}},
		{"XINFO CONSUMERS", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.XInfoConsumers(ctx, k("s"), "g"))
		}, nil, func(got any) error {
			cs := got.([]client.XConsumerInfo)
			if len(cs) != 3 || cs[0].Name != "c1" {
				return fmt.Errorf("consumers %+v", cs)
			}
			return nil
		}},
		{"XINFO HELP", func(ctx context.Context, c C, k func(string) string) (any, error) { return val(c.XInfoHelp(ctx)) }, nil, nonEmpty},
		{"XGROUP HELP", func(ctx context.Context, c C, k func(string) string) (any, error) { return val(c.XGroupHelp(ctx)) }, nil, nonEmpty},
		{"XGROUP SETID", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return none(c.XGroupSetID(ctx, k("s"), "g", "0"))
		}, nil, nil},
		{"XGROUP DELCONSUMER", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.XGroupDelConsumer(ctx, k("s"), "g", "c1"))
		}, int64(0), nil},
		{"XGROUP DESTROY", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.XGroupDestroy(ctx, k("s"), "g"))
		}, true, nil},
		{"XDEL", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.XDel(ctx, k("s"), "1-1"))
		}, int64(1), nil},
		{"XTRIM", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.XTrim(ctx, k("s"), client.XTrimOptions{MinID: "3-0"}))
		}, int64(1), nil},
		{"XSETID", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return none(c.XSetID(ctx, k("s"), "99999999999999-0"))
		}, nil, nil},
	})
}
