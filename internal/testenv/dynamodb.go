package testenv

import (
	"bytes"
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

	t      testing.TB
	dir    string
	args   []string
	mu     sync.Mutex
	cmd    *exec.Cmd
	output *bytes.Buffer
	exited chan struct{}
}

// DDBOption changes how DynamoDBLocal starts the emulator.
type DDBOption func(*ddbOptions)

type ddbOptions struct {
	dbPath string
}

// WithDBPath keeps the emulator's data in dir (-dbPath) instead of memory,
// so that it survives Stop and Start.
func WithDBPath(dir string) DDBOption {
	return func(o *ddbOptions) { o.dbPath = dir }
}

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
	port, err := freePort()
	if err != nil {
		t.Fatalf("dynamodb local: %v", err)
	}
	args := []string{"-Djava.library.path=DynamoDBLocal_lib", "-jar", "DynamoDBLocal.jar", "-port", strconv.Itoa(port), "-disableTelemetry"}
	if o.dbPath != "" {
		args = append(args, "-sharedDb", "-dbPath", o.dbPath)
	} else {
		args = append(args, "-inMemory")
	}
	d := &DDBLocal{
		Endpoint: "http://127.0.0.1:" + strconv.Itoa(port),
		t:        t,
		dir:      dir,
		args:     args,
	}
	d.Config = aws.Config{
		Region:      DDBRegion,
		Credentials: credentials.NewStaticCredentialsProvider("hotkeyd", "hotkeyd", ""),
	}
	d.DB = dynamodb.NewFromConfig(d.Config, func(o *dynamodb.Options) { o.BaseEndpoint = aws.String(d.Endpoint) })
	d.Streams = dynamodbstreams.NewFromConfig(d.Config, func(o *dynamodbstreams.Options) { o.BaseEndpoint = aws.String(d.Endpoint) })
	t.Cleanup(d.Stop)
	d.Start()
	return d
}

// Start starts the emulator again after Stop, on the same port, and waits
// until it answers. Data survives only with WithDBPath.
func (d *DDBLocal) Start() {
	d.t.Helper()
	d.mu.Lock()
	if d.cmd != nil {
		d.mu.Unlock()
		return
	}
	cmd := exec.Command("java", d.args...)
	cmd.Dir = d.dir
	out := &bytes.Buffer{}
	cmd.Stdout = &ddbLockedWriter{w: out, mu: &d.mu}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		d.mu.Unlock()
		d.t.Fatalf("start dynamodb local: %v", err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	d.cmd, d.output, d.exited = cmd, out, exited
	d.mu.Unlock()

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var lastErr error
	for ctx.Err() == nil {
		select {
		case <-exited:
			d.mu.Lock()
			msg := out.String()
			d.cmd = nil
			d.mu.Unlock()
			d.t.Fatalf("dynamodb local exited while starting: %s", msg)
		default:
		}
		cctx, ccancel := context.WithTimeout(ctx, 2*time.Second)
		_, lastErr = d.DB.ListTables(cctx, &dynamodb.ListTablesInput{})
		ccancel()
		if lastErr == nil {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	d.t.Fatalf("dynamodb local at %s did not answer within 60s: %v\n%s", d.Endpoint, lastErr, d.Output())
}

// Stop kills the emulator and waits for it to exit. It is safe to call
// more than once.
func (d *DDBLocal) Stop() {
	d.mu.Lock()
	cmd, exited := d.cmd, d.exited
	d.cmd = nil
	d.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Kill()
	<-exited
}

// Output returns what the emulator printed so far, for failure messages.
func (d *DDBLocal) Output() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.output == nil {
		return ""
	}
	return d.output.String()
}

type ddbLockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (w *ddbLockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.w.Write(p)
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
