package engine

import (
	"context"
	"testing"

	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/netio/resp"
)

// instantClusterConn answers CLUSTER SLOTS with a three-node topology and every other command
// with +OK at once.
type instantClusterConn struct{ topology resp.Value }

func (c instantClusterConn) Send(cmd *Command) {
	cmd.Writing()
	cmd.Written()
	if cmd.Name == "CLUSTER SLOTS" {
		cmd.Reply = c.topology
	} else {
		cmd.Reply = resp.SimpleString("OK")
	}
	cmd.Complete(nil)
}
func (instantClusterConn) Drain() {}
func (instantClusterConn) Close() {}

type instantClusterTransport struct{ topology resp.Value }

func (t instantClusterTransport) Open(_ context.Context, req OpenRequest) {
	req.Sink.Ready(req.Conn, instantClusterConn(t))
}

// BenchmarkSubmitCluster is BenchmarkSubmitStandalone for a Cluster engine of three nodes: the
// slot is computed from the frame and the snapshot maps it to the node's connection.
func BenchmarkSubmitCluster(b *testing.B) {
	tr := instantClusterTransport{topology: newFakeCluster(3).slotsReply()}
	cfg := Config{Slots: 1, Cluster: &ClusterConfig{Seeds: []Endpoint{{Host: "10.0.0.1", Port: 7000}}}}
	e := New(cfg, Deps{Runtime: newManualRuntime(), Transport: tr})
	done := make(chan struct{})
	e.Acquire(fsm.NeedAll, func(Grant) { close(done) })
	for i := 0; i < 10; i++ {
		e.RunPending()
	}
	<-done
	benchSubmitOn(b, e)
}
