// Command gen writes internal/command's table (table_gen.go) from the captured command
// descriptions (testdata/commands.json, testdata/sentinel.json) and the overlay (overlay.txt). go generate runs it in
// the package directory:
//
//	go generate ./internal/command
package main

import (
	"fmt"
	"os"

	"github.com/respire-go/respire/internal/command/internal/tablegen"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

func run() error {
	captured, err := os.ReadFile("testdata/commands.json")
	if err != nil {
		return err
	}
	sentinel, err := os.ReadFile("testdata/sentinel.json")
	if err != nil {
		return err
	}
	overlay, err := os.ReadFile("overlay.txt")
	if err != nil {
		return err
	}
	src, err := tablegen.Generate(captured, sentinel, overlay)
	if err != nil {
		return err
	}
	return os.WriteFile("table_gen.go", src, 0o644)
}
