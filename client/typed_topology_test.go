package client_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"

	"github.com/respire-go/respire/client"
	"github.com/respire-go/respire/netio/redistest"
)

func TestTypedCluster(t *testing.T) {
	redistest.Require(t)
	cluster := redistest.StartCluster(t, redistest.ClusterConfig{})
	node := cluster.Primaries(t)[0]
	var myID string
	runGroup(t, node, groupOptions{admin: true}, []step{
		{"CLUSTER INFO", func(ctx context.Context, c C, k func(string) string) (any, error) {
			info, err := c.ClusterInfo(ctx)
			return info["cluster_state"] + " " + info["cluster_slots_assigned"], err
		}, "ok 16384", nil},
		{"CLUSTER MYID", func(ctx context.Context, c C, k func(string) string) (any, error) {
			id, err := c.ClusterMyID(ctx)
			myID = id
			return len(id), err
		}, 40, nil},
		{"CLUSTER NODES", func(ctx context.Context, c C, k func(string) string) (any, error) { return val(c.ClusterNodes(ctx)) }, nil, func(got any) error {
			if !strings.Contains(got.(string), "myself") || strings.Count(got.(string), "\n") < 6 {
				return errors.New("want six nodes")
			}
			return nil
		}},
		{"CLUSTER SLOTS", func(ctx context.Context, c C, k func(string) string) (any, error) { return val(c.ClusterSlots(ctx)) }, nil, func(got any) error {
			rs := got.([]client.ClusterSlotRange)
			covered := int64(0)
			for _, r := range rs {
				covered += r.End - r.Start + 1
				if len(r.Nodes) < 1 || r.Nodes[0].Port == 0 || len(r.Nodes[0].ID) != 40 {
					return fmt.Errorf("range %+v", r)
				}
			}
			if covered != 16384 {
				return fmt.Errorf("%d slots covered", covered)
			}
			return nil
		}},
		{"CLUSTER SHARDS", func(ctx context.Context, c C, k func(string) string) (any, error) {
			v, err := c.ClusterShards(ctx)
			return v.Len(), err
		}, nil, func(got any) error {
			// Three shards; a replica that has not yet learned its shard may briefly count as
			// one of its own.
			if n := got.(int); n < 3 || n > 6 {
				return fmt.Errorf("%d shards", n)
			}
			return nil
		}},
		{"CLUSTER KEYSLOT", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.ClusterKeySlot(ctx, "foo"))
		}, int64(12182), nil},
		{"CLUSTER COUNTKEYSINSLOT", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.ClusterCountKeysInSlot(ctx, 0))
		}, int64(0), nil},
		{"CLUSTER GETKEYSINSLOT", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.ClusterGetKeysInSlot(ctx, 0, 10))
		}, []string{}, nil},
		{"CLUSTER REPLICAS", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.ClusterReplicas(ctx, myID))
		}, nil, lenIs(1)},
		{"CLUSTER SLAVES", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.ClusterSlaves(ctx, myID))
		}, nil, lenIs(1)},
		{"CLUSTER LINKS", func(ctx context.Context, c C, k func(string) string) (any, error) { return val(c.ClusterLinks(ctx)) }, nil, func(got any) error {
			ls := got.([]map[string]string)
			if len(ls) < 5 || ls[0]["direction"] == "" || ls[0]["node"] == "" {
				return fmt.Errorf("links %v", ls)
			}
			return nil
		}},
		{"CLUSTER COUNT-FAILURE-REPORTS", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.ClusterCountFailureReports(ctx, myID))
		}, int64(0), nil},
		{"CLUSTER HELP", func(ctx context.Context, c C, k func(string) string) (any, error) { return val(c.ClusterHelp(ctx)) }, nil, nonEmpty},
		{"CLUSTER SAVECONFIG", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return none(c.ClusterSaveConfig(ctx))
		}, nil, nil},
		{"CLUSTER BUMPEPOCH", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.ClusterBumpEpoch(ctx))
		}, nil, nonEmpty},
		{"CLUSTER SETSLOT STABLE", func(ctx context.Context, c C, k func(string) string) (any, error) {
			slots, err := c.ClusterSlots(ctx)
			if err != nil {
				return nil, err
			}
			for _, r := range slots {
				if r.Nodes[0].ID == myID {
					return none(c.ClusterSetSlot(ctx, r.Start, client.SlotStable, ""))
				}
			}
			return nil, errors.New("the node serves no slot")
		}, nil, nil},
		expectErr("CLUSTER ADDSLOTS busy", "ERR", func(ctx context.Context, c C, k func(string) string) error { return c.ClusterAddSlots(ctx, 0, 1) }),
		expectErr("CLUSTER ADDSLOTSRANGE busy", "ERR", func(ctx context.Context, c C, k func(string) string) error {
			return c.ClusterAddSlotsRange(ctx, client.SlotRange{Start: 0, End: 10})
		}),
		expectErr("CLUSTER FAILOVER on a primary", "ERR", func(ctx context.Context, c C, k func(string) string) error { return c.ClusterFailover(ctx, "") }),
		expectErr("CLUSTER FORGET myself", "ERR", func(ctx context.Context, c C, k func(string) string) error { return c.ClusterForget(ctx, myID) }),
		expectErr("CLUSTER REPLICATE myself", "ERR", func(ctx context.Context, c C, k func(string) string) error { return c.ClusterReplicate(ctx, myID) }),
		expectErr("CLUSTER SET-CONFIG-EPOCH", "ERR", func(ctx context.Context, c C, k func(string) string) error { return c.ClusterSetConfigEpoch(ctx, 99) }),
		expectErr("CLUSTER DELSLOTS unassigned", "ERR", func(ctx context.Context, c C, k func(string) string) error {
			// Slot numbers beyond the range are refused before anything changes.
			return c.ClusterDelSlots(ctx, 99999)
		}),
		expectErr("CLUSTER DELSLOTSRANGE invalid", "ERR", func(ctx context.Context, c C, k func(string) string) error {
			return c.ClusterDelSlotsRange(ctx, client.SlotRange{Start: 99998, End: 99999})
		}),
		expectErr("CLUSTER MEET bad port", "ERR", func(ctx context.Context, c C, k func(string) string) error {
			return c.ClusterMeet(ctx, "127.0.0.1", 99999)
		}),
		{"a key of the node", func(ctx context.Context, c C, k func(string) string) (any, error) {
			// A node that holds keys refuses CLUSTER RESET and FLUSHSLOTS, which are then safe to
			// try: find a key of one of its slots.
			slots, err := c.ClusterSlots(ctx)
			if err != nil {
				return nil, err
			}
			for i := 0; i < 1000; i++ {
				key := fmt.Sprintf("%s%d", k("own"), i)
				slot, err := c.ClusterKeySlot(ctx, key)
				if err != nil {
					return nil, err
				}
				for _, r := range slots {
					if r.Nodes[0].ID == myID && r.Start <= slot && slot <= r.End {
						return none(c.Set(ctx, key, "v"))
					}
				}
			}
			return nil, errors.New("no key of the node found")
		}, nil, nil},
		expectErr("CLUSTER RESET with keys", "ERR", func(ctx context.Context, c C, k func(string) string) error { return c.ClusterReset(ctx, false) }),
		expectErr("CLUSTER FLUSHSLOTS with keys", "ERR", func(ctx context.Context, c C, k func(string) string) error { return c.ClusterFlushSlots(ctx) }),
		{"ASKING, READONLY, READWRITE", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return none(c.WithDedicated(ctx, func(d *client.DedicatedConn) error {
				if err := d.Asking(ctx); err != nil {
					return err
				}
				if err := d.ReadOnly(ctx); err != nil {
					return err
				}
				return d.ReadWrite(ctx)
			}))
		}, nil, nil},
	})
}

func TestTypedSentinel(t *testing.T) {
	redistest.Require(t)
	group := redistest.StartSentinelGroup(t, redistest.SentinelConfig{})
	host, port, err := net.SplitHostPort(group.SentinelAddrs()[0])
	if err != nil {
		t.Fatal(err)
	}
	p, _ := strconv.Atoi(port)
	primary := group.PrimaryAddr(t)
	phost, pport, _ := net.SplitHostPort(primary)
	pp, _ := strconv.Atoi(pport)
	name := group.MasterName()
	sentinel := func(ctx context.Context, proto client.Protocol) (*client.Client, error) {
		return client.Connect(ctx, client.Options{Endpoints: []client.Endpoint{{Host: host, Port: p}}, Protocol: proto, AllowAdmin: true})
	}
	steps := []struct {
		name  string
		do    func(ctx context.Context, c *client.Client) (any, error)
		check func(got any) error
	}{
		{"SENTINEL MASTERS", func(ctx context.Context, c *client.Client) (any, error) { return val(c.SentinelMasters(ctx)) }, func(got any) error {
			if ms := got.([]map[string]string); len(ms) != 1 || ms[0]["name"] != name || ms[0]["port"] != pport {
				return fmt.Errorf("masters %v", ms)
			}
			return nil
		}},
		{"SENTINEL MASTER", func(ctx context.Context, c *client.Client) (any, error) { return val(c.SentinelMaster(ctx, name)) }, func(got any) error {
			if m := got.(map[string]string); m["ip"] != phost || m["flags"] != "master" {
				return fmt.Errorf("master %v", m)
			}
			return nil
		}},
		{"SENTINEL GET-MASTER-ADDR-BY-NAME", func(ctx context.Context, c *client.Client) (any, error) {
			return opt(c.SentinelGetMasterAddrByName(ctx, name))
		}, func(got any) error {
			if a := got.(client.Optional[client.Addr]); !a.Valid || a.Value.Host != phost || a.Value.Port != pp {
				return fmt.Errorf("address %v", a)
			}
			return nil
		}},
		{"SENTINEL GET-MASTER-ADDR-BY-NAME unknown", func(ctx context.Context, c *client.Client) (any, error) {
			return opt(c.SentinelGetMasterAddrByName(ctx, "nosuch"))
		}, func(got any) error {
			if got.(client.Optional[client.Addr]).Valid {
				return errors.New("an address for an unknown primary")
			}
			return nil
		}},
		{"SENTINEL REPLICAS", func(ctx context.Context, c *client.Client) (any, error) { return val(c.SentinelReplicas(ctx, name)) }, lenIs(1)},
		{"SENTINEL SLAVES", func(ctx context.Context, c *client.Client) (any, error) { return val(c.SentinelSlaves(ctx, name)) }, lenIs(1)},
		{"SENTINEL SENTINELS", func(ctx context.Context, c *client.Client) (any, error) { return val(c.SentinelSentinels(ctx, name)) }, lenIs(2)},
		{"SENTINEL CKQUORUM", func(ctx context.Context, c *client.Client) (any, error) { return val(c.SentinelCKQuorum(ctx, name)) }, func(got any) error {
			if !strings.HasPrefix(got.(string), "OK") {
				return errors.New("no quorum")
			}
			return nil
		}},
		{"SENTINEL MYID", func(ctx context.Context, c *client.Client) (any, error) {
			id, err := c.SentinelMyID(ctx)
			return len(id), err
		}, func(got any) error {
			if got.(int) != 40 {
				return errors.New("not an id")
			}
			return nil
		}},
		{"SENTINEL PENDING-SCRIPTS", func(ctx context.Context, c *client.Client) (any, error) { return val(c.SentinelPendingScripts(ctx)) }, lenIs(0)},
		{"SENTINEL INFO-CACHE", func(ctx context.Context, c *client.Client) (any, error) {
			v, err := c.SentinelInfoCache(ctx, name)
			return v.Len(), err
		}, func(got any) error {
			if got.(int) != 2 {
				return errors.New("want the name and its entries")
			}
			return nil
		}},
		{"SENTINEL IS-MASTER-DOWN-BY-ADDR", func(ctx context.Context, c *client.Client) (any, error) {
			return val(c.SentinelIsMasterDownByAddr(ctx, phost, int64(pp), 0, "*"))
		}, func(got any) error {
			if r := got.(client.SentinelDownReply); r.Down || r.Leader != "*" {
				return fmt.Errorf("down reply %+v", r)
			}
			return nil
		}},
		{"SENTINEL CONFIG GET", func(ctx context.Context, c *client.Client) (any, error) {
			return val(c.SentinelConfigGet(ctx, "resolve-hostnames"))
		}, func(got any) error {
			if v := got.(map[string]string)["resolve-hostnames"]; v != "no" && v != "yes" {
				return fmt.Errorf("config %v", got)
			}
			return nil
		}},
		{"SENTINEL CONFIG SET", func(ctx context.Context, c *client.Client) (any, error) {
			return none(c.SentinelConfigSet(ctx, "resolve-hostnames", "no"))
		}, nil},
		{"SENTINEL DEBUG", func(ctx context.Context, c *client.Client) (any, error) { return val(c.SentinelDebug(ctx)) }, nonEmpty},
		{"SENTINEL HELP", func(ctx context.Context, c *client.Client) (any, error) { return val(c.SentinelHelp(ctx)) }, nonEmpty},
		{"SENTINEL SET", func(ctx context.Context, c *client.Client) (any, error) {
			return none(c.SentinelSet(ctx, name, "down-after-milliseconds", "1000"))
		}, nil},
		{"SENTINEL MONITOR, RESET and REMOVE", func(ctx context.Context, c *client.Client) (any, error) {
			if err := c.SentinelMonitor(ctx, "typedextra", "127.0.0.1", 1, 1); err != nil {
				return nil, err
			}
			n, err := c.SentinelReset(ctx, "typedextra")
			if err != nil {
				return nil, err
			}
			return n, c.SentinelRemove(ctx, "typedextra")
		}, func(got any) error {
			if got.(int64) != 1 {
				return errors.New("reset counted no primary")
			}
			return nil
		}},
		{"SENTINEL FLUSHCONFIG", func(ctx context.Context, c *client.Client) (any, error) { return none(c.SentinelFlushConfig(ctx)) }, nil},
		{"SENTINEL FAILOVER unknown", func(ctx context.Context, c *client.Client) (any, error) {
			err := c.SentinelFailover(ctx, "nosuch")
			var se *client.ServerError
			return errors.As(err, &se), nil
		}, func(got any) error {
			if !got.(bool) {
				return errors.New("want a server error")
			}
			return nil
		}},
		{"SENTINEL SIMULATE-FAILURE unknown mode", func(ctx context.Context, c *client.Client) (any, error) {
			err := c.SentinelSimulateFailure(ctx, "nosuch")
			var se *client.ServerError
			return errors.As(err, &se), nil
		}, func(got any) error {
			if !got.(bool) {
				return errors.New("want a server error")
			}
			return nil
		}},
		{"ROLE", func(ctx context.Context, c *client.Client) (any, error) { return val(c.Role(ctx)) }, func(got any) error {
			if r := got.(client.Role); r.Kind != "sentinel" || fmt.Sprint(r.Primaries) != "["+name+"]" {
				return fmt.Errorf("role %+v", r)
			}
			return nil
		}},
	}
	for _, proto := range []client.Protocol{client.ProtocolRESP2, client.ProtocolRESP3} {
		t.Run(proto.String(), func(t *testing.T) {
			ctx := ctxT(t)
			c, err := sentinel(ctx, proto)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			for _, s := range steps {
				got, err := s.do(ctx, c)
				if err != nil {
					t.Fatalf("%s: %v", s.name, err)
				}
				if s.check != nil {
					if err := s.check(got); err != nil {
						t.Errorf("%s: %v", s.name, err)
					}
				}
			}
			if err := c.Ping(ctx); err != nil {
				t.Fatal(err)
			}
		})
	}
	// Without AllowAdmin, the sentinel's reading commands work and its changing ones do not.
	ctx := ctxT(t)
	c, err := client.Connect(ctx, client.Options{Endpoints: []client.Endpoint{{Host: host, Port: p}}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, ok, err := c.SentinelGetMasterAddrByName(ctx, name); err != nil || !ok {
		t.Fatalf("discovery without AllowAdmin: %v %v", ok, err)
	}
	if err := c.SentinelFailover(ctx, name); !errors.Is(err, client.ErrAdminDisabled) {
		t.Fatalf("SENTINEL FAILOVER without AllowAdmin: %v", err)
	}
}
