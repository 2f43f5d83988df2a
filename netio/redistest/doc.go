// Package redistest starts real Redis processes for tests.
//
// Tests in other packages use it to run a throwaway redis-server, a sentinel
// group (one primary, one replica and three redis-sentinel processes) or a
// six-node Redis Cluster, all bound to 127.0.0.1 on free ports, with their
// files in the test's temporary directory. Every process is killed and reaped
// by a t.Cleanup registered when it is started.
//
// The binaries redis-server, redis-sentinel and redis-cli (Redis 7.0 or
// newer) must be on PATH; .ci/install-redis.sh installs them. When they are
// missing the tests that need them are skipped, except when the environment
// variable CI is true: then they fail, so that a CI run can never pass
// without exercising real servers. See [Require].
//
// A standalone server:
//
//	srv := redistest.Start(t, redistest.Config{Password: "secret"})
//	conn, err := net.Dial("tcp", srv.Addr())
//	...
//	if got := srv.Do(t, "GET", "counter"); got != "3" {
//		t.Fatalf("counter = %q", got)
//	}
//
// [Server.Do] is a deliberately small RESP client, independent of the rest of
// this module, meant for test setup and assertions. The helpers that take a
// testing.TB call its Fatalf method and so must be called from the test's own
// goroutine; [Server.TryDo] and [Server.Ping] report errors instead.
package redistest
