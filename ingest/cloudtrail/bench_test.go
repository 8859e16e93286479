package cloudtrail

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/hotkeyd/hotkeyd/traffic"
)

// genRecord writes one realistic record (the userIdentity, TLS details and
// resources of a real 2025 capture, about 1.3 KB) of call op.
func genRecord(b *strings.Builder, rng *rand.Rand, i int) {
	key := func() string {
		// Zipf-like skew: a few hot customers.
		return fmt.Sprintf("C-%d", int(rng.ExpFloat64()*50))
	}
	var name, rp, extra string
	switch n := rng.IntN(100); {
	case n < 40:
		name, rp = "GetItem", fmt.Sprintf(`{"tableName":"orders","key":{"customer":%q,"order":"O-%d"},"consistentRead":false}`, key(), i)
	case n < 60:
		name, rp = "PutItem", fmt.Sprintf(`{"tableName":"orders","key":{"customer":%q,"order":"O-%d"},"items":["customer","order","total","status"]}`, key(), i)
	case n < 80:
		name, rp = "Query", fmt.Sprintf(`{"tableName":"orders","indexName":"status-index","key":{"status":"OPEN-%d"},"keyConditionExpression":"#n0 = :v0","expressionAttributeNames":{"#n0":"status"}}`, rng.IntN(5))
	case n < 90:
		var keys []string
		for j := 0; j < 10; j++ {
			keys = append(keys, fmt.Sprintf(`{"customer":%q,"order":"O-%d"}`, key(), rng.IntN(1e6)))
		}
		name, rp = "BatchGetItem", `{"requestItems":{"orders":{"keys":[`+strings.Join(keys, ",")+`]}}}`
	case n < 95:
		name, rp = "UpdateItem", fmt.Sprintf(`{"tableName":"orders","key":{"customer":%q,"order":"O-%d"},"updateExpression":"SET #s = :s"}`, key(), i)
		extra = `"errorCode":"ProvisionedThroughputExceededException","errorMessage":"The level of configured provisioned throughput for the table was exceeded.",`
	default:
		name, rp = "DescribeTable", `{"tableName":"orders"}`
	}
	fmt.Fprintf(b, `{"eventVersion":"1.10","userIdentity":{"type":"AssumedRole","principalId":"AROAXXXXXXXXXXXXXXXXX:i-0123456789abcdef0","arn":"arn:aws:sts::123456789012:assumed-role/orders-service/i-0123456789abcdef0","accountId":"123456789012","accessKeyId":"ASIAXXXXXXXXXXXXXXXX","sessionContext":{"sessionIssuer":{"type":"Role","principalId":"AROAXXXXXXXXXXXXXXXXX","arn":"arn:aws:iam::123456789012:role/orders-service","accountId":"123456789012","userName":"orders-service"},"attributes":{"creationDate":"2026-11-22T08:24:22Z","mfaAuthenticated":"false"},"ec2RoleDelivery":"2.0"}},"eventTime":"2026-11-22T10:%02d:%02dZ","eventSource":"dynamodb.amazonaws.com","eventName":%q,"awsRegion":"us-east-1","sourceIPAddress":"10.0.%d.%d","userAgent":"aws-sdk-go-v2/1.30.0 os/linux lang/go#1.26 md/GOOS#linux md/GOARCH#amd64 api/dynamodb#1.34.0",%s"requestParameters":%s,"responseElements":null,"requestID":"EXAMPLE%08dNSU51S3GAVUKVVV4KQNSO5AEMVJF66Q9ASUAAJG","eventID":"ada136ef-f5a4-4730-9fa9-%012d","readOnly":true,"resources":[{"accountId":"123456789012","type":"AWS::DynamoDB::Table","ARN":"arn:aws:dynamodb:us-east-1:123456789012:table/orders"}],"eventType":"AwsApiCall","apiVersion":"2012-08-10","managementEvent":false,"recipientAccountId":"123456789012","eventCategory":"Data","tlsDetails":{"tlsVersion":"TLSv1.3","cipherSuite":"TLS_AES_128_GCM_SHA256","clientProvidedHostHeader":"dynamodb.us-east-1.amazonaws.com"}}`,
		(i/60)%60, i%60, name, rng.IntN(256), rng.IntN(256), extra, rp, i, i)
}

// genFile returns a {"Records":[...]} file of n records, as CloudTrail
// writes it (one line).
func genFile(n int) []byte {
	rng := rand.New(rand.NewPCG(1, 2))
	var b strings.Builder
	b.WriteString(`{"Records":[`)
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		genRecord(&b, rng, i)
	}
	b.WriteString("]}")
	return []byte(b.String())
}

// BenchmarkDecode measures the decoder on a generated 20 000-record file
// (about 28 MB plain): events per second on one core (the decoder is
// single-threaded), plain and gzip.
func BenchmarkDecode(b *testing.B) {
	plain := genFile(20000)
	var zipped bytes.Buffer
	zipped.Write(gz(b, string(plain)))
	schemas := map[string]traffic.KeySchema{"orders": {PartitionKey: "customer", SortKey: "order"}}
	for _, c := range []struct {
		name string
		in   []byte
	}{{"plain", plain}, {"gzip", zipped.Bytes()}} {
		b.Run(c.name, func(b *testing.B) {
			var events, records uint64
			sink := traffic.SinkFunc(func(context.Context, []traffic.Event) error { return nil })
			d := NewDecoder(schemas, nil, nil)
			b.SetBytes(int64(len(plain)))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				st, err := d.Decode(context.Background(), bytes.NewReader(c.in), "bench", sink)
				if err != nil || st.Rejected != 0 {
					b.Fatalf("%v %+v", err, st)
				}
				events += st.Events + st.Throttled
				records += st.Records
			}
			sec := b.Elapsed().Seconds()
			b.ReportMetric(float64(events)/sec, "events/s")
			b.ReportMetric(float64(records)/sec, "records/s")
			b.ReportMetric(float64(len(c.in)), "input-bytes")
		})
	}
}

// BenchmarkDecodeBaselineEncodingJSON is the baseline for BenchmarkDecode:
// the same file streamed with encoding/json (Records tokens, each record
// decoded into a struct of the fields the reader needs), without mapping
// the records to Events.
func BenchmarkDecodeBaselineEncodingJSON(b *testing.B) {
	plain := genFile(20000)
	type record struct {
		EventTime         string         `json:"eventTime"`
		EventSource       string         `json:"eventSource"`
		EventName         string         `json:"eventName"`
		ErrorCode         string         `json:"errorCode"`
		RequestParameters map[string]any `json:"requestParameters"`
	}
	b.SetBytes(int64(len(plain)))
	b.ReportAllocs()
	var records uint64
	for i := 0; i < b.N; i++ {
		dec := json.NewDecoder(bytes.NewReader(plain))
		for _, want := range []json.Token{json.Delim('{'), "Records", json.Delim('[')} {
			if tok, err := dec.Token(); err != nil || tok != want {
				b.Fatalf("token %v %v", tok, err)
			}
		}
		for dec.More() {
			var r record
			if err := dec.Decode(&r); err != nil {
				b.Fatal(err)
			}
			records++
		}
	}
	b.ReportMetric(float64(records)/b.Elapsed().Seconds(), "records/s")
}
