package client_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/respire-go/respire/client"
	"github.com/respire-go/respire/netio/redistest"
	"github.com/respire-go/respire/netio/resp"
)

func TestTypedServer(t *testing.T) {
	runGroup(t, nil, groupOptions{admin: true, fresh: true}, []step{
		{"ACL SETUSER", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return none(c.ACLSetUser(ctx, k("user"), "on", ">secret-pw", "~app:*", "+@read"))
		}, nil, nil},
		{"ACL GETUSER", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.ACLGetUser(ctx, k("user")))
		}, nil, func(got any) error {
			flags, err := got.(map[string]resp.Value)["flags"].AsStrings()
			if err != nil || fmt.Sprint(flags) != "[on]" {
				return fmt.Errorf("flags %v %v", flags, err)
			}
			return nil
		}},
		{"ACL USERS", func(ctx context.Context, c C, k func(string) string) (any, error) { return val(c.ACLUsers(ctx)) }, nil, func(got any) error {
			if len(got.([]string)) < 2 {
				return errors.New("want default and the new user")
			}
			return nil
		}},
		{"ACL LIST", func(ctx context.Context, c C, k func(string) string) (any, error) { return val(c.ACLList(ctx)) }, nil, nonEmpty},
		{"ACL CAT", func(ctx context.Context, c C, k func(string) string) (any, error) { return val(c.ACLCat(ctx, "")) }, nil, nonEmpty},
		{"ACL CAT category", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.ACLCat(ctx, "hyperloglog"))
		}, nil, nonEmpty},
		{"ACL DRYRUN", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.ACLDryRun(ctx, k("user"), "get", "app:1"))
		}, "OK", nil},
		{"ACL DRYRUN denied", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.ACLDryRun(ctx, k("user"), "set", "app:1", "v"))
		}, nil, nonEmpty},
		{"ACL WHOAMI", func(ctx context.Context, c C, k func(string) string) (any, error) { return val(c.ACLWhoAmI(ctx)) }, "default", nil},
		{"ACL GENPASS", func(ctx context.Context, c C, k func(string) string) (any, error) {
			p, err := c.ACLGenPass(ctx, 64)
			return len(p), err
		}, 16, nil},
		{"ACL LOG", func(ctx context.Context, c C, k func(string) string) (any, error) {
			_ = c.WithDedicated(ctx, func(d *client.DedicatedConn) error { return d.Auth(ctx, k("user"), "bad") })
			return val(c.ACLLog(ctx, 1))
		}, nil, func(got any) error {
			rs := got.([]map[string]string)
			if len(rs) != 1 || rs[0]["reason"] != "auth" {
				return fmt.Errorf("log %v", rs)
			}
			return nil
		}},
		{"ACL LOG RESET", func(ctx context.Context, c C, k func(string) string) (any, error) { return none(c.ACLLogReset(ctx)) }, nil, nil},
		{"ACL HELP", func(ctx context.Context, c C, k func(string) string) (any, error) { return val(c.ACLHelp(ctx)) }, nil, nonEmpty},
		expectErr("ACL SAVE without a file", "ERR", func(ctx context.Context, c C, k func(string) string) error { return c.ACLSave(ctx) }),
		expectErr("ACL LOAD without a file", "ERR", func(ctx context.Context, c C, k func(string) string) error { return c.ACLLoad(ctx) }),
		{"ACL DELUSER", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.ACLDelUser(ctx, k("user"), k("none")))
		}, int64(1), nil},
		{"COMMAND COUNT", func(ctx context.Context, c C, k func(string) string) (any, error) { return val(c.CommandCount(ctx)) }, nil, func(got any) error {
			if got.(int64) < 200 {
				return errors.New("too few commands")
			}
			return nil
		}},
		{"COMMAND DOCS", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.CommandDocs(ctx, "get"))
		}, nil, lenIs(1)},
		{"COMMAND INFO", func(ctx context.Context, c C, k func(string) string) (any, error) {
			v, err := c.CommandInfo(ctx, "get")
			if err != nil {
				return nil, err
			}
			return v.Len(), nil
		}, 1, nil},
		{"COMMAND GETKEYS", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.CommandGetKeys(ctx, "MSET", "a", "1", "b", "2"))
		}, []string{"a", "b"}, nil},
		{"COMMAND GETKEYSANDFLAGS", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.CommandGetKeysAndFlags(ctx, "LMOVE", "a", "b", "LEFT", "RIGHT"))
		}, []client.KeyFlags{{Key: "a", Flags: []string{"RW", "access", "delete"}}, {Key: "b", Flags: []string{"RW", "insert"}}}, nil},
		{"COMMAND LIST", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.CommandList(ctx, client.CommandListFilter{Pattern: "xa*"}))
		}, nil, func(got any) error {
			if s := fmt.Sprint(got); !strings.Contains(s, "xadd") || !strings.Contains(s, "xack") {
				return errors.New("want xadd and xack")
			}
			return nil
		}},
		{"COMMAND HELP", func(ctx context.Context, c C, k func(string) string) (any, error) { return val(c.CommandHelp(ctx)) }, nil, nonEmpty},
		{"CONFIG GET", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.ConfigGet(ctx, "maxmemory-policy", "appendonly"))
		},
			map[string]string{"maxmemory-policy": "noeviction", "appendonly": "no"}, nil},
		{"CONFIG SET", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return none(c.ConfigSet(ctx, "slowlog-log-slower-than", "0"))
		}, nil, nil},
		{"CONFIG RESETSTAT", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return none(c.ConfigResetStat(ctx))
		}, nil, nil},
		{"CONFIG REWRITE", func(ctx context.Context, c C, k func(string) string) (any, error) { return none(c.ConfigRewrite(ctx)) }, nil, nil},
		{"CONFIG HELP", func(ctx context.Context, c C, k func(string) string) (any, error) { return val(c.ConfigHelp(ctx)) }, nil, nonEmpty},
		{"SLOWLOG GET", func(ctx context.Context, c C, k func(string) string) (any, error) {
			if err := c.Set(ctx, k("slow"), "v"); err != nil {
				return nil, err
			}
			return val(c.SlowLogGet(ctx, 1))
		}, nil, func(got any) error {
			es := got.([]client.SlowLogEntry)
			if len(es) != 1 || len(es[0].Args) == 0 || es[0].Time.IsZero() || es[0].Client == "" {
				return fmt.Errorf("slow log %+v", es)
			}
			return nil
		}},
		{"SLOWLOG LEN", func(ctx context.Context, c C, k func(string) string) (any, error) { return val(c.SlowLogLen(ctx)) }, nil, func(got any) error {
			if got.(int64) < 1 {
				return errors.New("empty slow log")
			}
			return nil
		}},
		{"SLOWLOG RESET", func(ctx context.Context, c C, k func(string) string) (any, error) { return none(c.SlowLogReset(ctx)) }, nil, nil},
		{"SLOWLOG HELP", func(ctx context.Context, c C, k func(string) string) (any, error) { return val(c.SlowLogHelp(ctx)) }, nil, nonEmpty},
		{"DBSIZE", func(ctx context.Context, c C, k func(string) string) (any, error) { return val(c.DBSize(ctx)) }, nil, func(got any) error {
			if got.(int64) < 1 {
				return errors.New("empty database")
			}
			return nil
		}},
		{"INFO", func(ctx context.Context, c C, k func(string) string) (any, error) { return val(c.Info(ctx, "server")) }, nil, func(got any) error {
			if !strings.Contains(got.(string), "redis_version:") {
				return errors.New("no version")
			}
			return nil
		}},
		{"TIME", func(ctx context.Context, c C, k func(string) string) (any, error) { return val(c.Time(ctx)) }, nil, func(got any) error {
			if d := time.Since(got.(time.Time)); d < -time.Minute || d > time.Minute {
				return fmt.Errorf("server clock off by %v", d)
			}
			return nil
		}},
		{"LASTSAVE", func(ctx context.Context, c C, k func(string) string) (any, error) { return val(c.LastSave(ctx)) }, nil, func(got any) error {
			if got.(time.Time).Before(time.Unix(1600000000, 0)) {
				return errors.New("implausible last save")
			}
			return nil
		}},
		{"SAVE", func(ctx context.Context, c C, k func(string) string) (any, error) { return none(c.Save(ctx)) }, nil, nil},
		{"BGSAVE SCHEDULE", func(ctx context.Context, c C, k func(string) string) (any, error) { return val(c.BgSave(ctx, true)) }, nil, nonEmpty},
		{"BGREWRITEAOF", func(ctx context.Context, c C, k func(string) string) (any, error) { return val(c.BgRewriteAOF(ctx)) }, nil, nonEmpty},
		{"ROLE", func(ctx context.Context, c C, k func(string) string) (any, error) { return val(c.Role(ctx)) }, nil, func(got any) error {
			if r := got.(client.Role); r.Kind != "master" || len(r.Replicas) != 0 {
				return fmt.Errorf("role %+v", r)
			}
			return nil
		}},
		{"REPLICAOF NO ONE", func(ctx context.Context, c C, k func(string) string) (any, error) { return none(c.ReplicaOfNoOne(ctx)) }, nil, nil},
		expectErr("FAILOVER without replicas", "ERR", func(ctx context.Context, c C, k func(string) string) error {
			return c.Failover(ctx, client.FailoverOptions{Timeout: time.Second})
		}),
		expectErr("SHUTDOWN ABORT", "ERR", func(ctx context.Context, c C, k func(string) string) error {
			return c.Shutdown(ctx, client.ShutdownOptions{Abort: true})
		}),
		{"LATENCY", func(ctx context.Context, c C, k func(string) string) (any, error) {
			if err := c.ConfigSet(ctx, "latency-monitor-threshold", "1"); err != nil {
				return nil, err
			}
			if _, err := c.Eval(ctx, "local t = redis.call('TIME') while true do local n = redis.call('TIME') if (n[1]-t[1])*1000000 + (n[2]-t[2]) > 20000 then break end end return 1", nil); err != nil {
				return nil, err
			}
			latest, err := c.LatencyLatest(ctx)
			if err != nil {
				return nil, err
			}
			history, err := c.LatencyHistory(ctx, "command")
			if err != nil {
				return nil, err
			}
			if _, err := c.LatencyGraph(ctx, "command"); err != nil {
				return nil, err
			}
			doc, err := c.LatencyDoctor(ctx)
			if err != nil {
				return nil, err
			}
			hist, err := c.LatencyHistogram(ctx, "set")
			if err != nil {
				return nil, err
			}
			help, err := c.LatencyHelp(ctx)
			if err != nil {
				return nil, err
			}
			n, err := c.LatencyReset(ctx)
			var spike time.Duration
			for _, e := range latest {
				if e.Event == "command" {
					spike = e.Max
				}
			}
			ok := spike >= 20*time.Millisecond && len(history) >= 1 && doc != "" && len(hist) == 1 && len(help) > 0 && n >= 1
			if !ok {
				return nil, fmt.Errorf("latest %+v history %+v doctor %d bytes histogram %v help %d reset %d", latest, history, len(doc), hist, len(help), n)
			}
			return ok, err
		}, true, nil},
		{"MEMORY", func(ctx context.Context, c C, k func(string) string) (any, error) {
			usage, ok, err := c.MemoryUsage(ctx, k("slow"), 0)
			if err != nil || !ok || usage <= 0 {
				return nil, fmt.Errorf("usage %v %v %v", usage, ok, err)
			}
			if _, ok, err := c.MemoryUsage(ctx, k("none"), 5); err != nil || ok {
				return nil, fmt.Errorf("usage of a missing key: %v %v", ok, err)
			}
			stats, err := c.MemoryStats(ctx)
			if err != nil {
				return nil, err
			}
			if _, err := c.MemoryDoctor(ctx); err != nil {
				return nil, err
			}
			if _, err := c.MemoryMallocStats(ctx); err != nil {
				return nil, err
			}
			if _, err := c.MemoryHelp(ctx); err != nil {
				return nil, err
			}
			return stats["peak.allocated"].Kind == resp.KindInteger, c.MemoryPurge(ctx)
		}, true, nil},
		{"MODULE LIST", func(ctx context.Context, c C, k func(string) string) (any, error) { return val(c.ModuleList(ctx)) }, []map[string]string{}, nil},
		{"MODULE HELP", func(ctx context.Context, c C, k func(string) string) (any, error) { return val(c.ModuleHelp(ctx)) }, nil, nonEmpty},
		expectErr("MODULE LOAD", "ERR", func(ctx context.Context, c C, k func(string) string) error {
			return c.ModuleLoad(ctx, "/nonexistent.so")
		}),
		expectErr("MODULE LOADEX", "ERR", func(ctx context.Context, c C, k func(string) string) error {
			return c.ModuleLoadEx(ctx, "/nonexistent.so", client.ModuleLoadOptions{Config: map[string]string{"a": "1"}, Args: []string{"x"}})
		}),
		expectErr("MODULE UNLOAD", "ERR", func(ctx context.Context, c C, k func(string) string) error { return c.ModuleUnload(ctx, "nosuch") }),
		{"LOLWUT", func(ctx context.Context, c C, k func(string) string) (any, error) { return val(c.Lolwut(ctx, 5)) }, nil, nonEmpty},
		{"SWAPDB", func(ctx context.Context, c C, k func(string) string) (any, error) { return none(c.SwapDB(ctx, 5, 6)) }, nil, nil},
		{"FLUSHDB", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return none(c.FlushDB(ctx, client.FlushAsync))
		}, nil, nil},
		{"FLUSHALL", func(ctx context.Context, c C, k func(string) string) (any, error) { return none(c.FlushAll(ctx, "")) }, nil, nil},
	})
}

// TestTypedAdminGuard: the typed administrative commands need AllowAdmin, like their raw
// forms, and are refused before anything is sent; the batch forms too.
func TestTypedAdminGuard(t *testing.T) {
	redistest.Require(t)
	srv := redistest.Start(t, redistest.Config{})
	ctx := ctxT(t)
	c, err := client.Connect(ctx, client.Options{Endpoints: []client.Endpoint{endpointOf(srv)}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.FlushAll(ctx, ""); !errors.Is(err, client.ErrAdminDisabled) {
		t.Fatalf("FLUSHALL without AllowAdmin: %v", err)
	}
	if _, err := c.ConfigGet(ctx, "requirepass"); !errors.Is(err, client.ErrAdminDisabled) {
		t.Fatalf("CONFIG GET without AllowAdmin: %v", err)
	}
	if err := c.Set(ctx, "guard:k", "v"); err != nil {
		t.Fatal(err)
	}
	var b client.Batch
	b.Incr("guard:n")
	b.FlushDB("")
	if err := c.Pipeline(ctx, &b); !errors.Is(err, client.ErrAdminDisabled) {
		t.Fatalf("a batch with FLUSHDB: %v", err)
	}
	// Nothing of the batch was sent, and the data is still there.
	if n, _, err := c.Get(ctx, "guard:n"); err != nil || n != "" {
		t.Fatalf("a refused batch ran: %q %v", n, err)
	}
	if _, ok, err := c.Get(ctx, "guard:k"); err != nil || !ok {
		t.Fatalf("FLUSHDB ran: %v %v", ok, err)
	}
	// Reading commands that Redis files under @admin but respire exempts stay available.
	if _, err := c.Info(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Role(ctx); err != nil {
		t.Fatal(err)
	}
}
