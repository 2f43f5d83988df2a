package client_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/respire-go/respire/client"
	"github.com/respire-go/respire/netio/redistest"
)

// roundTripPassword needs percent-encoding in a URI and none in a comma-delimited string.
const (
	roundTripPassword = "rt:p@ss/w%rd"
	roundTripEncoded  = "rt%3Ap%40ss%2Fw%25rd"
)

// connectParsed parses s, lets adjust complete the options (TLS roots), connects and returns
// the connection's CLIENT INFO line.
func connectParsed(t *testing.T, s string, adjust func(*client.Options)) string {
	t.Helper()
	o, err := client.Parse(s)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if adjust != nil {
		adjust(&o)
	}
	ctx := ctxT(t)
	c, err := client.Connect(ctx, o)
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	defer c.Close()
	v, err := c.Do(ctx, "CLIENT", "INFO")
	if err != nil {
		t.Fatalf("CLIENT INFO: %v", err)
	}
	return string(v.Str)
}

// TestParsedOptionsConnect shows that what parses is what connects: a URI and a connection
// string naming a real server's port, password, database 3 and a client name connect, and the
// server reports that database and name.
func TestParsedOptionsConnect(t *testing.T) {
	redistest.Require(t)
	checkNoLeaks(t)
	srv := redistest.Start(t, redistest.Config{Password: roundTripPassword, UnixSocket: true})
	tlsSrv := redistest.Start(t, redistest.Config{TLS: true, Password: roundTripPassword})
	trust := func(o *client.Options) { o.TLS.RootCAs = tlsSrv.TLS.CAPool }
	rows := []struct {
		name, in, clientName string
		adjust               func(*client.Options)
	}{
		{"URI", fmt.Sprintf("redis://:%s@127.0.0.1:%d/3?clientName=rt-uri", roundTripEncoded, srv.Port()), "rt-uri", nil},
		{"URI with user and db parameter", fmt.Sprintf("redis://default:%s@127.0.0.1:%d/0?db=3&clientName=rt-user&protocol=resp3",
			roundTripEncoded, srv.Port()), "rt-user", nil},
		{"connection string", fmt.Sprintf("127.0.0.1:%d,password=%s,defaultDatabase=3,name=rt-cs", srv.Port(), roundTripPassword), "rt-cs", nil},
		{"unix URI", fmt.Sprintf("unix://:%s@%s?db=3&clientName=rt-unix", roundTripEncoded, srv.UnixPath()), "rt-unix", nil},
		{"rediss URI", fmt.Sprintf("rediss://:%s@127.0.0.1:%d/3?clientName=rt-tls", roundTripEncoded, tlsSrv.Port()), "rt-tls", trust},
		{"ssl connection string with sslHost", fmt.Sprintf("127.0.0.1:%d,ssl=true,sslHost=%s,password=%s,db=3,clientName=rt-ssl",
			tlsSrv.Port(), redistest.TLSServerName, roundTripPassword), "rt-ssl", trust},
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			info := connectParsed(t, r.in, r.adjust)
			if !strings.Contains(info, " db=3 ") || !strings.Contains(info, " name="+r.clientName+" ") {
				t.Fatalf("want db=3 and name=%s: %s", r.clientName, info)
			}
		})
	}
}
