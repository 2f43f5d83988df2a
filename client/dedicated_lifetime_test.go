package client_test

import (
	"strings"
	"testing"
	"time"

	"github.com/respire-go/respire/client"
	"github.com/respire-go/respire/netio/redistest"
)

// TestDedicatedLifetimeRecyclesOnlyIdleOrReturned: with ConnectionMaxLifetime, a rented dedicated
// connection past its deadline keeps working until it is returned and is closed then; an idle one
// is closed at its deadline; the next rent gets a fresh connection.
func TestDedicatedLifetimeRecyclesOnlyIdleOrReturned(t *testing.T) {
	redistest.Require(t)
	checkNoLeaks(t)
	srv := redistest.Start(t, redistest.Config{})
	ctx := ctxT(t)
	const lifetime = 300 * time.Millisecond
	c, err := client.Connect(ctx, client.Options{Endpoints: []client.Endpoint{endpointOf(srv)}, ConnectionMaxLifetime: lifetime})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	clientID := func(d *client.DedicatedConn) string {
		v, err := d.Do(ctx, "CLIENT", "ID")
		if err != nil {
			t.Fatal(err)
		}
		return v.String()
	}
	alive := func(id string) bool {
		return strings.Contains(srv.Do(t, "CLIENT", "LIST"), "id="+strings.Trim(id, "int:\" ")+" ")
	}

	// Held past its deadline: still serves, closed when returned.
	d, err := c.Dedicated(ctx)
	if err != nil {
		t.Fatal(err)
	}
	first := clientID(d)
	time.Sleep(2 * lifetime)
	if err := d.Ping(ctx); err != nil {
		t.Fatalf("a rented connection past its lifetime must keep working: %v", err)
	}
	if !alive(first) {
		t.Fatal("the rented connection was closed while in use")
	}
	d.Close()
	eventually(t, "the expired connection closed on return", 2*time.Second, func() bool { return !alive(first) })

	// Returned in time: reused while young, closed when idle at its deadline.
	d, err = c.Dedicated(ctx)
	if err != nil {
		t.Fatal(err)
	}
	second := clientID(d)
	if second == first {
		t.Fatal("an expired connection was reused")
	}
	d.Close()
	d, err = c.Dedicated(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if again := clientID(d); again != second {
		t.Fatalf("a young idle connection must be reused: %s then %s", second, again)
	}
	d.Close()
	eventually(t, "the idle connection closed at its deadline", 3*time.Second, func() bool { return !alive(second) })
	d, err = c.Dedicated(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if third := clientID(d); third == second || third == first {
		t.Fatal("the next rent must get a fresh connection")
	}
}
