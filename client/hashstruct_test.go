package client_test

import (
	"context"
	"errors"
	"net/netip"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/respire-go/respire/client"
)

type session struct {
	User     string        `redis:"user"`
	Visits   int64         `redis:"visits"`
	Ratio    float64       `redis:"ratio"`
	Admin    bool          `redis:"admin,omitempty"`
	Small    uint8         `redis:"small"`
	Expires  time.Time     `redis:"expires"`
	Idle     time.Duration `redis:"idle"`
	Token    []byte        `redis:"token"`
	Addr     netip.Addr    `redis:"addr"`
	Nickname *string       `redis:"nick"`
	Count    *int          `redis:"count"`
	Ignored  string
	Skipped  string `redis:"-"`
	embedded
}

type embedded struct {
	Region string `redis:"region"`
}

// TestScanHash: every supported type is read from its hash field; missing fields leave the
// struct field alone; untagged and "-" fields are ignored.
func TestScanHash(t *testing.T) {
	exp := time.Date(2030, 1, 2, 3, 4, 5, 6, time.UTC)
	hash := map[string]string{
		"user": "ada", "visits": "42", "ratio": "0.5", "admin": "true", "small": "200",
		"expires": exp.Format(time.RFC3339Nano), "idle": "1m30s", "token": "\x00\x01", "addr": "10.0.0.1",
		"nick": "countess", "region": "eu", "Ignored": "no", "Skipped": "no", "unknown": "x",
	}
	s := session{Ignored: "keep", Skipped: "keep"}
	if err := client.ScanHash(hash, &s); err != nil {
		t.Fatal(err)
	}
	nick := "countess"
	want := session{User: "ada", Visits: 42, Ratio: 0.5, Admin: true, Small: 200, Expires: exp, Idle: 90 * time.Second,
		Token: []byte{0, 1}, Addr: netip.MustParseAddr("10.0.0.1"), Nickname: &nick, Ignored: "keep", Skipped: "keep",
		embedded: embedded{Region: "eu"}}
	if !reflect.DeepEqual(s, want) {
		t.Fatalf("scanned\n%+v\nwant\n%+v", s, want)
	}
	if s.Count != nil {
		t.Fatal("a missing field set a pointer")
	}
}

// TestScanHashErrors: a value that does not fit fails with a *ScanError naming the fields and
// not the value; a bad destination or field type fails with a *ConfigError.
func TestScanHashErrors(t *testing.T) {
	var s session
	for field, value := range map[string]string{
		"visits": "private-value", "small": "256", "ratio": "private-value", "admin": "private-value",
		"expires": "private-value", "idle": "private-value", "addr": "private-value", "count": "private-value",
	} {
		err := client.ScanHash(map[string]string{field: value}, &s)
		var se *client.ScanError
		if !errors.As(err, &se) || se.HashField != field {
			t.Errorf("%s: %v, want a *ScanError for it", field, err)
			continue
		}
		if strings.Contains(err.Error(), value) {
			t.Errorf("%s: the error quotes the value: %v", field, err)
		}
	}
	var ce *client.ConfigError
	if err := client.ScanHash(nil, s); !errors.As(err, &ce) {
		t.Errorf("a struct value: %v", err)
	}
	if err := client.ScanHash(nil, (*session)(nil)); !errors.As(err, &ce) {
		t.Errorf("a nil pointer: %v", err)
	}
	var bad struct {
		C chan int `redis:"c"`
	}
	if err := client.ScanHash(nil, &bad); !errors.As(err, &ce) {
		t.Errorf("an unsupported field type: %v", err)
	}
}

// TestHashStructRoundTrip: HSetStruct writes what HGetAllStruct reads back, over both
// protocols, and the batch form writes the same fields.
func TestHashStructRoundTrip(t *testing.T) {
	nick := "countess"
	in := session{User: "ada", Visits: 42, Ratio: 0.25, Small: 7, Expires: time.Date(2030, 1, 2, 3, 4, 5, 6, time.UTC),
		Idle: time.Minute, Token: []byte("t"), Addr: netip.MustParseAddr("::1"), Nickname: &nick, embedded: embedded{Region: "eu"}}
	runGroup(t, nil, groupOptions{}, []step{
		{"HSetStruct", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.HSetStruct(ctx, k("s"), &in))
		}, int64(10), nil},
		{"admin omitted", func(ctx context.Context, c C, k func(string) string) (any, error) {
			return val(c.HExists(ctx, k("s"), "admin"))
		}, false, nil},
		{"HGetAllStruct", func(ctx context.Context, c C, k func(string) string) (any, error) {
			var out session
			found, err := c.HGetAllStruct(ctx, k("s"), &out)
			if !found {
				return nil, errors.New("not found")
			}
			return out, err
		}, in, nil},
		{"HGetAllStruct missing", func(ctx context.Context, c C, k func(string) string) (any, error) {
			out := session{User: "keep"}
			found, err := c.HGetAllStruct(ctx, k("none"), &out)
			return out.User + " " + map[bool]string{true: "found", false: "missing"}[found], err
		}, "keep missing", nil},
		{"batch HSetStruct", func(ctx context.Context, c C, k func(string) string) (any, error) {
			var b client.Batch
			f := b.HSetStruct(k("b"), in)
			if err := c.Pipeline(ctx, &b); err != nil {
				return nil, err
			}
			return val(f.Result())
		}, int64(10), nil},
	})
}
