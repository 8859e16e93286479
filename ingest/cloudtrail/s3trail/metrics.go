package s3trail

import "github.com/prometheus/client_golang/prometheus"

// The Lister's own metrics; its Handler counts the files it reads.
var (
	descRequests = prometheus.NewDesc("hotkeyd_cloudtrail_s3_requests_total",
		"S3 requests made to find and read CloudTrail files, by API call (ListObjectsV2, GetObject), successful or not.", []string{"call"}, nil)
	descSkipped = prometheus.NewDesc("hotkeyd_cloudtrail_s3_skipped_objects_total",
		"CloudTrail files in S3 older than max_age when first listed: recorded as read without being read.", nil, nil)
)

// Describe implements prometheus.Collector.
func (s *Lister) Describe(ch chan<- *prometheus.Desc) {
	ch <- descRequests
	ch <- descSkipped
}

// Collect implements prometheus.Collector.
func (s *Lister) Collect(ch chan<- prometheus.Metric) {
	s.mu.Lock()
	skipped := s.skipped
	list, get := s.calls[callList], s.calls[callGet]
	s.mu.Unlock()
	ch <- prometheus.MustNewConstMetric(descRequests, prometheus.CounterValue, float64(list), callList)
	ch <- prometheus.MustNewConstMetric(descRequests, prometheus.CounterValue, float64(get), callGet)
	ch <- prometheus.MustNewConstMetric(descSkipped, prometheus.CounterValue, float64(skipped))
}
