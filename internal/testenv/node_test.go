package testenv

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

func TestKinesalite(t *testing.T) {
	k := StartKinesalite(t)
	ctx := context.Background()
	if _, err := k.Client.CreateStream(ctx, &kinesis.CreateStreamInput{StreamName: aws.String("s"), ShardCount: aws.Int32(1)}); err != nil {
		t.Fatal(err)
	}
	out, err := k.Client.ListStreams(ctx, &kinesis.ListStreamsInput{})
	if err != nil || len(out.StreamNames) != 1 || out.StreamNames[0] != "s" {
		t.Fatalf("ListStreams: %v, %v", out, err)
	}
}

func TestS3rver(t *testing.T) {
	s := StartS3rver(t)
	ctx := context.Background()
	if _, err := s.Client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("logs")}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("logs"), Key: aws.String("a/b.json"), Body: strings.NewReader("{}")}); err != nil {
		t.Fatal(err)
	}
	out, err := s.Client.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("logs"), Prefix: aws.String("a/")})
	if err != nil || len(out.Contents) != 1 || aws.ToString(out.Contents[0].Key) != "a/b.json" {
		t.Fatalf("ListObjectsV2: %v, %v", out, err)
	}
}

// TestNodeToolMissing checks that a missing emulator skips loudly on a
// workstation and fails in CI.
func TestNodeToolMissing(t *testing.T) {
	t.Setenv(ToolsDirEnv, t.TempDir()) // a folder without node_modules
	for _, start := range []func(testing.TB){
		func(tb testing.TB) { StartKinesalite(tb) },
		func(tb testing.TB) { StartS3rver(tb) },
	} {
		run := func(ci string) *stopTB {
			t.Setenv("CI", ci)
			s := &stopTB{TB: t}
			func() {
				defer func() {
					if r := recover(); r != nil && r != s {
						panic(r)
					}
				}()
				start(s)
			}()
			return s
		}
		if s := run(""); s.skipped == "" || s.fatal != "" || !strings.Contains(s.skipped, "make test-deps") {
			t.Errorf("without CI: skipped %q, fatal %q; want a skip naming make test-deps", s.skipped, s.fatal)
		}
		if s := run("true"); s.fatal == "" || s.skipped != "" {
			t.Errorf("with CI: skipped %q, fatal %q; want a failure", s.skipped, s.fatal)
		}
	}
}
