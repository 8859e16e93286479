// Command gendash writes hotkeyd's Grafana dashboards as JSON. Run it
// through `go generate ./dashboards`.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/hotkeyd/hotkeyd/dashboards"
)

func main() { os.Exit(run()) }

func run() int {
	dir := flag.String("dir", ".", "Directory to write the dashboards to.")
	flag.Parse()
	for name, d := range dashboards.All() {
		b, err := d.Encode()
		if err != nil {
			fmt.Fprintln(os.Stderr, "gendash:", err)
			return 1
		}
		if err := os.WriteFile(filepath.Join(*dir, name), b, 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "gendash:", err)
			return 1
		}
	}
	return 0
}
