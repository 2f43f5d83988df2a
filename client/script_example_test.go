package client_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/respire-go/respire/client"
	"github.com/respire-go/respire/netio/resp"
)

// A sliding-window rate limiter as a script: the check and the update run as one step on the
// server. The script is sent once per server; later runs send only its digest.
var slidingWindow = client.NewScript(`
local now, window, limit = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
if redis.call('ZCARD', KEYS[1]) >= limit then return 0 end
redis.call('ZADD', KEYS[1], now, ARGV[4])
redis.call('PEXPIRE', KEYS[1], window)
return 1`)

func ExampleScript() {
	ctx := context.Background()
	now := time.Now()
	v, err := rdb.RunScript(ctx, slidingWindow, []string{"rate:user:42"},
		fmt.Sprint(now.UnixMilli()), "60000", "100", fmt.Sprint(now.UnixNano()))
	if err != nil {
		log.Fatal(err) // an *UnknownOutcomeError means the script may have run: never rerun blindly
	}
	if allowed, _ := v.AsInt64(); allowed == 0 {
		fmt.Println("rate limited")
	}
}

// Scripts in a batch: the first entry of a script loads it, the others run by digest, all in
// one round trip.
func ExampleBatch_RunScript() {
	ctx := context.Background()
	var b client.Batch
	now := time.Now()
	var results []*client.Future[resp.Value]
	for _, user := range []string{"ada", "bob", "eve"} {
		results = append(results, b.RunScript(slidingWindow, []string{"rate:user:" + user},
			fmt.Sprint(now.UnixMilli()), "60000", "100", fmt.Sprint(now.UnixNano())))
	}
	if err := rdb.Pipeline(ctx, &b); err != nil {
		log.Print(err) // each future has its own outcome
	}
	for _, f := range results {
		v, err := f.Result()
		if err != nil {
			continue
		}
		allowed, _ := v.AsInt64()
		fmt.Println(allowed == 1)
	}
}
