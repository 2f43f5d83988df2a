package redistest

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Defaults of SentinelConfig.
const (
	// DefaultMasterName is the name the primary is monitored under.
	DefaultMasterName = "mymaster"
	// DefaultDownAfter is the default down-after-milliseconds.
	DefaultDownAfter = time.Second
	// DefaultFailoverTimeout is the default failover-timeout.
	DefaultFailoverTimeout = 2 * time.Second
)

const (
	// sentinelQuorum is the quorum of the monitored primary.
	sentinelQuorum = 2
	// sentinelCount is the number of redis-sentinel processes in a group.
	sentinelCount = 3
	// groupTimeout bounds the wait for a group to settle and for a failover.
	groupTimeout = 30 * time.Second
)

// SentinelConfig configures [StartSentinelGroup]. The zero value is a group
// without passwords monitoring "mymaster".
type SentinelConfig struct {
	// MasterName is the name the sentinels monitor the primary under;
	// DefaultMasterName when empty.
	MasterName string
	// Password, when set, is the requirepass and masterauth of the primary
	// and the replica, and the sentinels' auth-pass for them.
	Password string
	// SentinelPassword, when set, is the requirepass of the sentinels (and
	// their sentinel-pass to talk to each other).
	SentinelPassword string
	// DownAfter is down-after-milliseconds; DefaultDownAfter when zero.
	DownAfter time.Duration
	// FailoverTimeout is failover-timeout; DefaultFailoverTimeout when zero.
	FailoverTimeout time.Duration
	// Replicas is how many replicas the primary gets: one when zero, at most four.
	Replicas int
}

// SentinelGroup is a primary, its replicas (one by default) and three sentinels monitoring the
// primary with quorum 2, started by [StartSentinelGroup]. All its processes
// are [Server] values and can be killed, paused and restarted individually.
type SentinelGroup struct {
	name      string
	nodes     []*Server // [0] started as primary, the others as its replicas
	sentinels []*Server
}

// StartSentinelGroup starts a primary, a replica of it and three
// redis-sentinel processes on 127.0.0.1, and returns once every sentinel
// reports the primary, sees it up, and knows the replica and the two other
// sentinels. It typically takes about two seconds, the sentinels' hello
// period. Everything is killed when the test finishes.
func StartSentinelGroup(t testing.TB, cfg SentinelConfig) *SentinelGroup {
	t.Helper()
	Require(t)
	if cfg.MasterName == "" {
		cfg.MasterName = DefaultMasterName
	}
	if cfg.DownAfter <= 0 {
		cfg.DownAfter = DefaultDownAfter
	}
	if cfg.FailoverTimeout <= 0 {
		cfg.FailoverTimeout = DefaultFailoverTimeout
	}
	g := &SentinelGroup{name: cfg.MasterName}

	dataExtra := []string{"replica-announce-ip 127.0.0.1"}
	if cfg.Password != "" {
		// The primary becomes a replica after a failover: it needs it too.
		dataExtra = append(dataExtra, "masterauth "+quoteConfig(cfg.Password))
	}
	primary := startNode(t, Config{Password: cfg.Password, Extra: dataExtra}, roleServer)
	replicaExtra := append(dataExtra[:len(dataExtra):len(dataExtra)],
		fmt.Sprintf("replicaof 127.0.0.1 %d", primary.Port()))
	g.nodes = []*Server{primary}
	if cfg.Replicas < 1 || cfg.Replicas > 4 {
		if cfg.Replicas != 0 {
			t.Fatalf("redistest: SentinelConfig.Replicas is %d, want 0 to 4", cfg.Replicas)
		}
		cfg.Replicas = 1
	}
	for range cfg.Replicas {
		replica := startNode(t, Config{Password: cfg.Password, Extra: replicaExtra}, roleServer)
		g.nodes = append(g.nodes, replica)
		if status, ok := waitUntil(groupTimeout, 10*time.Millisecond, func() (bool, string) {
			return replicaInSync(replica)
		}); !ok {
			t.Fatalf("redistest: replica %s did not sync with %s: %s\n%s", replica.Addr(), primary.Addr(), status, replica.diagnostics())
		}
	}

	name := quoteConfig(cfg.MasterName)
	sentinelExtra := []string{
		"sentinel announce-ip 127.0.0.1",
		fmt.Sprintf("sentinel monitor %s 127.0.0.1 %d %d", name, primary.Port(), sentinelQuorum),
		fmt.Sprintf("sentinel down-after-milliseconds %s %d", name, cfg.DownAfter.Milliseconds()),
		fmt.Sprintf("sentinel failover-timeout %s %d", name, cfg.FailoverTimeout.Milliseconds()),
		fmt.Sprintf("sentinel parallel-syncs %s 1", name),
	}
	if cfg.Password != "" {
		sentinelExtra = append(sentinelExtra, fmt.Sprintf("sentinel auth-pass %s %s", name, quoteConfig(cfg.Password)))
	}
	if cfg.SentinelPassword != "" {
		sentinelExtra = append(sentinelExtra, "sentinel sentinel-pass "+quoteConfig(cfg.SentinelPassword))
	}
	for range sentinelCount {
		s := startNode(t, Config{Password: cfg.SentinelPassword, Extra: sentinelExtra}, roleSentinel)
		g.sentinels = append(g.sentinels, s)
	}

	if status, ok := waitUntil(groupTimeout, 50*time.Millisecond, g.settled); !ok {
		t.Fatalf("redistest: sentinel group did not settle within %v: %s\n%s", groupTimeout, status, g.diagnostics())
	}
	return g
}

// replicaInSync reports whether a replica's link to its primary is up.
func replicaInSync(replica *Server) (bool, string) {
	r, err := replica.command(pollTimeout, "INFO", "replication")
	if err != nil {
		return false, err.Error()
	}
	info := parseInfo(r.String())
	if info["role"] != "slave" || info["master_link_status"] != "up" {
		return false, fmt.Sprintf("role:%s master_link_status:%s", info["role"], info["master_link_status"])
	}
	return true, ""
}

// settled reports whether every sentinel agrees on the initial topology.
func (g *SentinelGroup) settled() (bool, string) {
	primary, replicas := g.nodes[0], g.nodes[1:]
	for _, s := range g.sentinels {
		addr, err := g.askPrimary(s)
		if err != nil {
			return false, fmt.Sprintf("sentinel %s: %v", s.Addr(), err)
		}
		if addr != primary.Addr() {
			return false, fmt.Sprintf("sentinel %s reports primary %s, want %s", s.Addr(), addr, primary.Addr())
		}
		r, err := s.command(pollTimeout, "SENTINEL", "MASTER", g.name)
		if err != nil || r.isError() {
			return false, fmt.Sprintf("sentinel %s: SENTINEL MASTER: %v %s", s.Addr(), err, r)
		}
		m := r.fields()
		if m["flags"] != "master" || m["num-other-sentinels"] != strconv.Itoa(sentinelCount-1) || m["num-slaves"] != strconv.Itoa(len(replicas)) {
			return false, fmt.Sprintf("sentinel %s: primary flags=%q num-other-sentinels=%s num-slaves=%s",
				s.Addr(), m["flags"], m["num-other-sentinels"], m["num-slaves"])
		}
		r, err = s.command(pollTimeout, "SENTINEL", "REPLICAS", g.name)
		if err != nil || r.isError() || len(r.elems) != len(replicas) {
			return false, fmt.Sprintf("sentinel %s: SENTINEL REPLICAS: %v %s", s.Addr(), err, r)
		}
		for _, e := range r.elems {
			rm := e.fields()
			got := net.JoinHostPort(rm["ip"], rm["port"])
			if g.node(got) == nil || got == primary.Addr() || rm["flags"] != "slave" || rm["master-link-status"] != "ok" {
				return false, fmt.Sprintf("sentinel %s: replica %s flags=%q master-link-status=%q",
					s.Addr(), got, rm["flags"], rm["master-link-status"])
			}
		}
		r, err = s.command(pollTimeout, "SENTINEL", "SENTINELS", g.name)
		if err != nil || r.isError() || len(r.elems) != sentinelCount-1 {
			return false, fmt.Sprintf("sentinel %s: SENTINEL SENTINELS: %v %s", s.Addr(), err, r)
		}
		for _, e := range r.elems {
			if f := e.fields()["flags"]; f != "sentinel" {
				return false, fmt.Sprintf("sentinel %s: a peer has flags %q", s.Addr(), f)
			}
		}
	}
	return true, ""
}

// askPrimary asks one sentinel for the primary's address.
func (g *SentinelGroup) askPrimary(s *Server) (string, error) {
	r, err := s.command(pollTimeout, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", g.name)
	if err != nil {
		return "", err
	}
	if r.kind != kindArray || len(r.elems) != 2 {
		return "", fmt.Errorf("SENTINEL GET-MASTER-ADDR-BY-NAME replied %q", r.String())
	}
	return net.JoinHostPort(r.elems[0].String(), r.elems[1].String()), nil
}

// MasterName returns the name the sentinels monitor the primary under.
func (g *SentinelGroup) MasterName() string { return g.name }

// Sentinels returns the three sentinel processes.
func (g *SentinelGroup) Sentinels() []*Server { return append([]*Server(nil), g.sentinels...) }

// SentinelAddrs returns the sentinels' addresses ("127.0.0.1:port").
func (g *SentinelGroup) SentinelAddrs() []string {
	addrs := make([]string, len(g.sentinels))
	for i, s := range g.sentinels {
		addrs[i] = s.Addr()
	}
	return addrs
}

// Nodes returns the data nodes: [0] was started as the primary and the
// others as its replicas. Their roles change after a failover.
func (g *SentinelGroup) Nodes() []*Server { return append([]*Server(nil), g.nodes...) }

// PrimaryAddr returns the primary's address as reported by the first
// running sentinel that answers SENTINEL GET-MASTER-ADDR-BY-NAME.
func (g *SentinelGroup) PrimaryAddr(t testing.TB) string {
	t.Helper()
	var errs []string
	for _, s := range g.sentinels {
		if !s.Running() {
			continue
		}
		addr, err := g.askPrimary(s)
		if err == nil {
			return addr
		}
		errs = append(errs, fmt.Sprintf("%s: %v", s.Addr(), err))
	}
	t.Fatalf("redistest: no sentinel reported the primary: %s", strings.Join(errs, "; "))
	return ""
}

// Primary returns the data node the sentinels currently report as primary.
func (g *SentinelGroup) Primary(t testing.TB) *Server {
	t.Helper()
	addr := g.PrimaryAddr(t)
	n := g.node(addr)
	if n == nil {
		t.Fatalf("redistest: sentinels report primary %s, which is not a node of the group", addr)
	}
	return n
}

func (g *SentinelGroup) node(addr string) *Server {
	for _, n := range g.nodes {
		if n.Addr() == addr {
			return n
		}
	}
	return nil
}

// KillPrimary kills the current primary (as reported by the sentinels) and
// returns it; it can be brought back with [Server.Restart].
func (g *SentinelGroup) KillPrimary(t testing.TB) *Server {
	t.Helper()
	p := g.Primary(t)
	p.Kill()
	return p
}

// WaitForFailover waits, for up to 30 s, until every running sentinel
// reports a primary other than oldPrimaryAddr, all the same, and that node
// answers ROLE as a master. It returns the new primary.
func (g *SentinelGroup) WaitForFailover(t testing.TB, oldPrimaryAddr string) *Server {
	t.Helper()
	var promoted *Server
	status, ok := waitUntil(groupTimeout, 50*time.Millisecond, func() (bool, string) {
		agreed := ""
		for _, s := range g.sentinels {
			if !s.Running() {
				continue
			}
			addr, err := g.askPrimary(s)
			if err != nil {
				return false, fmt.Sprintf("sentinel %s: %v", s.Addr(), err)
			}
			if addr == oldPrimaryAddr {
				return false, fmt.Sprintf("sentinel %s still reports %s", s.Addr(), addr)
			}
			if agreed != "" && addr != agreed {
				return false, fmt.Sprintf("sentinels disagree: %s and %s", agreed, addr)
			}
			agreed = addr
		}
		n := g.node(agreed)
		if n == nil {
			return false, fmt.Sprintf("sentinels report %q, not a node of the group", agreed)
		}
		r, err := n.command(pollTimeout, "ROLE")
		if err != nil {
			return false, fmt.Sprintf("ROLE on %s: %v", agreed, err)
		}
		if len(r.elems) == 0 || r.elems[0].String() != "master" {
			return false, fmt.Sprintf("%s has ROLE %q", agreed, r.String())
		}
		promoted = n
		return true, ""
	})
	if !ok {
		t.Fatalf("redistest: no failover away from %s within %v: %s\n%s", oldPrimaryAddr, groupTimeout, status, g.diagnostics())
	}
	return promoted
}

func (g *SentinelGroup) diagnostics() string {
	var b strings.Builder
	for _, s := range append(g.Nodes(), g.sentinels...) {
		fmt.Fprintf(&b, "=== %s %s (running %v)\n%s\n", s.binaryName(), s.Addr(), s.Running(), s.LogTail(12))
	}
	return b.String()
}

// parseInfo parses the output of INFO into field/value pairs.
func parseInfo(text string) map[string]string {
	m := map[string]string{}
	for _, l := range strings.Split(text, "\n") {
		l = strings.TrimRight(l, "\r")
		if k, v, ok := strings.Cut(l, ":"); ok && !strings.HasPrefix(l, "#") {
			m[k] = v
		}
	}
	return m
}
