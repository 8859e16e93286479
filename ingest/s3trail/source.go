package s3trail

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/hotkeyd/hotkeyd/ingest"
	"github.com/hotkeyd/hotkeyd/ingest/cloudtrail"
)

// API is the part of the S3 client the reader uses. *s3.Client implements
// it; tests wrap it to inject faults.
type API interface {
	ListObjectsV2(ctx context.Context, in *s3.ListObjectsV2Input, opts ...func(*s3.Options)) (*s3.ListObjectsV2Output, error)
	GetObject(ctx context.Context, in *s3.GetObjectInput, opts ...func(*s3.Options)) (*s3.GetObjectOutput, error)
}

// Options are the settings a cloudtrail source shares between its files
// and its bucket.
type Options struct {
	// CheckpointDir is where StateFile keeps the last key read per region
	// folder. Empty keeps it in memory: a restart reads every object
	// again (within MaxAge).
	CheckpointDir string
	// MaxAge, when positive, skips the objects older than this when they
	// are first listed (they are recorded as read): a first start does
	// not replay months of history as current traffic, and does not list
	// the days before it.
	MaxAge time.Duration
	// Tables are the key schemas (package cloudtrail).
	Tables map[string]ingest.KeySchema
	// Poll is how often the bucket is listed (DefaultPoll when 0).
	Poll time.Duration
	// CallTimeout bounds each S3 call (DefaultCallTimeout when 0).
	CallTimeout time.Duration
}

// Source reads CloudTrail files from S3. It implements ingest.Source,
// ingest.Readier and prometheus.Collector.
type Source struct {
	cfg  Config
	opts Options
	api  API
	log  *zap.Logger
	rep  ingest.Reporter
	dec  *cloudtrail.Decoder
	now  func() time.Time

	mu       sync.Mutex
	stats    cloudtrail.Stats
	files    uint64
	skipped  uint64
	calls    map[string]uint64
	notReady error

	// Owned by Run.
	last map[string]string // region folder -> last key read
}

// S3 calls, the values of hotkeyd_cloudtrail_s3_requests_total's call label.
const (
	callList = "ListObjectsV2"
	callGet  = "GetObject"
)

// Reasons of hotkeyd_source_errors_total{source="cloudtrail"} this reader
// adds to the CloudTrail reader's.
const (
	// ReasonS3 is an S3 call that failed: retried at the next poll.
	ReasonS3 = "s3"
)

var (
	_ ingest.Source        = (*Source)(nil)
	_ ingest.Readier       = (*Source)(nil)
	_ prometheus.Collector = (*Source)(nil)
)

// New returns a Source reading cfg's bucket with an S3 client from the
// SDK's default credential chain, cfg.Region and cfg.Endpoint.
func New(cfg Config, opts Options, log *zap.Logger, rep ingest.Reporter) (*Source, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	var lo []func(*awsconfig.LoadOptions) error
	if cfg.Region != "" {
		lo = append(lo, awsconfig.WithRegion(cfg.Region))
	}
	awsCfg, err := awsconfig.LoadDefaultConfig(context.Background(), lo...)
	if err != nil {
		return nil, fmt.Errorf("load AWS config: %w", err)
	}
	if awsCfg.Region == "" {
		return nil, errors.New("region: not set in the source nor in AWS_REGION or the shared AWS config")
	}
	client := s3.NewFromConfig(awsCfg, func(o *s3.Options) {
		if cfg.Endpoint != "" {
			o.BaseEndpoint = aws.String(cfg.Endpoint)
			o.UsePathStyle = true
		}
	})
	return NewWithClient(cfg, opts, client, log, rep)
}

// NewWithClient is New with the S3 client given. It reads the checkpoint
// file and starts nothing: Run does the work.
func NewWithClient(cfg Config, opts Options, api API, log *zap.Logger, rep ingest.Reporter) (*Source, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if opts.Poll <= 0 {
		opts.Poll = DefaultPoll
	}
	if opts.CallTimeout <= 0 {
		opts.CallTimeout = DefaultCallTimeout
	}
	if log == nil {
		log = zap.NewNop()
	}
	if rep == nil {
		rep = ingest.NopReporter{}
	}
	last, err := loadState(opts.CheckpointDir, cfg.Bucket)
	if err != nil {
		return nil, fmt.Errorf("cloudtrail s3: %w", err)
	}
	log = log.Named("cloudtrail").With(zap.String("bucket", cfg.Bucket), zap.String("prefix", cfg.Prefix))
	return &Source{
		cfg: cfg, opts: opts, api: api, log: log, rep: rep,
		dec:      cloudtrail.NewDecoder(opts.Tables, log, rep),
		now:      time.Now,
		calls:    map[string]uint64{callList: 0, callGet: 0},
		notReady: errors.New("bucket not listed yet"),
		last:     last,
	}, nil
}

// Name returns "cloudtrail".
func (s *Source) Name() string { return cloudtrail.SourceName }

// Ready returns nil once the bucket was listed and while it can be, or
// what is wrong.
func (s *Source) Ready() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.notReady
}

// Stats returns the counts of everything read so far.
func (s *Source) Stats() cloudtrail.Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stats
}

// Run lists the bucket and reads the new objects every Poll until ctx is
// done. S3 errors are counted and retried at the next poll; it returns nil
// when ctx is done, and the sink's error if it refuses a batch otherwise.
func (s *Source) Run(ctx context.Context, sink ingest.Sink) error {
	s.log.Info("reading CloudTrail files from S3", zap.String("checkpoint_dir", s.opts.CheckpointDir),
		zap.Int("folders_read_before", len(s.last)))
	for {
		err := s.poll(ctx, sink)
		var se *sinkError
		switch {
		case ctx.Err() != nil:
			return nil
		case errors.As(err, &se):
			return se.err
		case err != nil:
			s.rep.Error(cloudtrail.SourceName, ReasonS3, err)
			s.setReady(err)
		default:
			s.setReady(nil)
		}
		t := time.NewTimer(s.opts.Poll)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
	}
}

func (s *Source) setReady(err error) {
	s.mu.Lock()
	s.notReady = err
	s.mu.Unlock()
}

// poll finds the region folders and reads what is new in each.
func (s *Source) poll(ctx context.Context, sink ingest.Sink) error {
	folders, within, err := s.regionFolders(ctx)
	if err != nil {
		return err
	}
	var errs []error
	for _, f := range folders {
		if err := s.readFolder(ctx, sink, f, within); err != nil {
			var se *sinkError
			if errors.As(err, &se) || ctx.Err() != nil {
				return err
			}
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// readFolder lists a region folder after its checkpoint, in key order, and
// reads every object, saving the checkpoint after each.
func (s *Source) readFolder(ctx context.Context, sink ingest.Sink, folder, within string) error {
	after, known := s.last[folder]
	if !known && s.opts.MaxAge > 0 {
		// A folder never read: start at the day MaxAge ago, instead of
		// listing every day before it.
		after = folder + s.now().Add(-s.opts.MaxAge).UTC().Format("2006/01/02/")
	}
	in := &s3.ListObjectsV2Input{Bucket: aws.String(s.cfg.Bucket), Prefix: aws.String(folder + within)}
	if after != "" {
		in.StartAfter = aws.String(after)
	}
	skipped := 0
	for {
		page, err := s.list(ctx, in)
		if err != nil {
			return fmt.Errorf("list s3://%s/%s: %w", s.cfg.Bucket, folder+within, err)
		}
		for _, o := range page.Contents {
			key := aws.ToString(o.Key)
			if strings.HasSuffix(key, "/") {
				continue // a folder marker
			}
			if s.opts.MaxAge > 0 && !known && o.LastModified != nil && s.now().Sub(*o.LastModified) > s.opts.MaxAge {
				skipped++
			} else if err := s.readObject(ctx, sink, key); err != nil {
				return err
			}
			s.last[folder] = key
			s.save()
		}
		if !aws.ToBool(page.IsTruncated) || page.NextContinuationToken == nil {
			break
		}
		in.ContinuationToken = page.NextContinuationToken
	}
	if skipped > 0 {
		s.mu.Lock()
		s.skipped += uint64(skipped)
		s.mu.Unlock()
		s.log.Info("skipped objects older than max_age", zap.String("folder", folder), zap.Int("objects", skipped), zap.Duration("max_age", s.opts.MaxAge))
	}
	return nil
}

// readObject decodes one object into the sink. An object that cannot be
// fetched is an error (retried at the next poll); one that breaks off
// half-way is counted as read, what was read kept, as for files.
func (s *Source) readObject(ctx context.Context, sink ingest.Sink, key string) error {
	// The timeout covers reading the body too: an object is a few MB.
	cctx, cancel := context.WithTimeout(ctx, s.opts.CallTimeout)
	defer cancel()
	s.count(callGet)
	out, err := s.api.GetObject(cctx, &s3.GetObjectInput{Bucket: aws.String(s.cfg.Bucket), Key: aws.String(key)})
	if err != nil {
		return fmt.Errorf("get s3://%s/%s: %w", s.cfg.Bucket, key, err)
	}
	defer out.Body.Close()
	name := "s3://" + s.cfg.Bucket + "/" + key
	put := ingest.SinkFunc(func(ctx context.Context, b []ingest.Event) error {
		if err := sink.Put(ctx, b); err != nil {
			return &sinkError{err}
		}
		return nil
	})
	st, err := s.dec.Decode(cctx, out.Body, name, put)
	s.mu.Lock()
	s.stats.Add(st)
	s.files++
	s.mu.Unlock()
	var se *sinkError
	switch {
	case errors.As(err, &se):
		return se
	case ctx.Err() != nil:
		return ctx.Err()
	case err != nil:
		s.rep.Error(cloudtrail.SourceName, "read", err)
	}
	s.log.Debug("read object", zap.String("key", key), zap.Uint64("events", st.Events), zap.Uint64("rejected", st.Rejected))
	return nil
}

// save writes the checkpoint; a failure is counted and makes the source
// unready until a save succeeds.
func (s *Source) save() {
	if err := saveState(s.opts.CheckpointDir, s.cfg.Bucket, s.last); err != nil {
		s.rep.Error(cloudtrail.SourceName, "checkpoint", err)
		s.setReady(err)
	}
}

// sinkError is the sink's refusal, which stops the source.
type sinkError struct{ err error }

func (e *sinkError) Error() string { return "put events: " + e.err.Error() }
func (e *sinkError) Unwrap() error { return e.err }

// count counts one S3 call.
func (s *Source) count(name string) {
	s.mu.Lock()
	s.calls[name]++
	s.mu.Unlock()
}
