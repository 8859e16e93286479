// Package s3trail lists the CloudTrail log files of the S3 bucket
// CloudTrail delivers them to, for the CloudTrail reader (package
// cloudtrail), so that nobody has to sync the bucket to disk first: it
// lists the objects under CloudTrail's layout
// (AWSLogs/ACCOUNT/CloudTrail/REGION/YYYY/MM/DD/, an organization trail's
// AWSLogs/ORG/ACCOUNT/... too) in key order, hands every new one to its
// Handler, and keeps in a checkpoint file the last key read per region
// folder, so that a restart reads on after it with nothing read twice or
// skipped.
//
// CloudTrail names a file after the minute it delivered it, so new files
// sort after the ones before them within a folder: one ListObjectsV2 call
// per region folder, starting after the checkpoint, finds them.
//
// It is a part of the CloudTrail reader, not a reader of its own: it
// hands objects to a Handler and knows nothing of their content, so it
// lives under the one reader that uses it.
package s3trail

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"
)

// Config is the s3 key of a cloudtrail source in the config file.
type Config struct {
	// Bucket is the bucket CloudTrail delivers to. Required.
	Bucket string `yaml:"bucket"`
	// Prefix is the trail's S3 key prefix, or a deeper folder of its
	// layout (AWSLogs/111122223333/CloudTrail/us-east-1/); empty reads
	// every trail of the bucket.
	Prefix string `yaml:"prefix"`
	// Region is the bucket's region; empty means the SDK's default chain.
	Region string `yaml:"region"`
	// Endpoint overrides the S3 endpoint (an S3-compatible store, an
	// emulator); objects are then addressed path-style.
	Endpoint string `yaml:"endpoint"`
}

// Validate reports every setting that cannot work, one error each
// (errors.Join), naming its key.
func (c *Config) Validate() error {
	var errs []error
	switch {
	case c.Bucket == "":
		errs = append(errs, errors.New("bucket: required"))
	case strings.ContainsAny(c.Bucket, "/ "):
		errs = append(errs, fmt.Errorf("bucket: %q is a bucket name, not a path or URL (put the folder in prefix)", c.Bucket))
	}
	if strings.HasPrefix(c.Prefix, "/") {
		errs = append(errs, fmt.Errorf("prefix: %q: S3 keys do not start with /", c.Prefix))
	}
	if c.Endpoint != "" {
		if u, err := url.Parse(c.Endpoint); err != nil || u.Scheme == "" || u.Host == "" {
			errs = append(errs, fmt.Errorf("endpoint: not an absolute URL: %q", c.Endpoint))
		}
	}
	return errors.Join(errs...)
}

// String names the source in logs and metrics: s3://BUCKET/PREFIX.
func (c *Config) String() string { return "s3://" + c.Bucket + "/" + c.Prefix }

// Defaults of Options.
const (
	// DefaultPoll is how often the bucket is listed. CloudTrail delivers
	// a file about every five minutes per region.
	DefaultPoll = 30 * time.Second
	// DefaultCallTimeout bounds each S3 call, a GetObject included.
	DefaultCallTimeout = time.Minute
)
