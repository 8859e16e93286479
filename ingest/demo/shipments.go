package demo

import (
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"github.com/hotkeyd/hotkeyd/ingest/streamrecord"
	"github.com/hotkeyd/hotkeyd/traffic"
)

// The shipments table is the demo's index hot spot: its writes are made as
// stream records with item images, and the writes they cause in the
// table's global index by-status are told from the images by the stream
// readers' own rules (streamrecord.IndexWrites), as a stream reader tells
// them: the Events of the index come out of IndexWrites, not from the
// workload's own hand.

// shipmentsTable is the shipments table's schema: keyed by shipment id,
// with by-status on status, projecting the manifest (about 2.5 KB, so an
// entry is three WCU).
var shipmentsTable = streamrecord.NewSchemas(map[string]traffic.KeySchema{"shipments": {
	PartitionKey: "shipment_id",
	Indexes: map[string]traffic.IndexSchema{"by-status": {
		PartitionKey: "status", SortKey: "updated",
		Projection: traffic.Projection{Type: traffic.ProjectInclude, Attributes: []string{"manifest"}},
	}},
}}).Table("shipments")

// manifest is every shipment's manifest attribute.
var manifest = &types.AttributeValueMemberS{Value: strings.Repeat("m", 2500)}

// shipment fills ev with a shipment write (a new shipment in IN_TRANSIT,
// or one delivered) and keeps the index writes it caused for IndexWrites.
func (w *Workload) shipment(ev *traffic.Event) {
	ev.Table, ev.Class, ev.Units = "shipments", traffic.Write, 3
	id := w.seq
	name, old, cur := types.OperationTypeInsert, "", ShipmentStatus
	if !w.chance(ShipmentNewShare) {
		// An earlier shipment delivered.
		id = w.rng.Uint64N(w.seq)
		name, old, cur = types.OperationTypeModify, ShipmentStatus, "DELIVERED"
	}
	ev.PK = w.key("SHIPMENT#", id)
	image := func(status string) map[string]types.AttributeValue {
		if status == "" {
			return nil
		}
		return map[string]types.AttributeValue{
			"shipment_id": &types.AttributeValueMemberS{Value: ev.PK},
			"status":      &types.AttributeValueMemberS{Value: status},
			"updated":     &types.AttributeValueMemberN{Value: strconv.FormatInt(ev.Time.UnixMilli(), 10)},
			"manifest":    manifest,
		}
	}
	rec := types.Record{EventName: name, Dynamodb: &types.StreamRecord{
		Keys:           map[string]types.AttributeValue{"shipment_id": &types.AttributeValueMemberS{Value: ev.PK}},
		OldImage:       image(old),
		NewImage:       image(cur),
		StreamViewType: types.StreamViewTypeNewAndOldImages,
	}}
	w.indexWrites, _ = streamrecord.IndexWrites(&rec, shipmentsTable, ev, w.indexWrites[:0])
}

// IndexWrites appends to dst the writes the last event of Next caused in
// its table's secondary indexes (a shipment write's, in shipments'
// by-status), and forgets them: a caller of Next that wants the whole
// workload takes them after each event, as Run does.
func (w *Workload) IndexWrites(dst []traffic.Event) []traffic.Event {
	dst = append(dst, w.indexWrites...)
	w.indexWrites = w.indexWrites[:0]
	return dst
}
