package awsclient

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"go.uber.org/zap"

	"github.com/hotkeyd/hotkeyd/internal/awslog"
)

// noSharedConfig keeps the machine's AWS settings out of a test.
func noSharedConfig(t *testing.T) {
	none := filepath.Join(t.TempDir(), "none")
	for k, v := range map[string]string{
		"AWS_CONFIG_FILE": none, "AWS_SHARED_CREDENTIALS_FILE": none, "AWS_PROFILE": "",
		"AWS_REGION": "", "AWS_DEFAULT_REGION": "", "AWS_ENDPOINT_URL": "", "AWS_ENDPOINT_URL_DYNAMODB": "",
	} {
		t.Setenv(k, v)
	}
}

// TestConfig: the SDK's retries are off, its log lines go to the logger
// (awslog), the region given wins and a missing one is an error naming the
// key.
func TestConfig(t *testing.T) {
	noSharedConfig(t)
	if _, err := Config(context.Background(), "", zap.NewNop()); err == nil || err.Error() != "region: not set in the source nor in AWS_REGION or the shared AWS config" {
		t.Errorf("no region: %v", err)
	}
	t.Setenv("AWS_REGION", "eu-west-1")
	cfg, err := Config(context.Background(), "us-east-1", nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Region != "us-east-1" {
		t.Errorf("region %q, want the source's us-east-1", cfg.Region)
	}
	if _, ok := cfg.Retryer().(aws.NopRetryer); !ok {
		t.Errorf("retryer %T, want aws.NopRetryer", cfg.Retryer())
	}
	if _, ok := cfg.Logger.(awslog.Logger); !ok {
		t.Errorf("logger %T, want awslog.Logger", cfg.Logger)
	}
}

// TestEndpoint: a source's endpoint overrides the environment's; an empty
// one leaves it.
func TestEndpoint(t *testing.T) {
	noSharedConfig(t)
	t.Setenv("AWS_ENDPOINT_URL_DYNAMODB", "http://from-env:8000")
	cfg, err := Config(context.Background(), "us-east-1", nil)
	if err != nil {
		t.Fatal(err)
	}
	for endpoint, want := range map[string]string{"http://127.0.0.1:8000": "http://127.0.0.1:8000", "": "http://from-env:8000"} {
		o := dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) { Endpoint(&o.BaseEndpoint, endpoint) }).Options()
		if got := aws.ToString(o.BaseEndpoint); got != want {
			t.Errorf("endpoint %q: client's %q, want %q", endpoint, got, want)
		}
	}
}
