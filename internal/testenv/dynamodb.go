package testenv

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
)

// DynamoDBLocalDirEnv names the environment variable that points at a
// DynamoDB Local folder (the one holding DynamoDBLocal.jar and
// DynamoDBLocal_lib/). Without it the tests look under the repository's
// .tools/, where `make test-deps` installs the emulator.
const DynamoDBLocalDirEnv = "HOTKEYD_DYNAMODB_LOCAL_DIR"

// DDBRegion is the region the DynamoDB Local clients are configured for.
const DDBRegion = "us-east-1"

// DDBLocal is one DynamoDB Local process started for a test. It is killed
// when the test ends.
type DDBLocal struct {
	// Endpoint is the emulator's base URL, e.g. "http://127.0.0.1:41234".
	Endpoint string
	// DB is a DynamoDB client for the emulator.
	DB *dynamodb.Client
	// Streams is a DynamoDB Streams client for the emulator.
	Streams *dynamodbstreams.Client
	// Config is the AWS config the clients were built from (static dummy
	// credentials, region us-east-1, no retries beyond the SDK default).
	Config aws.Config

	t    testing.TB
	dir  string
	args []string
	port int
	pick func() (int, error)
	mu   sync.Mutex
	proc *child
	out  *lockedBuffer // the last start's output
}

// DDBOption changes how DynamoDBLocal starts the emulator.
type DDBOption func(*ddbOptions)

type ddbOptions struct {
	dbPath string
	pick   func() (int, error)
}

// WithDBPath keeps the emulator's data in dir (-dbPath) instead of memory,
// so that it survives Stop and Start.
func WithDBPath(dir string) DDBOption {
	return func(o *ddbOptions) { o.dbPath = dir }
}

// ddbStartTimeout bounds how long the emulator may take to answer after it
// started: a JVM on a loaded machine is slow, and a start that fails is
// seen at once.
const ddbStartTimeout = 2 * time.Minute

// DynamoDBLocal starts DynamoDB Local on a free port and waits until it
// answers. Java and the emulator's jar must be installed: when they are
// missing the test fails if the CI environment variable is set (CI must
// never skip silently) and is skipped with a loud message otherwise.
func DynamoDBLocal(t testing.TB, opts ...DDBOption) *DDBLocal {
	t.Helper()
	var o ddbOptions
	for _, opt := range opts {
		opt(&o)
	}
	dir, err := dynamoDBLocalDir()
	if err == nil {
		_, err = exec.LookPath("java")
	}
	if err != nil {
		msg := fmt.Sprintf("DynamoDB Local is not available (%v): run `make test-deps` (or set %s)", err, DynamoDBLocalDirEnv)
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip("SKIPPING, " + msg)
	}
	args := []string{"-disableTelemetry"}
	if o.dbPath != "" {
		args = append(args, "-sharedDb", "-dbPath", o.dbPath)
	} else {
		args = append(args, "-inMemory")
	}
	d := &DDBLocal{t: t, dir: dir, args: args, pick: o.pick}
	d.Config = aws.Config{
		Region:      DDBRegion,
		Credentials: credentials.NewStaticCredentialsProvider("hotkeyd", "hotkeyd", ""),
	}
	t.Cleanup(d.Stop)
	d.Start()
	return d
}

// client returns a DynamoDB client for the emulator at endpoint.
func (d *DDBLocal) client(endpoint string) *dynamodb.Client {
	return dynamodb.NewFromConfig(d.Config, func(o *dynamodb.Options) { o.BaseEndpoint = aws.String(endpoint) })
}

// Start starts the emulator (again after Stop, on the same port) and waits
// until it answers. Data survives a restart only with WithDBPath.
func (d *DDBLocal) Start() {
	d.t.Helper()
	d.mu.Lock()
	running, port := d.proc != nil, d.port
	d.mu.Unlock()
	if running {
		return
	}
	start := func(port int) (*child, error) {
		// The client compiler alone and the serial collector: a test's
		// emulator lives seconds to minutes, and starts on a machine other
		// tests load; these halve the CPU time its start takes.
		jvm := []string{"-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Djava.library.path=DynamoDBLocal_lib", "-jar", "DynamoDBLocal.jar", "-port", strconv.Itoa(port)}
		cmd := exec.Command("java", append(jvm, d.args...)...)
		cmd.Dir = d.dir
		return startChild("dynamodb local", cmd, 1<<20)
	}
	ready := func(ctx context.Context, port int) error {
		_, err := d.client(endpointOf(port)).ListTables(ctx, &dynamodb.ListTablesInput{})
		return err
	}
	proc, port, err := startOnPort("dynamodb local", port, d.pick, ddbStartTimeout, start, ready)
	if err != nil {
		d.t.Fatal(err)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.proc, d.out = proc, proc.out
	if d.port == 0 {
		d.port = port
		d.Endpoint = endpointOf(port)
		d.DB = d.client(d.Endpoint)
		d.Streams = dynamodbstreams.NewFromConfig(d.Config, func(o *dynamodbstreams.Options) { o.BaseEndpoint = aws.String(d.Endpoint) })
	}
}

// endpointOf is the loopback URL of a port.
func endpointOf(port int) string { return "http://127.0.0.1:" + strconv.Itoa(port) }

// Stop kills the emulator and waits for it to exit. It is safe to call
// more than once.
func (d *DDBLocal) Stop() {
	d.mu.Lock()
	proc := d.proc
	d.proc = nil
	d.mu.Unlock()
	if proc != nil {
		proc.stop()
	}
}

// Output returns what the emulator printed since it last started, for
// failure messages.
func (d *DDBLocal) Output() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.out == nil {
		return ""
	}
	return d.out.String()
}

// dynamoDBLocalDir finds the folder holding DynamoDBLocal.jar.
func dynamoDBLocalDir() (string, error) {
	dir := os.Getenv(DynamoDBLocalDirEnv)
	if dir == "" {
		root, err := repoRoot()
		if err != nil {
			return "", err
		}
		dir = filepath.Join(root, ".tools", "node_modules", "amplify-dynamodb-simulator", "emulator")
	}
	if _, err := os.Stat(filepath.Join(dir, "DynamoDBLocal.jar")); err != nil {
		return "", err
	}
	return dir, nil
}
