// Command gen writes the client package's typed command surface (commands_gen.go) from its
// spec (commands.txt), checked against the command table. go generate runs it in the client
// package's directory:
//
//	go generate ./client
package main

import (
	"fmt"
	"os"

	"github.com/respire-go/respire/internal/command/surface"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

func run() error {
	src, err := os.ReadFile("commands.txt")
	if err != nil {
		return err
	}
	sp, err := surface.Parse(src)
	if err != nil {
		return err
	}
	out, err := surface.Generate(sp)
	if err != nil {
		return err
	}
	return os.WriteFile("commands_gen.go", out, 0o644)
}
