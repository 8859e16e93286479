package s3trail

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/hotkeyd/hotkeyd/ingest/cloudtrail"
)

// The reader's own metrics, besides the CloudTrail reader's
// (hotkeyd_cloudtrail_files_read_total counts the objects read).
var (
	descRequests = prometheus.NewDesc("hotkeyd_cloudtrail_s3_requests_total",
		"S3 requests made to find and read CloudTrail files, by API call (ListObjectsV2, GetObject), successful or not.", []string{"call"}, nil)
	descSkipped = prometheus.NewDesc("hotkeyd_cloudtrail_s3_skipped_objects_total",
		"CloudTrail files in S3 older than max_age when first listed: recorded as read without being read.", nil, nil)
)

// Describe implements prometheus.Collector.
func (s *Source) Describe(ch chan<- *prometheus.Desc) {
	cloudtrail.DescribeStats(ch)
	ch <- descRequests
	ch <- descSkipped
}

// Collect implements prometheus.Collector.
func (s *Source) Collect(ch chan<- prometheus.Metric) {
	s.mu.Lock()
	st, files, skipped := s.stats, s.files, s.skipped
	list, get := s.calls[callList], s.calls[callGet]
	s.mu.Unlock()
	cloudtrail.CollectStats(ch, st, files)
	ch <- prometheus.MustNewConstMetric(descRequests, prometheus.CounterValue, float64(list), callList)
	ch <- prometheus.MustNewConstMetric(descRequests, prometheus.CounterValue, float64(get), callGet)
	ch <- prometheus.MustNewConstMetric(descSkipped, prometheus.CounterValue, float64(skipped))
}
