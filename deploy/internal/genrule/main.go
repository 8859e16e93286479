// Command genrule writes the Kubernetes PrometheusRule manifest generated
// from hotkeyd's Prometheus rule file. Run it through `go generate ./deploy`.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/hotkeyd/hotkeyd/deploy"
)

func main() { os.Exit(run()) }

func run() int {
	rules := flag.String("rules", deploy.RuleFile, "Prometheus rule file to read.")
	out := flag.String("out", deploy.PrometheusRuleFile, "PrometheusRule manifest to write.")
	name := flag.String("name", "hotkeyd", "metadata.name of the PrometheusRule.")
	flag.Parse()
	in, err := os.ReadFile(*rules)
	if err != nil {
		fmt.Fprintln(os.Stderr, "genrule:", err)
		return 1
	}
	b, err := deploy.PrometheusRule(in, *name)
	if err != nil {
		fmt.Fprintf(os.Stderr, "genrule: %s: %v\n", *rules, err)
		return 1
	}
	if err := os.WriteFile(*out, b, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "genrule:", err)
		return 1
	}
	return 0
}
