package netio_test

import (
	"context"
	"fmt"
	"time"

	"github.com/respire-go/respire/engine"
	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/netio"
	"github.com/respire-go/respire/netio/resp"
)

// readySink hands the connection of a successful attempt to a channel.
type readySink struct {
	ready  chan engine.Conn
	failed chan error
}

func (s readySink) Dialed(fsm.ConnID)                                      {}
func (s readySink) Ready(_ fsm.ConnID, c engine.Conn)                      { s.ready <- c }
func (s readySink) Lost(fsm.ConnID, error)                                 {}
func (s readySink) Failed(_ fsm.ConnID, err error, class fsm.FailureClass) { s.failed <- err }

// A transport opens one connection per Open; the engine normally drives it. Here a command is
// sent by hand on the connection it produced.
func ExampleTransport() {
	tr := netio.NewTransport(netio.TransportConfig{
		Dialer:    netio.Dialer{ConnectTimeout: 5 * time.Second},
		Handshake: netio.HandshakeConfig{ClientName: "example", LibraryName: "respire"},
	})
	sink := readySink{ready: make(chan engine.Conn, 1), failed: make(chan error, 1)}
	tr.Open(context.Background(), engine.OpenRequest{
		Conn: 1, Endpoint: engine.Endpoint{Host: "localhost", Port: 6379}, Sink: sink,
	})
	var conn engine.Conn
	select {
	case conn = <-sink.ready:
	case err := <-sink.failed:
		fmt.Println("connect:", err)
		return
	}
	defer conn.Close()

	done := make(chan struct{})
	cmd := &engine.Command{Name: "PING", Frame: resp.AppendCommand(nil, "PING")}
	cmd.Done = func(*engine.Command) { close(done) }
	cmd.Enqueued() // queued → buffered: the command now belongs to the connection
	conn.Send(cmd)
	<-done
	fmt.Println(cmd.Reply, cmd.Err)
}
