package client_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/respire-go/respire/client"
	"github.com/respire-go/respire/netio/resp"
)

func near(a, b float64) bool { return math.Abs(a-b) < 1e-3 }

func TestTypedGeo(t *testing.T) {
	palermo := client.GeoLocation{Name: "Palermo", Longitude: 13.361389, Latitude: 38.115556}
	catania := client.GeoLocation{Name: "Catania", Longitude: 15.087269, Latitude: 37.502669}
	runGroup(t, nil, groupOptions{}, []step{
		{"GEOADD", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.GeoAdd(ctx, k("g"), client.GeoAddOptions{}, palermo, catania))
		}, int64(2), nil},
		{"GEOADD CH", func(ctx context.Context, c C, k func(string) string) (any, error) {
			moved := catania
			moved.Latitude += 0.001
			return val(c.GeoAdd(ctx, k("g"), client.GeoAddOptions{XX: true, CH: true}, moved))
		}, int64(1), nil},
		{"GEODIST", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return opt(c.GeoDist(ctx, k("g"), "Palermo", "Catania", client.Kilometers))
		}, nil, func(got any) error {
			if o := got.(client.Optional[float64]); !o.Valid || o.Value < 160 || o.Value > 170 {
				return errors.New("want about 166 km")
			}
			return nil
		}},
		{"GEODIST missing", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return opt(c.GeoDist(ctx, k("g"), "Palermo", "Rome", ""))
		}, client.Optional[float64]{}, nil},
		{"GEOHASH", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.GeoHash(ctx, k("g"), "Palermo", "Rome"))
		},
			[]client.OptionalString{some("sqc8b49rny0"), {}}, nil},
		{"GEOPOS", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.GeoPos(ctx, k("g"), "Palermo", "Rome"))
		}, nil, func(got any) error {
			ps := got.([]client.Optional[client.GeoPos])
			if len(ps) != 2 || !ps[0].Valid || !near(ps[0].Value.Longitude, 13.361389) || ps[1].Valid {
				return errors.New("want Palermo's position and nothing for Rome")
			}
			return nil
		}},
		{"GEOSEARCH", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.GeoSearch(ctx, k("g"), client.GeoSearchQuery{Longitude: 15, Latitude: 37, Radius: 200, Unit: client.Kilometers,
				WithCoord: true, WithDist: true, WithHash: true, Sort: client.GeoAsc}))
		}, nil, func(got any) error {
			ls := got.([]client.GeoLocation)
			if len(ls) != 2 || ls[0].Name != "Catania" || ls[0].Dist <= 0 || ls[0].Hash == 0 || !near(ls[1].Longitude, 13.361389) || ls[0].Dist > ls[1].Dist {
				return fmt.Errorf("search %+v", ls)
			}
			return nil
		}},
		{"GEOSEARCH names", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.GeoSearch(ctx, k("g"), client.GeoSearchQuery{Member: "Palermo", Width: 400, Height: 400, Unit: client.Kilometers, Sort: client.GeoDesc, Count: 1}))
		}, []client.GeoLocation{{Name: "Catania"}}, nil},
		{"GEOSEARCHSTORE", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.GeoSearchStore(ctx, k("g2"), k("g"), client.GeoSearchQuery{Member: "Palermo", Radius: 10}, true))
		}, int64(1), nil},
		{"GEORADIUS", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.GeoRadius(ctx, k("g"), 15, 37, 200, client.Kilometers, client.GeoRadiusOptions{WithDist: true, Sort: client.GeoAsc}))
		}, nil, func(got any) error {
			if ls := got.([]client.GeoLocation); len(ls) != 2 || ls[0].Name != "Catania" || ls[0].Dist == 0 {
				return fmt.Errorf("radius %+v", ls)
			}
			return nil
		}},
		{"GEORADIUS_RO", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.GeoRadiusRO(ctx, k("g"), 15, 37, 100, client.Kilometers, client.GeoRadiusOptions{WithCoord: true}))
		}, nil, lenIs(1)},
		{"GEORADIUS STORE", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.GeoRadiusStore(ctx, k("g"), 15, 37, 200, client.Kilometers, client.GeoRadiusOptions{}, client.GeoStore{Key: k("g3")}))
		}, int64(2), nil},
		{"GEORADIUSBYMEMBER", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.GeoRadiusByMember(ctx, k("g"), "Palermo", 10, client.Kilometers, client.GeoRadiusOptions{WithHash: true}))
		}, nil, func(got any) error {
			if ls := got.([]client.GeoLocation); len(ls) != 1 || ls[0].Name != "Palermo" || ls[0].Hash == 0 {
				return fmt.Errorf("by member %+v", ls)
			}
			return nil
		}},
		{"GEORADIUSBYMEMBER_RO", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.GeoRadiusByMemberRO(ctx, k("g"), "Palermo", 500, client.Kilometers, client.GeoRadiusOptions{Count: 1, Any: true}))
		}, nil, lenIs(1)},
		{"GEORADIUSBYMEMBER STORE", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.GeoRadiusByMemberStore(ctx, k("g"), "Palermo", 500, client.Kilometers, client.GeoRadiusOptions{}, client.GeoStore{Key: k("g4"), Dist: true}))
		}, int64(2), nil},
	})
}

func TestTypedBitmapsAndHyperLogLog(t *testing.T) {
	runGroup(t, nil, groupOptions{}, []step{
		{"SETBIT", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.SetBit(ctx, k("b"), 7, 1))
		}, int64(0), nil},
		{"GETBIT", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.GetBit(ctx, k("b"), 7))
		}, int64(1), nil},
		{"BITCOUNT", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.BitCount(ctx, k("b")))
		}, int64(1), nil},
		{"BITCOUNT BIT", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.BitCountRange(ctx, k("b"), 0, 6, client.BitUnitBit))
		}, int64(0), nil},
		{"BITPOS", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.BitPos(ctx, k("b"), 1))
		}, int64(7), nil},
		{"BITPOS range", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.BitPosRange(ctx, k("b"), 0, 0, -1, client.BitUnitByte))
		}, int64(0), nil},
		{"BITOP", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.BitOp(ctx, client.BitNot, k("nb"), k("b")))
		}, int64(1), nil},
		{"BITFIELD", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.BitField(ctx, k("bf"), client.BitFieldSet("u8", "0", 200), client.BitFieldOverflow("FAIL"),
				client.BitFieldIncrBy("u8", "0", 100), client.BitFieldGet("u8", "0")))
		}, []client.Optional[int64]{some(int64(0)), {}, some(int64(200))}, nil},
		{"BITFIELD_RO", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.BitFieldRO(ctx, k("bf"), client.BitFieldGet("u4", "0"), client.BitFieldGet("i8", "#0")))
		}, []int64{12, -56}, nil},
		{"PFADD", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.PFAdd(ctx, k("h1"), "a", "b", "c"))
		}, true, nil},
		{"PFADD again", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.PFAdd(ctx, k("h1"), "a"))
		}, false, nil},
		{"PFCOUNT", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.PFCount(ctx, k("h1")))
		}, int64(3), nil},
		{"PFMERGE", func(ctx context.Context, c C, k func(string) string) (any, error) {
			if _, err := c.PFAdd(ctx, k("h2"), "c", "d"); err != nil {
				return nil, err
			}
			if err := c.PFMerge(ctx, k("h3"), k("h1"), k("h2")); err != nil {
				return nil, err
			}
			return val(c.PFCount(ctx, k("h3")))
		}, int64(4), nil},
	})
}

func TestTypedScripting(t *testing.T) {
	const lib = "#!lua name=typedlib\n" +
		"redis.register_function('echo', function(keys, args) return {keys[1], args[1]} end)\n" +
		"redis.register_function{function_name='ro', callback=function(keys, args) return redis.call('GET', keys[1]) end, flags={'no-writes'}, description='reads'}"
	var sha string
	runGroup(t, nil, groupOptions{admin: true}, []step{
		{"EVAL", func(ctx context.Context, c C, k func(string) string) (any, error) {
			v, err := c.Eval(ctx, "return {KEYS[1], ARGV[1], 7}", []string{k("k")}, "a")
			if err != nil {
				return nil, err
			}
			vs, err := v.AsValues()
			if err != nil || len(vs) != 3 {
				return nil, fmt.Errorf("eval reply %v: %v", v, err)
			}
			s, _ := vs[1].AsString()
			n, _ := vs[2].AsInt64()
			return fmt.Sprintf("%s %d", s, n), nil
		}, "a 7", nil},
		{"EVAL_RO", func(ctx context.Context, c C, k func(string) string) (any, error) {
			v, err := c.EvalRO(ctx, "return redis.call('EXISTS', KEYS[1])", []string{k("k")})
			if err != nil {
				return nil, err
			}
			return val(v.AsInt64())
		}, int64(0), nil},
		{"SCRIPT LOAD", func(ctx context.Context, c C, k func(string) string) (any, error) {
			s, err := c.ScriptLoad(ctx, "return ARGV[1]")
			sha = s
			return len(s), err
		}, 40, nil},
		{"SCRIPT EXISTS", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.ScriptExists(ctx, sha, strings.Repeat("0", 40)))
		}, []bool{true, false}, nil},
		{"EVALSHA", func(ctx context.Context, c C, k func(string) string) (any, error) {
			v, err := c.EvalSHA(ctx, sha, nil, "hi")
			if err != nil {
				return nil, err
			}
			return val(v.AsString())
		}, "hi", nil},
		{"EVALSHA_RO", func(ctx context.Context, c C, k func(string) string) (any, error) {
			v, err := c.EvalSHARO(ctx, sha, nil, "ro")
			if err != nil {
				return nil, err
			}
			return val(v.AsString())
		}, "ro", nil},
		expectErr("EVALSHA unknown", "NOSCRIPT", func(ctx context.Context, c C, k func(string) string) error {
			_, err := c.EvalSHA(ctx, strings.Repeat("0", 40), nil)
			return err
		}),
		{"SCRIPT HELP", func(ctx context.Context, c C, k func(string) string) (any, error) { return val(c.ScriptHelp(ctx)) }, nil, nonEmpty},
		expectErr("SCRIPT KILL idle", "NOTBUSY", func(ctx context.Context, c C, k func(string) string) error { return c.ScriptKill(ctx) }),
		{"SCRIPT FLUSH", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return none(c.ScriptFlush(ctx, client.FlushSync))
		}, nil, nil},
		{"FUNCTION LOAD", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.FunctionLoad(ctx, lib, true))
		}, "typedlib", nil},
		{"FCALL", func(ctx context.Context, c C, k func(string) string) (any, error) {
			v, err := c.FCall(ctx, "echo", []string{k("k")}, "x")
			if err != nil {
				return nil, err
			}
			ss, err := v.AsStrings()
			return ss, err
		}, nil, func(got any) error {
			if ss := got.([]string); len(ss) != 2 || ss[1] != "x" {
				return errors.New("want [key x]")
			}
			return nil
		}},
		{"FCALL_RO", func(ctx context.Context, c C, k func(string) string) (any, error) {
			v, err := c.FCallRO(ctx, "ro", []string{k("missing")})
			if err != nil {
				return nil, err
			}
			_, err = v.AsString()
			return errors.Is(err, resp.ErrNull), nil
		}, true, nil},
		{"FUNCTION LIST", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.FunctionList(ctx, client.FunctionListOptions{LibraryName: "typed*", WithCode: true}))
		}, nil, func(got any) error {
			ls := got.([]client.FunctionLibrary)
			if len(ls) != 1 || ls[0].Name != "typedlib" || ls[0].Engine != "LUA" || len(ls[0].Functions) != 2 || ls[0].Code != lib {
				return fmt.Errorf("libraries %+v", ls)
			}
			for _, f := range ls[0].Functions {
				if f.Name == "ro" && (f.Description != "reads" || fmt.Sprint(f.Flags) != "[no-writes]") {
					return fmt.Errorf("function %+v", f)
				}
			}
			return nil
		}},
		{"FUNCTION STATS", func(ctx context.Context, c C, k func(string) string) (any, error) { return val(c.FunctionStats(ctx)) }, nil, func(got any) error {
			m := got.(map[string]resp.Value)
			if _, ok := m["engines"]; !ok {
				return errors.New("no engines")
			}
			return nil
		}},
		{"FUNCTION DUMP and RESTORE", func(ctx context.Context, c C, k func(string) string) (any, error) {
			payload, err := c.FunctionDump(ctx)
			if err != nil {
				return nil, err
			}
			return none(c.FunctionRestore(ctx, payload, client.RestoreReplace))
		}, nil, nil},
		{"FUNCTION HELP", func(ctx context.Context, c C, k func(string) string) (any, error) { return val(c.FunctionHelp(ctx)) }, nil, nonEmpty},
		expectErr("FUNCTION KILL idle", "NOTBUSY", func(ctx context.Context, c C, k func(string) string) error { return c.FunctionKill(ctx) }),
		{"FUNCTION DELETE", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return none(c.FunctionDelete(ctx, "typedlib"))
		}, nil, nil},
		{"FUNCTION FLUSH", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return none(c.FunctionFlush(ctx, ""))
		}, nil, nil},
	})
}

func TestTypedPubSubCommands(t *testing.T) {
	runGroup(t, nil, groupOptions{}, []step{
		{"PUBLISH", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.Publish(ctx, k("ch"), "m"))
		}, int64(0), nil},
		{"SPUBLISH", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.SPublish(ctx, k("sch"), "m"))
		}, int64(0), nil},
		{"PUBSUB with a subscriber", func(ctx context.Context, c C, k func(string) string) (any, error) {
			sub, err := c.Subscribe(ctx, k("ch"))
			if err != nil {
				return nil, err
			}
			defer sub.Close()
			psub, err := c.PSubscribe(ctx, k("p*"))
			if err != nil {
				return nil, err
			}
			defer psub.Close()
			ssub, err := c.SSubscribe(ctx, k("sch"))
			if err != nil {
				return nil, err
			}
			defer ssub.Close()
			chans, err := c.PubSubChannels(ctx, k("*"))
			if err != nil {
				return nil, err
			}
			num, err := c.PubSubNumSub(ctx, k("ch"), k("none"))
			if err != nil {
				return nil, err
			}
			pat, err := c.PubSubNumPat(ctx)
			if err != nil {
				return nil, err
			}
			schans, err := c.PubSubShardChannels(ctx, "")
			if err != nil {
				return nil, err
			}
			snum, err := c.PubSubShardNumSub(ctx, k("sch"))
			if err != nil {
				return nil, err
			}
			n, err := c.Publish(ctx, k("ch"), "hello")
			return fmt.Sprint(len(chans), num[k("ch")], num[k("none")], pat >= 1, len(schans) >= 1, snum[k("sch")], n), err
		}, "1 1 0 true true 1 1", nil},
		{"PUBSUB HELP", func(ctx context.Context, c C, k func(string) string) (any, error) { return val(c.PubSubHelp(ctx)) }, nil, nonEmpty},
	})
}

func TestTypedConnection(t *testing.T) {
	runGroup(t, nil, groupOptions{admin: true}, []step{
		{"PING", func(ctx context.Context, c C, k func(string) string) (any, error) { return none(c.Ping(ctx)) }, nil, nil},
		{"ECHO", func(ctx context.Context, c C, k func(string) string) (any, error) { return val(c.Echo(ctx, "hey")) }, "hey", nil},
		{"CLIENT ID", func(ctx context.Context, c C, k func(string) string) (any, error) { return val(c.ClientID(ctx)) }, nil, func(got any) error {
			if got.(int64) <= 0 {
				return errors.New("no id")
			}
			return nil
		}},
		{"CLIENT GETNAME", func(ctx context.Context, c C, k func(string) string) (any, error) { return opt(c.ClientGetName(ctx)) }, client.Optional[string]{}, nil},
		{"CLIENT INFO", func(ctx context.Context, c C, k func(string) string) (any, error) { return val(c.ClientInfo(ctx)) }, nil, func(got any) error {
			if !strings.HasPrefix(got.(string), "id=") {
				return errors.New("not a client line")
			}
			return nil
		}},
		{"CLIENT LIST", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.ClientList(ctx, client.ClientListOptions{Type: client.ClientNormal}))
		}, nil, nonEmpty},
		{"CLIENT GETREDIR", func(ctx context.Context, c C, k func(string) string) (any, error) { return val(c.ClientGetRedir(ctx)) }, int64(-1), nil},
		{"CLIENT TRACKINGINFO", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.ClientTrackingInfo(ctx))
		}, nil, func(got any) error {
			if _, ok := got.(map[string]resp.Value)["flags"]; !ok {
				return errors.New("no flags")
			}
			return nil
		}},
		{"CLIENT HELP", func(ctx context.Context, c C, k func(string) string) (any, error) { return val(c.ClientHelp(ctx)) }, nil, nonEmpty},
		{"CLIENT PAUSE and UNPAUSE", func(ctx context.Context, c C, k func(string) string) (any, error) {
			if err := c.ClientPause(ctx, time.Second, true); err != nil {
				return nil, err
			}
			return none(c.ClientUnpause(ctx))
		}, nil, nil},
		{"CLIENT UNBLOCK", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.ClientUnblock(ctx, 999999, false))
		}, false, nil},
		{"CLIENT KILL", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.ClientKill(ctx, client.ClientKillFilter{ID: 999999}))
		}, int64(0), nil},
		{"session commands on a dedicated connection", func(ctx context.Context, c C, k func(string) string) (any, error) {
			var out []string
			err := c.WithDedicated(ctx, func(d *client.DedicatedConn) error {
				if err := d.Select(ctx, 2); err != nil {
					return err
				}
				if err := d.Set(ctx, k("db2"), "x"); err != nil {
					return err
				}
				if err := d.ClientSetName(ctx, "typed"); err != nil {
					return err
				}
				name, _, err := d.ClientGetName(ctx)
				if err != nil {
					return err
				}
				out = append(out, name)
				if err := d.ClientTracking(ctx, true, client.ClientTrackingOptions{OptIn: true}); err != nil {
					return err
				}
				if err := d.ClientCaching(ctx, true); err != nil {
					return err
				}
				if err := d.ClientTracking(ctx, false, client.ClientTrackingOptions{}); err != nil {
					return err
				}
				if err := d.ClientNoEvict(ctx, true); err != nil {
					return err
				}
				if err := d.Auth(ctx, "nosuchuser", "wrong-secret"); err == nil {
					return errors.New("AUTH with a wrong password succeeded")
				} else if strings.Contains(err.Error(), "wrong-secret") || !strings.Contains(err.Error(), "WRONGPASS") {
					return fmt.Errorf("the password leaked into the error: %v", err)
				}
				status, err := d.Reset(ctx)
				out = append(out, status)
				return err
			})
			if err != nil {
				return nil, err
			}
			_, found, err := c.Get(ctx, k("db2"))
			out = append(out, fmt.Sprint(found))
			return strings.Join(out, " "), err
		}, "typed RESET false", nil},
	})
}
