package streamrecord

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"github.com/hotkeyd/hotkeyd/traffic"
)

// The writes a table write causes in the table's secondary indexes, told
// from the record's item images by DynamoDB's rules ("Provisioned
// throughput considerations for global secondary indexes" and "... for
// local secondary indexes" in the DynamoDB developer guide; the rules and
// their sources are in docs/how-it-decides.md). For each index, an item is
// in it when it has the index's key attributes (a sparse index holds only
// the items that do):
//
//   - in the index after the write and not before (a new item, or an
//     update that gave it the key): one write, a put on the new key;
//   - before and not after (a removal, or an update that took the key
//     away): one write, a delete on the old key;
//   - before and after under another key (an update of the index key):
//     two writes, a delete on the old key and a put on the new one;
//   - before and after under the same key: one write when a projected
//     attribute changed (every change, for an ALL projection), none
//     otherwise ("if a write to a table does not require a global
//     secondary index update, then no write capacity is consumed");
//   - in neither: none.
//
// A write's units are its index entry's size rounded up to the next KB:
// the table's and the index's key attributes, the projected attributes
// and 100 bytes of overhead ("Storage considerations"); an update in
// place counts the larger of the entry before and after, as UpdateItem
// does for items. A global index's write is an Event of TABLE/INDEX on
// the index's partition key; a local index's entries live in the table's
// partition of the item ("Item collections and partitions") and its
// writes consume the table's capacity, so they add to the table write's
// units.
//
// The stream's view type decides what the record shows: KEYS_ONLY no
// image, NEW_IMAGE no image before an update or a removal, OLD_IMAGE none
// after an insert or an update. What the images do not show is not
// guessed: a write is counted only when the images make it certain (with
// one image of an update, the write on the key that image shows when the
// index projects ALL, whose every change rewrites the entry), and the
// record is said to be incomplete.

// indexOverhead is DynamoDB's per-entry overhead of a secondary index.
const indexOverhead = 100

// AppendWrites appends to dst a record's table write ev, then the writes
// it caused in the table's secondary indexes (IndexWrites): the table
// write first, with its local indexes' units. A write to a table with
// indexes whose images could not tell every index write is counted in
// gaps (nil counts nothing) under its table and its stream's view type,
// and complete is false.
func AppendWrites(dst []traffic.Event, r *types.Record, t *Table, ev traffic.Event, gaps *Gaps) (out []traffic.Event, complete bool) {
	at := len(dst)
	dst = append(dst, ev)
	if !t.HasIndexes() {
		return dst, true
	}
	dst, complete = IndexWrites(r, t, &ev, dst)
	dst[at].Units = ev.Units
	if !complete {
		gaps.Add(ev.Table, string(r.Dynamodb.StreamViewType))
	}
	return dst, complete
}

// IndexWrites appends to dst the writes record r (mapped to ev, its time
// final) causes in the global secondary indexes of t, and adds those of
// its local secondary indexes to ev.Units. complete is false when the
// record's images (its stream's view type) could not tell every write, or
// an index key in them is a number DynamoDB cannot hold; then only the
// writes they make certain are counted.
func IndexWrites(r *types.Record, t *Table, ev *traffic.Event, dst []traffic.Event) (out []traffic.Event, complete bool) {
	if !t.HasIndexes() || r.Dynamodb == nil {
		return dst, true
	}
	sr := r.Dynamodb
	op := r.EventName
	oldImg, newImg := sr.OldImage, sr.NewImage
	// An insert had no item before it, a removal none after it.
	oldKnown := op == types.OperationTypeInsert || oldImg != nil
	newKnown := op == types.OperationTypeRemove || newImg != nil
	if op == types.OperationTypeInsert {
		oldImg = nil
	}
	if op == types.OperationTypeRemove {
		newImg = nil
	}
	complete = oldKnown && newKnown
	for i := range t.Indexes {
		ix := &t.Indexes[i]
		var old, cur entry
		if oldImg != nil {
			old = entryOf(oldImg, ix, &t.Key)
		}
		if newImg != nil {
			cur = entryOf(newImg, ix, &t.Key)
		}
		if old.unreadable || cur.unreadable {
			// A key value DynamoDB cannot hold: the record is not what
			// DynamoDB wrote, and this index's write cannot be told.
			complete = false
			continue
		}
		var ws [2]write
		n := 0
		switch {
		case oldKnown && newKnown:
			switch {
			case old.in && cur.in && old.pk == cur.pk && old.sk == cur.sk:
				if op != types.OperationTypeInsert && projectedChanged(ix, oldImg, newImg) {
					ws[n] = write{cur.pk, cur.sk, max(old.size, cur.size)}
					n++
				}
			default:
				if old.in {
					ws[n] = write{old.pk, old.sk, old.size}
					n++
				}
				if cur.in {
					ws[n] = write{cur.pk, cur.sk, cur.size}
					n++
				}
			}
		case newKnown && cur.in && ix.Projection.Type == traffic.ProjectAll:
			// Whatever the item was, its entry under this key was written.
			ws[n] = write{cur.pk, cur.sk, cur.size}
			n++
		case oldKnown && old.in && ix.Projection.Type == traffic.ProjectAll:
			// Its entry under this key was rewritten or deleted.
			ws[n] = write{old.pk, old.sk, old.size}
			n++
		}
		for _, w := range ws[:n] {
			units := writeUnitsOf(w.size)
			if ix.Local {
				ev.Units += units
				continue
			}
			dst = append(dst, traffic.Event{
				Table: ev.Table, Index: ix.Name, PK: w.pk, SK: w.sk,
				Class: traffic.Write, Units: units, Time: ev.Time, Source: ev.Source,
			})
		}
	}
	return dst, complete
}

// write is one write of an index entry.
type write struct {
	pk, sk string
	size   int
}

// entry is an item's entry in an index, as one image shows it.
type entry struct {
	in bool // the item has the index's key attributes
	// unreadable: an index key attribute of type N holds no number
	// DynamoDB can hold (1e999999999), so whether and where the item is
	// in the index cannot be told.
	unreadable bool
	pk, sk     string
	size       int
}

// entryOf returns the entry of the item img in index ix of a table keyed
// by key.
func entryOf(img map[string]types.AttributeValue, ix *Index, key *traffic.KeySchema) entry {
	pkv, ok := img[ix.PartitionKey]
	if !ok {
		return entry{}
	}
	pk, err := keyText(pkv)
	if err != nil || pk == "" {
		// DynamoDB refuses an index key of another type, and an empty
		// one: no such item is in the index.
		return entry{unreadable: errors.Is(err, errBadNumber)}
	}
	var sk string
	if ix.SortKey != "" {
		skv, ok := img[ix.SortKey]
		if !ok {
			return entry{}
		}
		if sk, err = keyText(skv); err != nil || sk == "" {
			return entry{unreadable: errors.Is(err, errBadNumber)}
		}
	}
	return entry{in: true, pk: pk, sk: sk, size: entrySize(img, ix, key)}
}

// entrySize is the size of an index entry: each of the table's and the
// index's key attributes once, the projected attributes, and the overhead.
func entrySize(img map[string]types.AttributeValue, ix *Index, key *traffic.KeySchema) int {
	if ix.Projection.Type == traffic.ProjectAll {
		return imageSize(img) + indexOverhead
	}
	size := indexOverhead
	var seen [4]string
	n := 0
	add := func(name string) {
		if name == "" || slices.Contains(seen[:n], name) {
			return
		}
		if n < len(seen) {
			seen[n] = name
			n++
		}
		if v, ok := img[name]; ok {
			size += attrSize(name, v)
		}
	}
	add(key.PartitionKey)
	add(key.SortKey)
	add(ix.PartitionKey)
	add(ix.SortKey)
	if ix.Projection.Type == traffic.ProjectInclude {
		for _, a := range ix.Projection.Attributes {
			if !slices.Contains(seen[:n], a) {
				if v, ok := img[a]; ok {
					size += attrSize(a, v)
				}
			}
		}
	}
	return size
}

// projectedChanged reports whether an update that kept the item's index
// key changed what the index's entry holds. A stream record is written
// only for a write that changed the item, so an ALL projection always
// changed; a KEYS_ONLY one never did (the table's key of an item does not
// change).
func projectedChanged(ix *Index, old, cur map[string]types.AttributeValue) bool {
	switch ix.Projection.Type {
	case traffic.ProjectAll:
		return true
	case traffic.ProjectInclude:
		for _, a := range ix.Projection.Attributes {
			ov, inOld := old[a]
			nv, inNew := cur[a]
			if inOld != inNew || inOld && !equalValue(ov, nv) {
				return true
			}
		}
	}
	return false
}

// equalValue reports whether two attribute values are the same value
// (sets in any order).
func equalValue(a, b types.AttributeValue) bool {
	switch a := a.(type) {
	case *types.AttributeValueMemberS:
		b, ok := b.(*types.AttributeValueMemberS)
		return ok && a.Value == b.Value
	case *types.AttributeValueMemberN:
		b, ok := b.(*types.AttributeValueMemberN)
		if !ok {
			return false
		}
		x, okx := canonicalNumber(a.Value)
		y, oky := canonicalNumber(b.Value)
		return okx && oky && x == y || a.Value == b.Value
	case *types.AttributeValueMemberB:
		b, ok := b.(*types.AttributeValueMemberB)
		return ok && bytes.Equal(a.Value, b.Value)
	case *types.AttributeValueMemberBOOL:
		b, ok := b.(*types.AttributeValueMemberBOOL)
		return ok && a.Value == b.Value
	case *types.AttributeValueMemberNULL:
		b, ok := b.(*types.AttributeValueMemberNULL)
		return ok && a.Value == b.Value
	case *types.AttributeValueMemberSS:
		b, ok := b.(*types.AttributeValueMemberSS)
		return ok && sameSet(a.Value, b.Value)
	case *types.AttributeValueMemberNS:
		b, ok := b.(*types.AttributeValueMemberNS)
		return ok && sameSet(a.Value, b.Value)
	case *types.AttributeValueMemberBS:
		b, ok := b.(*types.AttributeValueMemberBS)
		if !ok || len(a.Value) != len(b.Value) {
			return false
		}
		x := make([]string, len(a.Value))
		y := make([]string, len(b.Value))
		for i := range a.Value {
			x[i], y[i] = string(a.Value[i]), string(b.Value[i])
		}
		return sameSet(x, y)
	case *types.AttributeValueMemberL:
		b, ok := b.(*types.AttributeValueMemberL)
		return ok && slices.EqualFunc(a.Value, b.Value, equalValue)
	case *types.AttributeValueMemberM:
		b, ok := b.(*types.AttributeValueMemberM)
		if !ok || len(a.Value) != len(b.Value) {
			return false
		}
		for k, v := range a.Value {
			w, ok := b.Value[k]
			if !ok || !equalValue(v, w) {
				return false
			}
		}
		return true
	}
	return false
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	x, y := slices.Clone(a), slices.Clone(b)
	slices.Sort(x)
	slices.Sort(y)
	return slices.Equal(x, y)
}

// GapNote says, in a sentence for a report's notes, which tables' index
// writes their records could not all tell, how many, and why (the
// stream's view type, or images holding what DynamoDB cannot hold); ""
// when there is none. It advises NEW_AND_OLD_IMAGES only when a stream of
// another view type hid writes: a stream that is one already is told
// what to look at instead.
func GapNote(gaps map[IndexGap]uint64) string {
	if len(gaps) == 0 {
		return ""
	}
	keys := slices.SortedFunc(maps.Keys(gaps), func(a, b IndexGap) int {
		return cmp.Or(cmp.Compare(a.Table, b.Table), cmp.Compare(a.ViewType, b.ViewType))
	})
	parts := make([]string, len(keys))
	viewTypes, unreadable := false, false
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s, %d writes (%s)", k.Table, gaps[k], hiddenBy(k.ViewType))
		if types.StreamViewType(k.ViewType) == types.StreamViewTypeNewAndOldImages {
			unreadable = true
		} else {
			viewTypes = true
		}
	}
	note := "Index writes: the item images of some stream records cannot tell every write of the table's secondary indexes, so only the writes the images make certain are counted for " +
		strings.Join(parts, "; ") + "."
	if viewTypes {
		note += " A stream of view type NEW_AND_OLD_IMAGES tells them all."
	}
	if unreadable {
		note += " DynamoDB writes no such value, so those records were changed on their way: check what wrote them."
	}
	return note
}

// hiddenBy says what a stream of view type v does not carry.
func hiddenBy(v string) string {
	switch types.StreamViewType(v) {
	case types.StreamViewTypeKeysOnly:
		return "a KEYS_ONLY stream carries no item image: index heat is not available"
	case types.StreamViewTypeNewImage:
		return "a NEW_IMAGE stream carries no image before an update or a removal"
	case types.StreamViewTypeOldImage:
		return "an OLD_IMAGE stream carries no image after an insert or an update"
	case types.StreamViewTypeNewAndOldImages:
		return "images holding a value DynamoDB cannot hold, such as a binary attribute that is not base64 or a number out of DynamoDB's range"
	}
	return "records without item images"
}
