// Package streamrecord decodes DynamoDB stream records into write Events:
// the shared part of every reader that sees them. It holds the one-pass
// decoder of GetRecords answers (DecodeGetRecords, which the Streams
// reader installs in place of the SDK's), Map, which turns one record into
// an Event (keys in canonical text form, units from the record size, Time
// to Live deletes told apart), and the DumpDecoder, which reads records as
// users keep them (Lambda events, `aws dynamodbstreams get-records` and
// `aws kinesis get-records` output, Kinesis Data Streams for DynamoDB
// payloads, Firehose files) for hotkeyd analyze, the JSON-lines follower
// and the Kinesis reader.
//
// It knows nothing of shards, checkpoints or AWS clients: readers import
// it, it imports no reader.
package streamrecord
