package testenv

import (
	"context"
	"strconv"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// S3rver's fixed credentials: it checks request signatures against them.
const (
	S3rverAccessKey = "S3RVER"
	S3rverSecretKey = "S3RVER"
)

// S3rver is one s3rver process (an S3 emulator, npm package "s3rver", on
// Node) started for a test, keeping its objects in a temporary folder. It
// is killed when the test ends.
type S3rver struct {
	// Endpoint is the emulator's base URL, e.g. "http://127.0.0.1:41234".
	Endpoint string
	// Client is an S3 client for the emulator (path-style addressing).
	Client *s3.Client
	// Config is the AWS config the client was built from (s3rver's
	// credentials, region us-east-1).
	Config aws.Config

	p *nodeProcess
}

// StartS3rver starts s3rver on a free port and waits until it answers
// ListBuckets. When Node or the package is missing the test fails under CI
// and is skipped otherwise.
func StartS3rver(t testing.TB) *S3rver {
	t.Helper()
	script := nodeTool(t, "s3rver", "bin/s3rver.js")
	s := &S3rver{}
	s.Config = aws.Config{
		Region:      DDBRegion,
		Credentials: credentials.NewStaticCredentialsProvider(S3rverAccessKey, S3rverSecretKey, ""),
	}
	client := func(port int) *s3.Client {
		return s3.NewFromConfig(s.Config, func(o *s3.Options) {
			o.BaseEndpoint = aws.String(endpointOf(port))
			o.UsePathStyle = true
		})
	}
	dir := t.TempDir()
	args := func(port int) []string {
		return []string{"--directory", dir, "--address", "127.0.0.1", "--port", strconv.Itoa(port), "--silent"}
	}
	// s3rver ciphers its continuation tokens with DES, which Node's
	// OpenSSL 3 keeps in its legacy provider: without it every listing
	// cut in pages answers 500.
	s.p = startNode(t, "s3rver", freePort, []string{"--openssl-legacy-provider"}, script, args, func(ctx context.Context, port int) error {
		_, err := client(port).ListBuckets(ctx, &s3.ListBucketsInput{})
		return err
	})
	s.Endpoint = endpointOf(s.p.port)
	s.Client = client(s.p.port)
	return s
}

// Stop kills the emulator. Safe to call twice.
func (s *S3rver) Stop() { s.p.stop() }

// Output returns what the emulator printed so far, for failure messages.
func (s *S3rver) Output() string { return s.p.out.String() }
