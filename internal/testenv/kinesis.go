package testenv

import (
	"context"
	"os"
	"path/filepath"
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
// listens there and answers ListStreams. Streams it creates become ACTIVE after 50 ms. When
// Node or the package is missing the test fails under CI and is skipped
// otherwise.
func StartKinesalite(t testing.TB) *Kinesalite {
	t.Helper()
	return startKinesalite(t, freePort)
}

// startKinesalite is StartKinesalite picking ports with pick.
func startKinesalite(t testing.TB, pick func() (int, error)) *Kinesalite {
	t.Helper()
	script := nodeTool(t, "kinesalite", "cli.js")
	k := &Kinesalite{}
	k.Config = aws.Config{
		Region:      DDBRegion,
		Credentials: credentials.NewStaticCredentialsProvider("hotkeyd", "hotkeyd", ""),
	}
	client := func(port int) *kinesis.Client {
		return kinesis.NewFromConfig(k.Config, func(o *kinesis.Options) { o.BaseEndpoint = aws.String(endpointOf(port)) })
	}
	args := func(port int) []string {
		return []string{"--port", strconv.Itoa(port), "--createStreamMs", "50", "--deleteStreamMs", "50", "--updateStreamMs", "50", "--shardLimit", "100"}
	}
	// kinesalite throws, and dies, when a client aborts a request (a
	// reader stopped in the middle of a GetRecords, more likely on a loaded
	// machine): a preloaded handler logs those and keeps it serving, and
	// lets every other error end it as before.
	guard := filepath.Join(t.TempDir(), "kinesalite-aborted.js")
	if err := os.WriteFile(guard, []byte(kinesaliteGuard), 0o644); err != nil {
		t.Fatalf("kinesalite: %v", err)
	}
	k.p = startNode(t, "kinesalite", pick, []string{"--require", guard}, script, args, func(ctx context.Context, port int) error {
		_, err := client(port).ListStreams(ctx, &kinesis.ListStreamsInput{})
		return err
	})
	k.Endpoint = endpointOf(k.p.port)
	k.Client = client(k.p.port)
	return k
}

// kinesaliteGuard is preloaded into kinesalite's Node process: a request
// the client aborted is no reason to stop serving the others.
const kinesaliteGuard = `process.on('uncaughtException', function (err) {
  if (err && (err.message === 'aborted' || err.code === 'ECONNRESET')) {
    console.error('kinesalite: a client aborted a request (' + err.message + '); still serving');
    return;
  }
  console.error(err);
  process.exit(1);
});
`

// Stop kills the emulator; its streams are gone. Safe to call twice.
func (k *Kinesalite) Stop() { k.p.stop() }

// Output returns what the emulator printed so far, for failure messages.
func (k *Kinesalite) Output() string { return k.p.out.String() }
