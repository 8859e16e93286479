package testenv

import (
	"context"
	"strconv"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
)

// Kinesalite is one kinesalite process (a Kinesis Data Streams emulator,
// npm package "kinesalite", on Node) started for a test, in memory. It is
// killed when the test ends.
type Kinesalite struct {
	// Endpoint is the emulator's base URL, e.g. "http://127.0.0.1:41234".
	Endpoint string
	// Client is a Kinesis client for the emulator.
	Client *kinesis.Client
	// Config is the AWS config the client was built from (static dummy
	// credentials, region us-east-1).
	Config aws.Config

	p *nodeProcess
}

// StartKinesalite starts kinesalite on a free port and waits until it
// answers ListStreams. Streams it creates become ACTIVE after 50 ms. When
// Node or the package is missing the test fails under CI and is skipped
// otherwise.
func StartKinesalite(t testing.TB) *Kinesalite {
	t.Helper()
	script := nodeTool(t, "kinesalite", "cli.js")
	port, err := freePort()
	if err != nil {
		t.Fatalf("kinesalite: %v", err)
	}
	k := &Kinesalite{Endpoint: "http://127.0.0.1:" + strconv.Itoa(port)}
	k.Config = aws.Config{
		Region:      DDBRegion,
		Credentials: credentials.NewStaticCredentialsProvider("hotkeyd", "hotkeyd", ""),
	}
	k.Client = kinesis.NewFromConfig(k.Config, func(o *kinesis.Options) { o.BaseEndpoint = aws.String(k.Endpoint) })
	args := []string{"--port", strconv.Itoa(port), "--createStreamMs", "50", "--deleteStreamMs", "50", "--updateStreamMs", "50", "--shardLimit", "100"}
	k.p = startNode(t, "kinesalite", nil, script, args, func(ctx context.Context) error {
		_, err := k.Client.ListStreams(ctx, &kinesis.ListStreamsInput{})
		return err
	})
	return k
}

// Stop kills the emulator; its streams are gone. Safe to call twice.
func (k *Kinesalite) Stop() { k.p.stop() }

// Output returns what the emulator printed so far, for failure messages.
func (k *Kinesalite) Output() string { return k.p.out.String() }
