package s3trail

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"go.uber.org/goleak"
	"go.uber.org/zap/zaptest"

	"github.com/hotkeyd/hotkeyd/ingest/input"
	"github.com/hotkeyd/hotkeyd/internal/testenv"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// trailFile is a gzip CloudTrail file of GetItem calls on table orders,
// one per key.
func trailFile(t testing.TB, keys ...string) []byte {
	t.Helper()
	var recs []string
	for _, k := range keys {
		recs = append(recs, fmt.Sprintf(`{"eventVersion":"1.08","eventSource":"dynamodb.amazonaws.com","eventName":"GetItem","eventTime":"2026-11-22T10:00:00Z","awsRegion":"us-east-1","requestParameters":{"tableName":"orders","key":{"id":%q}}}`, k))
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	fmt.Fprintf(zw, `{"Records":[%s]}`, strings.Join(recs, ","))
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// sink is a Handler that keeps the keys of the CloudTrail records in the
// objects it reads, and rejects truncated ones, as the CloudTrail reader
// does.
type sink struct {
	mu   sync.Mutex
	keys []string
	rep  *rejects
}

func (s *sink) handle(_ context.Context, name string, body io.Reader) error {
	var file struct {
		Records []struct {
			RequestParameters struct {
				Key struct{ ID string }
			}
		}
	}
	r, err := input.Decompress(body)
	if err == nil {
		err = json.NewDecoder(r).Decode(&file)
	}
	if err != nil {
		s.rep.Reject("cloudtrail", "bad_file", fmt.Errorf("%s: %w", name, err))
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, rec := range file.Records {
		s.keys = append(s.keys, rec.RequestParameters.Key.ID)
	}
	return nil
}

func (s *sink) sorted() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Sorted(slices.Values(s.keys))
}

type rejects struct {
	mu      sync.Mutex
	reasons []string
}

func (r *rejects) Reject(_, reason string, err error) {
	r.mu.Lock()
	r.reasons = append(r.reasons, reason+": "+err.Error())
	r.mu.Unlock()
}

func (r *rejects) Error(_, reason string, err error) {
	r.mu.Lock()
	r.reasons = append(r.reasons, "error "+reason+": "+err.Error())
	r.mu.Unlock()
}

func (r *rejects) list() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.reasons...)
}

// run runs a Lister until it has read want keys in all (or fails after
// 30 s), then stops it.
func run(t *testing.T, src *Lister, got *sink, want int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- src.Run(ctx) }()
	// The files, and a listing done (the source is not ready until one
	// completed; its files are handled while it runs).
	listed := func() bool {
		err := src.Ready()
		return err == nil || !strings.Contains(err.Error(), "not listed yet")
	}
	deadline := time.Now().Add(2 * time.Minute)
	for len(got.sorted()) < want || !listed() {
		if time.Now().After(deadline) {
			cancel()
			<-done
			t.Fatalf("after %v: %d files read, want %d; ready: %v", 2*time.Minute, len(got.sorted()), want, src.Ready())
		}
		time.Sleep(20 * time.Millisecond)
	}
	// One more poll: anything beyond want would show.
	time.Sleep(3 * src.opts.Poll)
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
}

// TestS3rver reads CloudTrail files from a real S3 emulator: every region
// folder of the layout, an organization trail, not the digest files;
// a restart reads on from the checkpoint with nothing read twice or lost;
// max_age skips old objects on a first start; a truncated file is counted
// and the files after it are read.
func TestS3rver(t *testing.T) {
	srv := testenv.StartS3rver(t)
	ctx := context.Background()
	const bucket = "trail-bucket"
	if _, err := srv.Client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	put := func(key string, body []byte) {
		t.Helper()
		if _, err := srv.Client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(body)}); err != nil {
			t.Fatalf("put %s: %v", key, err)
		}
	}
	east := "logs/AWSLogs/111122223333/CloudTrail/us-east-1/2026/11/22/"
	west := "logs/AWSLogs/111122223333/CloudTrail/eu-west-1/2026/11/22/"
	org := "logs/AWSLogs/o-abc123/444455556666/CloudTrail/us-east-1/2026/11/22/"
	name := func(folder, minute string) string {
		return folder + "111122223333_CloudTrail_us-east-1_20261122T" + minute + "Z_x.json.gz"
	}
	put(name(east, "1000"), trailFile(t, "a1", "a2"))
	put(name(east, "1005"), trailFile(t, "a3"))
	put(name(west, "1000"), trailFile(t, "b1"))
	put(name(org, "1000"), trailFile(t, "c1"))
	put("logs/AWSLogs/111122223333/CloudTrail-Digest/us-east-1/2026/11/22/digest.json.gz", trailFile(t, "digest"))
	put("logs/other/readme.json", []byte("not a trail"))

	dir := t.TempDir()
	cfg := Config{Bucket: bucket, Prefix: "logs/", Endpoint: srv.Endpoint}
	opts := Options{CheckpointDir: dir, Poll: 50 * time.Millisecond}
	newSource := func(opts Options, got *sink) *Lister {
		t.Helper()
		src, err := NewWithClient(cfg, opts, srv.Client, got.handle, zaptest.NewLogger(t), got.rep)
		if err != nil {
			t.Fatal(err)
		}
		return src
	}
	first := &sink{rep: &rejects{}}
	src := newSource(opts, first)
	run(t, src, first, 5)
	if got, want := first.sorted(), []string{"a1", "a2", "a3", "b1", "c1"}; !slices.Equal(got, want) {
		t.Fatalf("first run read %v, want %v", got, want)
	}
	if err := src.Ready(); err != nil {
		t.Errorf("Ready: %v", err)
	}

	// New files while stopped, one of them truncated, in a new day folder
	// too: the restart reads what is new, once.
	put(name(east, "1010"), trailFile(t, "a4"))
	cut := trailFile(t, "lost1", "lost2")
	put(name(east, "1015"), cut[:len(cut)/2])
	put(strings.Replace(name(east, "0000"), "/22/", "/23/", 1), trailFile(t, "a5"))
	put(name(west, "1010"), trailFile(t, "b2"))
	rep := &rejects{}
	second := &sink{rep: rep}
	run(t, newSource(opts, second), second, 3)
	if got, want := second.sorted(), []string{"a4", "a5", "b2"}; !slices.Equal(got, want) {
		t.Errorf("after restart read %v, want %v", got, want)
	}
	if r := rep.list(); len(r) != 1 || !strings.HasPrefix(r[0], "bad_file: s3://"+bucket+"/"+name(east, "1015")) {
		t.Errorf("rejects %q, want the truncated file's bad_file", r)
	}

	// max_age on a first start: the day folders before it are not even
	// listed (S3 keeps an object's LastModified as it was put, so the
	// folders are what tells old files here).
	ap := "logs/AWSLogs/111122223333/CloudTrail/ap-south-1/"
	today := time.Now().UTC()
	put(ap+today.AddDate(0, 0, -3).Format("2006/01/02/")+"old.json.gz", trailFile(t, "old"))
	put(ap+today.Format("2006/01/02/")+"new.json.gz", trailFile(t, "new"))
	third := &sink{rep: &rejects{}}
	cfg.Prefix = ap
	run(t, newSource(Options{CheckpointDir: t.TempDir(), Poll: 50 * time.Millisecond, MaxAge: time.Hour}, third), third, 1)
	if got := third.sorted(); !slices.Equal(got, []string{"new"}) {
		t.Errorf("with max_age, read %v; want [new]", got)
	}
}

// TestPrefixInsideLayout reads from a prefix that names a region folder
// or a day in it.
func TestPrefixInsideLayout(t *testing.T) {
	for prefix, want := range map[string][]string{
		"AWSLogs/111122223333/CloudTrail/us-east-1/":           {"AWSLogs/111122223333/CloudTrail/us-east-1/", ""},
		"x/AWSLogs/111122223333/CloudTrail/us-east-1/2026/11/": {"x/AWSLogs/111122223333/CloudTrail/us-east-1/", "2026/11/"},
	} {
		s := &Lister{cfg: Config{Bucket: "b", Prefix: prefix}}
		folders, within, err := s.regionFolders(context.Background())
		if err != nil || len(folders) != 1 || folders[0] != want[0] || within != want[1] {
			t.Errorf("%s: %v %q %v", prefix, folders, within, err)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	for cfg, want := range map[Config]string{
		{}:                                   "bucket: required",
		{Bucket: "s3://b"}:                   "bucket: ",
		{Bucket: "b", Prefix: "/AWSLogs"}:    "prefix: ",
		{Bucket: "b", Endpoint: "localhost"}: "endpoint: ",
		{Bucket: "b", Prefix: "AWSLogs/"}:    "",
	} {
		err := cfg.Validate()
		if (want == "") != (err == nil) || (err != nil && !strings.HasPrefix(err.Error(), want)) {
			t.Errorf("%+v: %v, want %q", cfg, err, want)
		}
	}
}

// TestStateFolder checks the checkpoint's folder: one that is missing is
// made at the first save, so that a restart reads nothing again; one
// that cannot be made keeps the source not ready for as long as it
// lasts, across polls that list the bucket fine, and is reported once.
func TestStateFolder(t *testing.T) {
	srv := testenv.StartS3rver(t)
	ctx := context.Background()
	const bucket = "state-bucket"
	if _, err := srv.Client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	key := "AWSLogs/111122223333/CloudTrail/us-east-1/2026/11/22/111122223333_CloudTrail_us-east-1_20261122T1000Z_x.json.gz"
	if _, err := srv.Client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(trailFile(t, "a1"))}); err != nil {
		t.Fatal(err)
	}
	cfg := Config{Bucket: bucket, Endpoint: srv.Endpoint}
	start := func(dir string) (*Lister, *sink) {
		t.Helper()
		got := &sink{rep: &rejects{}}
		src, err := NewWithClient(cfg, Options{CheckpointDir: dir, Poll: 50 * time.Millisecond}, srv.Client, got.handle, zaptest.NewLogger(t), got.rep)
		if err != nil {
			t.Fatal(err)
		}
		return src, got
	}

	missing := filepath.Join(t.TempDir(), "var", "lib", "hotkeyd")
	src, got := start(missing)
	run(t, src, got, 1)
	if err := src.Ready(); err != nil {
		t.Errorf("Ready with a missing folder: %v", err)
	}
	if _, err := os.Stat(filepath.Join(missing, StateFile)); err != nil {
		t.Errorf("the state was not saved in the missing folder: %v", err)
	}
	again, got2 := start(missing)
	run(t, again, got2, 0)
	if n := len(got2.sorted()); n != 0 {
		t.Errorf("a restart read %d records again", n)
	}

	// A regular file where the folder should be, put there once the
	// source started without a state.
	blocked := filepath.Join(t.TempDir(), "state")
	src, got = start(blocked)
	if err := os.WriteFile(blocked, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	run(t, src, got, 1)
	if err := src.Ready(); err == nil || !strings.Contains(err.Error(), "write state") {
		t.Errorf("Ready = %v after polls that listed the bucket, want the state that cannot be written", err)
	}
	if errs := got.rep.list(); len(errs) != 1 || !strings.HasPrefix(errs[0], "error checkpoint") {
		t.Errorf("reported %q, want the checkpoint error once", errs)
	}
}
