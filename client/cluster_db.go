package client

import (
	"bufio"
	"context"
	"strconv"
	"strings"
	"sync"

	"github.com/respire-go/respire/engine"
	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/netio/resp"
)

// Non-zero databases in a Cluster (spec "Non-zero databases in Valkey Cluster"). Redis Cluster,
// and Valkey before 9, serve database 0 only. With UseCluster and a Database other than 0, every
// new command or dedicated connection first asks INFO SERVER; a server that is not Valkey 9 or
// later fails the connection's setup with a *ConfigError naming the server, its version and its
// mode, a permanent failure that is never retried. Otherwise the connection SELECTs the database,
// and a refusal (out of range, denied) fails its setup too: respire never falls back to 0.
// Database 0 and standalone clients skip the check. Pub/sub connections are not isolated by
// database and skip it as well.

// dbTransport wraps a Cluster client's transport with the check and the SELECT.
type dbTransport struct {
	inner engine.Transport
	db    int
}

// Open implements engine.Transport.
func (t dbTransport) Open(ctx context.Context, req engine.OpenRequest) {
	switch req.Machine {
	case fsm.MachinePubSub, fsm.MachineShardedPubSub:
		t.inner.Open(ctx, req)
		return
	}
	s := &dbSink{inner: req.Sink, db: t.db, ep: endpointOf(req.Endpoint)}
	req.Sink = s
	t.inner.Open(ctx, req)
}

// dbSink runs INFO SERVER and SELECT on a connection the inner transport reports ready, before
// the engine sees it.
type dbSink struct {
	inner engine.Sink
	db    int
	ep    Endpoint

	mu    sync.Mutex
	ready bool // the engine was told Ready: Lost goes through
	ended bool // the engine was told Failed: nothing more goes through
}

func (s *dbSink) Dialed(id fsm.ConnID) { s.inner.Dialed(id) }

func (s *dbSink) Failed(id fsm.ConnID, err error, class fsm.FailureClass) { s.fail(id, err, class) }

func (s *dbSink) Lost(id fsm.ConnID, err error) {
	s.mu.Lock()
	ready := s.ready
	s.mu.Unlock()
	if ready {
		s.inner.Lost(id, err)
		return
	}
	s.fail(id, err, fsm.Transient)
}

func (s *dbSink) fail(id fsm.ConnID, err error, class fsm.FailureClass) {
	s.mu.Lock()
	if s.ended || s.ready {
		s.mu.Unlock()
		return
	}
	s.ended = true
	s.mu.Unlock()
	s.inner.Failed(id, err, class)
}

func (s *dbSink) Ready(id fsm.ConnID, conn engine.Conn) {
	info := &engine.Command{Name: "INFO", Frame: []byte("*2\r\n$4\r\nINFO\r\n$6\r\nSERVER\r\n")}
	info.Done = func(cmd *engine.Command) {
		if cmd.Err != nil {
			closeLater(conn)
			s.fail(id, cmd.Err, fsm.Transient)
			return
		}
		if err := s.check(&cmd.Reply); err != nil {
			closeLater(conn)
			s.fail(id, err, fsm.Permanent)
			return
		}
		s.selectDB(id, conn)
	}
	info.Enqueued()
	conn.Send(info)
}

// check returns nil for a server that serves non-zero databases in Cluster mode (Valkey 9 or
// later), and a *ConfigError naming the server, version and mode otherwise.
func (s *dbSink) check(v *resp.Value) error {
	if v.IsError() {
		return &ConfigError{Option: "Database", Reason: "INFO SERVER was refused (" + v.ErrorCode() +
			"); it is needed to check that the Cluster serves database " + strconv.Itoa(s.db)}
	}
	fields := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(string(v.Str)))
	for sc.Scan() {
		if k, val, ok := strings.Cut(strings.TrimSpace(sc.Text()), ":"); ok {
			fields[k] = val
		}
	}
	name, version := fields["server_name"], fields["valkey_version"]
	if name == "" {
		name, version = "redis", fields["redis_version"]
	}
	mode := fields["server_mode"]
	if mode == "" {
		mode = fields["redis_mode"]
	}
	major, _ := strconv.Atoi(strings.SplitN(version, ".", 2)[0])
	if name == "valkey" && major >= 9 {
		return nil
	}
	return &ConfigError{Option: "Database", Reason: "database " + strconv.Itoa(s.db) + " needs Valkey 9 or later in Cluster mode; " +
		s.ep.String() + " is " + name + " " + version + " in " + mode + " mode, which serves database 0 only"}
}

// selectDB selects the database, then reports the connection ready.
func (s *dbSink) selectDB(id fsm.ConnID, conn engine.Conn) {
	sel := &engine.Command{Name: "SELECT", Frame: resp.AppendBulkString(resp.AppendBulkString(
		resp.AppendArrayHeader(nil, 2), "SELECT"), strconv.Itoa(s.db))}
	sel.Done = func(cmd *engine.Command) {
		switch {
		case cmd.Err != nil:
			closeLater(conn)
			s.fail(id, cmd.Err, fsm.Transient)
		case cmd.Reply.IsError():
			closeLater(conn)
			s.fail(id, serverError(&cmd.Reply, "SELECT", s.ep, ""), fsm.Permanent)
		default:
			s.mu.Lock()
			if s.ended {
				s.mu.Unlock()
				closeLater(conn)
				return
			}
			s.ready = true
			s.mu.Unlock()
			s.inner.Ready(id, conn)
		}
	}
	sel.Enqueued()
	conn.Send(sel)
}

// closeLater closes conn off the goroutine that completed its command: that is the
// connection's reader, which Close waits for.
func closeLater(conn engine.Conn) { go conn.Close() }
