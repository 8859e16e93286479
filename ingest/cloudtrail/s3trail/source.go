package s3trail

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/hotkeyd/hotkeyd/internal/awsclient"
	"github.com/hotkeyd/hotkeyd/traffic"
)

// API is the part of the S3 client the reader uses. *s3.Client implements
// it; tests wrap it to inject faults.
type API interface {
	ListObjectsV2(ctx context.Context, in *s3.ListObjectsV2Input, opts ...func(*s3.Options)) (*s3.ListObjectsV2Output, error)
	GetObject(ctx context.Context, in *s3.GetObjectInput, opts ...func(*s3.Options)) (*s3.GetObjectOutput, error)
}

// Handler reads one object: name is "s3://BUCKET/KEY", body its content
// (as stored: a reader of CloudTrail files decompresses it). It reports
// what is wrong with the object itself (a corrupt file) and returns nil;
// an error it returns stops the Lister (a sink refusing a batch, ctx).
type Handler func(ctx context.Context, name string, body io.Reader) error

// Options are how a Lister reads.
type Options struct {
	// Source is the source label of the errors reported.
	Source string
	// CheckpointDir is where StateFile keeps the last key read per region
	// folder. Empty keeps it in memory: a restart reads every object
	// again (within MaxAge).
	CheckpointDir string
	// MaxAge, when positive, skips the objects older than this when they
	// are first listed (they are recorded as read): a first start does
	// not replay months of history as current traffic, and does not list
	// the days before it.
	MaxAge time.Duration
	// Poll is how often the bucket is listed (DefaultPoll when 0).
	Poll time.Duration
	// CallTimeout bounds each S3 call (DefaultCallTimeout when 0).
	CallTimeout time.Duration
	// Polled, when set, is called after each poll that read every new
	// object listed.
	Polled func()
}

// Lister lists the CloudTrail files of a bucket and hands the new ones to
// its Handler, in key order per region folder. It implements
// traffic.Readier and prometheus.Collector (its S3 requests).
type Lister struct {
	cfg  Config
	opts Options
	api  API
	h    Handler
	log  *zap.Logger
	rep  traffic.Reporter
	now  func() time.Time

	mu       sync.Mutex
	skipped  uint64
	calls    map[string]uint64
	notReady error
	saved    error // the last error saving the checkpoint, until a save succeeds

	// Owned by Run.
	last map[string]string // region folder -> last key read
}

// S3 calls, the values of hotkeyd_cloudtrail_s3_requests_total's call label.
const (
	callList = "ListObjectsV2"
	callGet  = "GetObject"
)

// Reasons of hotkeyd_source_errors_total this reader adds to its
// Handler's.
const (
	// ReasonS3 is an S3 call that failed: retried at the next poll.
	ReasonS3 = "s3"
)

var (
	_ traffic.Readier      = (*Lister)(nil)
	_ prometheus.Collector = (*Lister)(nil)
)

// New returns a Lister of cfg's bucket with an S3 client from the SDK's
// default credential chain, cfg.Region and cfg.Endpoint (awsclient: the
// SDK's retries off, as a failed call is tried again at the next poll,
// and its log lines to log).
func New(cfg Config, opts Options, h Handler, log *zap.Logger, rep traffic.Reporter) (*Lister, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	awsCfg, err := awsclient.Config(context.Background(), cfg.Region, log)
	if err != nil {
		return nil, err
	}
	client := s3.NewFromConfig(awsCfg, func(o *s3.Options) {
		awsclient.Endpoint(&o.BaseEndpoint, cfg.Endpoint)
		// An emulator (s3rver, MinIO) serves buckets by path, not by
		// host name.
		o.UsePathStyle = cfg.Endpoint != ""
	})
	return NewWithClient(cfg, opts, client, h, log, rep)
}

// NewWithClient is New with the S3 client given. It reads the checkpoint
// file and starts nothing: Run does the work.
func NewWithClient(cfg Config, opts Options, api API, h Handler, log *zap.Logger, rep traffic.Reporter) (*Lister, error) {
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
		rep = traffic.NopReporter{}
	}
	last, err := loadState(opts.CheckpointDir, cfg.Bucket)
	if err != nil {
		return nil, fmt.Errorf("cloudtrail s3: %w", err)
	}
	log = log.With(zap.String("bucket", cfg.Bucket), zap.String("prefix", cfg.Prefix))
	return &Lister{
		cfg: cfg, opts: opts, api: api, h: h, log: log, rep: rep,
		now:      time.Now,
		calls:    map[string]uint64{callList: 0, callGet: 0},
		notReady: errors.New("bucket not listed yet"),
		last:     last,
	}, nil
}

// Ready returns nil once the bucket was listed and while it can be, or
// what is wrong.
func (s *Lister) Ready() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return errors.Join(s.notReady, s.saved)
}

// Run lists the bucket and hands the new objects to the Handler every
// Poll until ctx is done. S3 errors are counted and retried at the next
// poll; it returns nil when ctx is done, and the Handler's error otherwise.
func (s *Lister) Run(ctx context.Context) error {
	s.log.Info("reading CloudTrail files from S3", zap.String("checkpoint_dir", s.opts.CheckpointDir),
		zap.Int("folders_read_before", len(s.last)))
	for {
		err := s.poll(ctx)
		var he *handlerError
		switch {
		case ctx.Err() != nil:
			return nil
		case errors.As(err, &he):
			return he.err
		case err != nil:
			s.rep.Error(s.opts.Source, ReasonS3, err)
			s.setReady(err)
		default:
			s.setReady(nil)
		}
		if s.opts.Polled != nil && err == nil {
			s.opts.Polled()
		}
		s.mu.Lock()
		unsaved := s.saved != nil
		s.mu.Unlock()
		if unsaved {
			s.save() // try again every poll until it succeeds
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

func (s *Lister) setReady(err error) {
	s.mu.Lock()
	s.notReady = err
	s.mu.Unlock()
}

// poll finds the region folders and reads what is new in each.
func (s *Lister) poll(ctx context.Context) error {
	folders, within, err := s.regionFolders(ctx)
	if err != nil {
		return err
	}
	var errs []error
	for _, f := range folders {
		if err := s.readFolder(ctx, f, within); err != nil {
			var he *handlerError
			if errors.As(err, &he) || ctx.Err() != nil {
				return err
			}
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// readFolder lists a region folder after its checkpoint, in key order, and
// reads every object, saving the checkpoint after each.
func (s *Lister) readFolder(ctx context.Context, folder, within string) error {
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
			} else if err := s.readObject(ctx, key); err != nil {
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

// readObject hands one object to the Handler. An object that cannot be
// fetched is an error (retried at the next poll); what the Handler makes
// of it (a corrupt file counted and passed over) is its own.
func (s *Lister) readObject(ctx context.Context, key string) error {
	// The timeout covers reading the body too: an object is a few MB.
	cctx, cancel := context.WithTimeout(ctx, s.opts.CallTimeout)
	defer cancel()
	s.count(callGet)
	out, err := s.api.GetObject(cctx, &s3.GetObjectInput{Bucket: aws.String(s.cfg.Bucket), Key: aws.String(key)})
	if err != nil {
		return fmt.Errorf("get s3://%s/%s: %w", s.cfg.Bucket, key, err)
	}
	defer out.Body.Close()
	if err := s.h(cctx, "s3://"+s.cfg.Bucket+"/"+key, out.Body); err != nil {
		return &handlerError{err}
	}
	s.log.Debug("read object", zap.String("key", key))
	return nil
}

// save writes the checkpoint; a failure is counted (once while it lasts)
// and makes the source unready until a save succeeds.
func (s *Lister) save() {
	err := saveState(s.opts.CheckpointDir, s.cfg.Bucket, s.last)
	s.mu.Lock()
	again := err != nil && s.saved != nil && s.saved.Error() == err.Error()
	s.saved = err
	s.mu.Unlock()
	if err != nil && !again {
		s.rep.Error(s.opts.Source, "checkpoint", err)
	}
}

// handlerError is the Handler's error, which stops the Lister.
type handlerError struct{ err error }

func (e *handlerError) Error() string { return e.err.Error() }
func (e *handlerError) Unwrap() error { return e.err }

// count counts one S3 call.
func (s *Lister) count(name string) {
	s.mu.Lock()
	s.calls[name]++
	s.mu.Unlock()
}
