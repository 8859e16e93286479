package traffic

import "testing"

func TestThrottleReasons(t *testing.T) {
	all := ThrottleReasons()
	if len(all) != 16 {
		t.Fatalf("%d reasons, want DynamoDB's 16", len(all))
	}
	seen := map[string]bool{}
	for _, r := range all {
		name := r.String()
		if seen[name] {
			t.Errorf("%s twice", name)
		}
		seen[name] = true
		back, ok := ParseThrottleReason(name)
		if !ok || back != r {
			t.Errorf("ParseThrottleReason(%q) = %v %v, want %v", name, back, ok, r)
		}
		if !r.Known() || r.Limit() == LimitUnknown {
			t.Errorf("%s: known %v, limit %v", name, r.Known(), r.Limit())
		}
	}
	for _, tc := range []struct {
		name  string
		index bool
		class Class
		limit ThrottleLimit
	}{
		{"TableReadKeyRangeThroughputExceeded", false, Read, LimitKeyRange},
		{"TableWriteKeyRangeThroughputExceeded", false, Write, LimitKeyRange},
		{"TableWriteProvisionedThroughputExceeded", false, Write, LimitProvisioned},
		{"IndexWriteAccountLimitExceeded", true, Write, LimitAccount},
		{"TableReadMaxOnDemandThroughputExceeded", false, Read, LimitOnDemandMax},
		{"IndexReadProvisionedThroughputExceeded", true, Read, LimitProvisioned},
	} {
		r, ok := ParseThrottleReason(tc.name)
		if !ok || r.Index() != tc.index || r.Class() != tc.class || r.Limit() != tc.limit {
			t.Errorf("%s: index %v class %v limit %v ok %v", tc.name, r.Index(), r.Class(), r.Limit(), ok)
		}
		if c := r.Cause(); c.Index() != tc.index || c.Limit() != tc.limit {
			t.Errorf("%s: cause %d: index %v limit %v", tc.name, c, c.Index(), c.Limit())
		}
	}
	for _, bad := range []string{"", "Table", "TableWrite", "TableWriteThrottled", "tablewriteprovisionedthroughputexceeded",
		"TableWriteProvisionedThroughputExceededX", "GSIWriteAccountLimitExceeded", "TableUpdateKeyRangeThroughputExceeded"} {
		if r, ok := ParseThrottleReason(bad); ok {
			t.Errorf("ParseThrottleReason(%q) = %v, want refused", bad, r)
		}
	}
	var none ThrottleReason
	if none.Known() || none.String() != "" || none.Limit() != LimitUnknown || none.Cause() != 0 {
		t.Errorf("zero reason: %v %q %v", none.Known(), none.String(), none.Limit())
	}
	if r := MakeThrottleReason(true, Write, LimitUnknown); r.String() != "IndexWrite" || !r.Index() || r.Cause().Limit() != LimitUnknown {
		t.Errorf("index, limit unknown: %q", r.String())
	}
}

func TestFindThrottleReason(t *testing.T) {
	for text, want := range map[string]string{
		"Throughput exceeds the limit (TableWriteKeyRangeThroughputExceeded).":                                  "TableWriteKeyRangeThroughputExceeded",
		"IndexReadAccountLimitExceeded":                                                                         "IndexReadAccountLimitExceeded",
		"reasons: [Table Index XTableWriteKeyRangeThroughputExceeded, IndexWriteProvisionedThroughputExceeded]": "IndexWriteProvisionedThroughputExceeded",
		"The level of configured provisioned throughput for the table was exceeded.":                            "",
		"": "",
	} {
		r, ok := FindThrottleReason(text)
		if r.String() != want || ok != (want != "") {
			t.Errorf("FindThrottleReason(%q) = %q %v, want %q", text, r, ok, want)
		}
	}
}

func TestParseResourceARN(t *testing.T) {
	for arn, want := range map[string][2]string{
		"arn:aws:dynamodb:us-east-1:123456789012:table/orders":                 {"orders", ""},
		"arn:aws:dynamodb:us-east-1:123456789012:table/orders/index/by-status": {"orders", "by-status"},
		"arn:aws-cn:dynamodb:cn-north-1:123456789012:table/t.1_x/index/GSI1":   {"t.1_x", "GSI1"},
	} {
		table, index, err := ParseResourceARN(arn)
		if err != nil || table != want[0] || index != want[1] {
			t.Errorf("ParseResourceARN(%q) = %q %q %v", arn, table, index, err)
		}
	}
	for _, bad := range []string{"", "orders", "arn:aws:s3:::bucket/key", "arn:aws:dynamodb:us-east-1:1:table/",
		"arn:aws:dynamodb:us-east-1:1:table/a b", "arn:aws:dynamodb:us-east-1:1:table/orders/stream/2024", "arn:aws:dynamodb:us-east-1:1:table/orders/index/"} {
		if _, _, err := ParseResourceARN(bad); err == nil {
			t.Errorf("ParseResourceARN(%q) accepted", bad)
		}
	}
}
