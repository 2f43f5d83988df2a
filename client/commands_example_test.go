package client_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/respire-go/respire/client"
)

var rdb *client.Client // a connected client (see ExampleConnect)

// A cache entry with a time to live, read back with the Optional convention: ok is false for
// a miss.
func ExampleCommands_cache() {
	ctx := context.Background()
	if err := rdb.SetEx(ctx, "cache:user:42", 5*time.Minute, `{"name":"Ada"}`); err != nil {
		log.Fatal(err)
	}
	body, ok, err := rdb.Get(ctx, "cache:user:42")
	if err != nil {
		log.Fatal(err)
	}
	if !ok {
		fmt.Println("miss")
		return
	}
	fmt.Println(body)
}

// A fixed-window rate limiter: one INCR and one EXPIRE, sent together in one MULTI/EXEC
// transaction on the shared connections.
func ExampleCommands_Atomic() {
	ctx := context.Background()
	window := time.Now().Unix() / 60
	key := fmt.Sprintf("rate:user:42:%d", window)
	var b client.Batch
	count := b.Incr(key)
	b.Expire(key, time.Minute)
	if err := rdb.Atomic(ctx, &b); err != nil {
		log.Fatal(err)
	}
	if count.Val() > 100 {
		fmt.Println("rate limited")
	}
}

// A job queue: producers push, a worker blocks until a job arrives. On a Client, the blocking
// pop rents a dedicated connection for the call.
func ExampleCommands_BLPop() {
	ctx := context.Background()
	if _, err := rdb.RPush(ctx, "jobs", "resize:7"); err != nil {
		log.Fatal(err)
	}
	queue, job, ok, err := rdb.BLPop(ctx, 5*time.Second, "jobs:high", "jobs")
	if err != nil {
		log.Fatal(err)
	}
	if ok {
		fmt.Println(queue, job)
	}
}

// A leaderboard: scores with ZADD and ZINCRBY, the top ten with their scores.
func ExampleCommands_leaderboard() {
	ctx := context.Background()
	if _, err := rdb.ZAdd(ctx, "board", client.ZMember{Member: "ada", Score: 120}, client.ZMember{Member: "bob", Score: 95}); err != nil {
		log.Fatal(err)
	}
	if _, err := rdb.ZIncrBy(ctx, "board", 10, "bob"); err != nil {
		log.Fatal(err)
	}
	top, err := rdb.ZRevRangeWithScores(ctx, "board", 0, 9)
	if err != nil {
		log.Fatal(err)
	}
	for i, m := range top {
		fmt.Println(i+1, m.Member, m.Score)
	}
}

// A session kept in a hash, written from and read into a struct.
func ExampleCommands_HGetAllStruct() {
	type Session struct {
		User    string    `redis:"user"`
		Visits  int64     `redis:"visits"`
		Expires time.Time `redis:"expires"`
	}
	ctx := context.Background()
	if _, err := rdb.HSetStruct(ctx, "session:9", Session{User: "ada", Expires: time.Now().Add(time.Hour)}); err != nil {
		log.Fatal(err)
	}
	if _, err := rdb.HIncrBy(ctx, "session:9", "visits", 1); err != nil {
		log.Fatal(err)
	}
	var s Session
	found, err := rdb.HGetAllStruct(ctx, "session:9", &s)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(found, s.User, s.Visits)
}

// A batch of reads in one round trip: each future holds its own result and error.
func ExampleBatch() {
	ctx := context.Background()
	var b client.Batch
	names := make([]*client.Future[client.OptionalString], 0, 100)
	for i := 0; i < 100; i++ {
		names = append(names, b.HGet(fmt.Sprintf("user:%d", i), "name"))
	}
	if err := rdb.Pipeline(ctx, &b); err != nil && !errors.Is(err, client.ErrUnknownOutcome) {
		log.Fatal(err)
	}
	for i, f := range names {
		if name, err := f.Result(); err == nil && name.Valid {
			fmt.Println(i, name.Value)
		}
	}
}

// A script's reply has whatever shape the script gives it: read it with the As methods.
func ExampleCommands_Eval() {
	ctx := context.Background()
	v, err := rdb.Eval(ctx, "return {redis.call('INCR', KEYS[1]), ARGV[1]}", []string{"counter"}, "tag")
	if err != nil {
		log.Fatal(err)
	}
	parts, err := v.AsValues()
	if err != nil || len(parts) != 2 {
		log.Fatal("unexpected reply")
	}
	n, _ := parts[0].AsInt64()
	tag, _ := parts[1].AsString()
	fmt.Println(n, tag)
}

// One step of a keyspace scan; loop until the cursor is 0 again.
func ExampleCommands_Scan() {
	ctx := context.Background()
	cursor := uint64(0)
	for {
		page, err := rdb.Scan(ctx, cursor, client.ScanOptions{Match: "session:*", Count: 100})
		if err != nil {
			log.Fatal(err)
		}
		for _, key := range page.Keys {
			fmt.Println(key)
		}
		if cursor = page.Cursor; cursor == 0 {
			break
		}
	}
}
