package s3trail

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// CloudTrail's layout, under the trail's prefix:
//
//	AWSLogs/[o-ORGID/]ACCOUNT/CloudTrail/REGION/YYYY/MM/DD/FILE.json.gz
//
// A region folder holds one trail's files of one account and region, named
// after the minute they were delivered: listing it in key order lists them
// in delivery order. CloudTrail-Digest/ and CloudTrail-Insight/ beside
// CloudTrail/ (and other services' logs) hold no data events and are not
// read.
var (
	// regionFolder matches a key or prefix inside a region folder; its
	// first group is the region folder.
	regionFolder = regexp.MustCompile(`^(.*?(?:^|/)AWSLogs/(?:o-[a-z0-9]+/)?[0-9]{12}/CloudTrail/[a-z0-9-]+/)`)
	// otherService matches a key inside an account's folder of another
	// kind than CloudTrail/; its first group is that folder.
	otherService = regexp.MustCompile(`^(.*?(?:^|/)AWSLogs/(?:o-[a-z0-9]+/)?[0-9]{12}/[^/]+/)`)
)

// maxStray bounds the keys outside CloudTrail's layout looked at to find
// the region folders: a bucket of another layout is not walked whole.
const maxStray = 1000

// past returns the smallest string greater than every key under folder
// (which ends with '/'): '0' follows '/'.
func past(folder string) string { return folder[:len(folder)-1] + "0" }

// regionFolders returns the region folders under the prefix, and the part
// of the prefix inside a region folder (a day folder: "2026/11/"), which
// filters the keys read. It lists one key per folder found and skips past
// the folder, so that it costs a call per folder, not per file; it needs
// no delimiter listing.
func (s *Lister) regionFolders(ctx context.Context) (folders []string, within string, err error) {
	if m := regionFolder.FindStringSubmatch(s.cfg.Prefix); m != nil {
		return []string{m[1]}, strings.TrimPrefix(s.cfg.Prefix, m[1]), nil
	}
	cursor := ""
	stray := 0
	for {
		in := &s3.ListObjectsV2Input{Bucket: aws.String(s.cfg.Bucket), Prefix: aws.String(s.cfg.Prefix), MaxKeys: aws.Int32(1)}
		if cursor != "" {
			in.StartAfter = aws.String(cursor)
		}
		page, err := s.list(ctx, in)
		if err != nil {
			return nil, "", fmt.Errorf("list s3://%s/%s: %w", s.cfg.Bucket, s.cfg.Prefix, err)
		}
		if len(page.Contents) == 0 {
			return folders, "", nil
		}
		key := aws.ToString(page.Contents[0].Key)
		if m := regionFolder.FindStringSubmatch(key); m != nil {
			folders = append(folders, m[1])
			cursor = past(m[1])
			continue
		}
		if m := otherService.FindStringSubmatch(key); m != nil {
			cursor = past(m[1])
			continue
		}
		if stray++; stray > maxStray {
			return nil, "", fmt.Errorf("list s3://%s/%s: more than %d objects outside CloudTrail's layout (AWSLogs/ACCOUNT/CloudTrail/REGION/); set prefix to the trail's", s.cfg.Bucket, s.cfg.Prefix, maxStray)
		}
		cursor = key
	}
}

// list makes one ListObjectsV2 call within CallTimeout.
func (s *Lister) list(ctx context.Context, in *s3.ListObjectsV2Input) (*s3.ListObjectsV2Output, error) {
	s.count(callList)
	cctx, cancel := context.WithTimeout(ctx, s.opts.CallTimeout)
	defer cancel()
	return s.api.ListObjectsV2(cctx, in)
}
