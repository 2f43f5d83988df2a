package client_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/respire-go/respire/client"
)

// Every session key, however many there are, without blocking the server as KEYS would: the
// iterator runs SCAN step by step on one connection.
func ExampleCommands_ScanAll() {
	ctx := context.Background()
	for key, err := range rdb.ScanAll(ctx, client.ScanOptions{Match: "session:*", Count: 500}) {
		if errors.Is(err, client.ErrCursorLost) {
			log.Fatal("the connection failed mid-scan: start again") // a cursor never moves servers
		}
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(key)
	}
}

// The fields of a large hash, in pages of about 100.
func ExampleCommands_HScanAll() {
	ctx := context.Background()
	for fv, err := range rdb.HScanAll(ctx, "user:42:prefs", client.ScanOptions{Count: 100}) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(fv.Field, fv.Value)
	}
}
