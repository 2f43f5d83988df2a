package client

import (
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/respire-go/respire/netio/resp"
)

// TestWidePoliciesMatchTheTable: the commands that run on every primary are exactly those
// Redis's COMMAND DOCS tips mark request_policy all_shards or all_nodes (captured in the command
// table's source), except the per-node introspection commands and WAIT, which run on one node;
// and each one's combination follows its response_policy.
func TestWidePoliciesMatchTheTable(t *testing.T) {
	data, err := os.ReadFile("../internal/command/testdata/commands.json")
	if err != nil {
		t.Fatal(err)
	}
	var table struct {
		Commands []struct {
			Name        string   `json:"name"`
			Tips        []string `json:"tips"`
			Subcommands []struct {
				Name string   `json:"name"`
				Tips []string `json:"tips"`
			} `json:"subcommands"`
		} `json:"commands"`
	}
	if err := json.Unmarshal(data, &table); err != nil {
		t.Fatal(err)
	}
	perNode := map[string]bool{"INFO": true, "WAIT": true, "FUNCTION STATS": true, "MEMORY DOCTOR": true,
		"MEMORY MALLOC-STATS": true, "MEMORY STATS": true, "LATENCY DOCTOR": true, "LATENCY GRAPH": true,
		"LATENCY HISTOGRAM": true, "LATENCY HISTORY": true, "LATENCY LATEST": true}
	response := map[string]widePolicy{"response_policy:all_succeeded": wideAllSucceeded, "response_policy:agg_sum": wideSum,
		"response_policy:one_succeeded": wideOneSucceeded, "response_policy:agg_logical_and": wideAnd}
	check := func(name string, tips []string) {
		name = strings.ToUpper(strings.ReplaceAll(name, "|", " "))
		wide := false
		var want widePolicy
		for _, tip := range tips {
			if tip == "request_policy:all_shards" || tip == "request_policy:all_nodes" {
				wide = true
			}
			if p, ok := response[tip]; ok {
				want = p
			}
		}
		got, listed := widePolicies[name]
		switch {
		case wide && perNode[name]:
			if listed {
				t.Errorf("%s runs on one node, but is listed", name)
			}
		case wide && !listed:
			t.Errorf("%s runs on every primary (tips %v), but is not listed", name, tips)
		case !wide && listed:
			t.Errorf("%s is listed, but its tips %v do not say all_shards or all_nodes", name, tips)
		case listed && want != 0 && got != want:
			t.Errorf("%s combines by %d, its tips say %d", name, got, want)
		}
	}
	for _, c := range table.Commands {
		check(c.Name, c.Tips)
		for _, s := range c.Subcommands {
			check(s.Name, s.Tips)
		}
	}
}

// TestTxRetry: MOVED, ASK and READONLY rejections of a watched transaction become a
// *TransactionRetryError matching ErrTxRetry and keeping the rejection; other errors pass.
func TestTxRetry(t *testing.T) {
	for _, code := range []string{"MOVED", "ASK", "READONLY"} {
		se := &ServerError{Code: code, Message: code + " 1 10.0.0.1:7000", CommandName: "EXEC", Endpoint: Endpoint{Host: "10.0.0.2", Port: 7000}}
		err := txRetry(se)
		var tre *TransactionRetryError
		if !errors.Is(err, ErrTxRetry) || !errors.As(err, &tre) || tre.Endpoint != se.Endpoint || tre.Err != se {
			t.Fatalf("%s: %v", code, err)
		}
	}
	other := &ServerError{Code: "WRONGTYPE"}
	if err := txRetry(other); err != error(other) {
		t.Fatalf("WRONGTYPE became %v", err)
	}
}

// TestDatabaseCheck: only Valkey 9 or later serves non-zero databases in Cluster mode; the
// refusal names the server, its version and its mode.
func TestDatabaseCheck(t *testing.T) {
	s := &dbSink{db: 2, ep: Endpoint{Host: "10.0.0.1", Port: 7000}}
	info := func(lines ...string) *resp.Value {
		v := resp.Verbatim("txt", strings.Join(lines, "\r\n"))
		return &v
	}
	if err := s.check(info("# Server", "redis_version:7.2.4", "server_name:valkey", "valkey_version:9.0.1", "server_mode:cluster")); err != nil {
		t.Fatalf("Valkey 9: %v", err)
	}
	for _, v := range []*resp.Value{
		info("# Server", "redis_version:7.0.15", "redis_mode:cluster"),
		info("# Server", "redis_version:7.2.4", "server_name:valkey", "valkey_version:8.1.0", "server_mode:cluster"),
	} {
		err := s.check(v)
		var ce *ConfigError
		if !errors.As(err, &ce) || ce.Option != "Database" || !strings.Contains(ce.Reason, "cluster mode") {
			t.Fatalf("%s: %v", v.Str, err)
		}
	}
}
