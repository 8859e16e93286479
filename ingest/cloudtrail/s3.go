package cloudtrail

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/hotkeyd/hotkeyd/ingest/cloudtrail/s3trail"
	"github.com/hotkeyd/hotkeyd/traffic"
)

// S3Source reads CloudTrail files straight from S3: package s3trail lists
// the new objects of the bucket in order and checkpoints the last key read,
// and each object is decoded as a delivered file is. It implements
// traffic.Source, traffic.Readier and prometheus.Collector.
type S3Source struct {
	reading
	lister *s3trail.Lister
	sink   traffic.Sink // set by Run, before the Lister starts
}

// NewS3 returns an S3Source for cfg.S3 with an S3 client from the SDK's
// default credential chain. The bucket is listed every PollInterval, or
// every s3trail.DefaultPoll when it is DefaultPollInterval (the folder's
// default): a listing is a paid request per region folder.
func NewS3(cfg Config, log *zap.Logger, rep traffic.Reporter) (*S3Source, error) {
	return newS3(cfg, log, rep, func(opts s3trail.Options, h s3trail.Handler, log *zap.Logger) (*s3trail.Lister, error) {
		return s3trail.New(*cfg.S3, opts, h, log, rep)
	})
}

// NewS3WithClient is NewS3 with the S3 client given.
func NewS3WithClient(cfg Config, api s3trail.API, log *zap.Logger, rep traffic.Reporter) (*S3Source, error) {
	return newS3(cfg, log, rep, func(opts s3trail.Options, h s3trail.Handler, log *zap.Logger) (*s3trail.Lister, error) {
		return s3trail.NewWithClient(*cfg.S3, opts, api, h, log, rep)
	})
}

func newS3(cfg Config, log *zap.Logger, rep traffic.Reporter, lister func(s3trail.Options, s3trail.Handler, *zap.Logger) (*s3trail.Lister, error)) (*S3Source, error) {
	if cfg.S3 == nil {
		return nil, errors.New("cloudtrail: s3: not set")
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("cloudtrail: %w", err)
	}
	if log == nil {
		log = zap.NewNop()
	}
	if rep == nil {
		rep = traffic.NopReporter{}
	}
	log = log.Named("cloudtrail")
	poll := cfg.PollInterval
	if poll == DefaultPollInterval {
		poll = s3trail.DefaultPoll
	}
	s := &S3Source{reading: newReading(cfg.Tables, log, rep)}
	var err error
	s.lister, err = lister(s3trail.Options{
		Source: SourceName, CheckpointDir: cfg.CheckpointDir, MaxAge: cfg.MaxAge, Poll: poll,
		Polled: func() { s.lane.Idle() }, // every object listed was read
	}, s.object, log)
	if err != nil {
		return nil, fmt.Errorf("cloudtrail: %w", err)
	}
	return s, nil
}

// Name returns "cloudtrail".
func (s *S3Source) Name() string { return SourceName }

// Ready returns nil once the bucket was listed and while it can be.
func (s *S3Source) Ready() error { return s.lister.Ready() }

// Run reads the bucket's new files until ctx is done. It returns nil when
// ctx is done, and the sink's error if it refuses a batch otherwise.
func (s *S3Source) Run(ctx context.Context, sink traffic.Sink) error {
	s.sink = sink
	return s.lister.Run(ctx)
}

// object decodes one object (s3trail.Handler).
func (s *S3Source) object(ctx context.Context, name string, body io.Reader) error {
	return s.read(ctx, body, name, s.sink)
}

// Describe implements prometheus.Collector: the CloudTrail reader's
// metrics and the S3 requests.
func (s *S3Source) Describe(ch chan<- *prometheus.Desc) {
	s.reading.Describe(ch)
	s.lister.Describe(ch)
}

// Collect implements prometheus.Collector.
func (s *S3Source) Collect(ch chan<- prometheus.Metric) {
	s.reading.Collect(ch)
	s.lister.Collect(ch)
}
