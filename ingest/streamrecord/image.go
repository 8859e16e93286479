package streamrecord

import (
	"encoding/base64"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"github.com/hotkeyd/hotkeyd/ingest/jsonscan"
)

// Item images (NewImage, OldImage) are read only for a table with
// secondary indexes, and then only as far as its indexes need: the
// attributes some index reads (Table.want: keys and INCLUDE attributes)
// are decoded into the image's map as the SDK would decode them; the
// others are skipped, and, when an index projects ALL (its entries are as
// large as the item), sized as they are skipped, their sizes summed under
// restKey. The index rules (indexes.go) read such a map as they read the
// SDK's whole one: imageSize counts restKey's value as the attributes it
// stands for.

// restKey is the image member that holds, as a number, the size of the
// attributes the decoder sized without decoding. DynamoDB refuses an empty
// attribute name, so no attribute of an item has it.
const restKey = ""

// restSize returns the size restKey's value holds; any other value under
// the empty name (a hand-made dump) counts as a value.
func restSize(v types.AttributeValue) int {
	if n, ok := v.(*types.AttributeValueMemberN); ok {
		if size, err := strconv.Atoi(n.Value); err == nil && size >= 0 {
			return size
		}
	}
	return valueSize(v)
}

// image reads an image at d.i for table t: the attributes t wants, decoded,
// and the size of the others when t sizes whole items.
func (d *decoder) image(t *Table) (map[string]types.AttributeValue, error) {
	img := make(map[string]types.AttributeValue, len(t.want)+1)
	rest := 0
	err := d.object(func(name []byte) error {
		if len(name) > 0 && t.wants(name) {
			n := d.internBytes(name)
			v, err := d.attrValue(0)
			img[n] = v
			return err
		}
		if !t.sizeAll {
			return d.skip()
		}
		size, err := d.valueSize(0)
		rest += len(name) + size
		return err
	})
	if err != nil {
		return nil, err
	}
	if rest > 0 {
		img[restKey] = d.numberValue(d.arena.str(strconv.AppendInt(d.scratch[:0], int64(rest), 10)))
	}
	return img, nil
}

// stringValue and numberValue allocate values from the record blocks.
func (d *decoder) stringValue(s string) *types.AttributeValueMemberS {
	b := &d.blk
	if len(b.ss) == cap(b.ss) {
		b.ss = make([]types.AttributeValueMemberS, 0, 64)
	}
	b.ss = append(b.ss, types.AttributeValueMemberS{Value: s})
	return &b.ss[len(b.ss)-1]
}

func (d *decoder) numberValue(s string) *types.AttributeValueMemberN {
	b := &d.blk
	if len(b.ns) == cap(b.ns) {
		b.ns = make([]types.AttributeValueMemberN, 0, 64)
	}
	b.ns = append(b.ns, types.AttributeValueMemberN{Value: s})
	return &b.ns[len(b.ns)-1]
}

// imageAt reads the image span raw (a dump's, kept while the record was
// read) for table t.
func (d *decoder) imageAt(raw []byte, t *Table) (map[string]types.AttributeValue, error) {
	b, i := d.b, d.i
	d.b, d.i = raw, 0
	defer func() { d.b, d.i = b, i }()
	img, err := d.image(t)
	if err == nil && jsonscan.Space(d.b, d.i) != len(d.b) {
		err = ErrFallback
	}
	return img, err
}

// attrValue decodes one attribute value ({"S": "..."}, {"M": {...}}, ...)
// as the SDK does; depth counts the Lists and Maps it is in.
func (d *decoder) attrValue(depth int) (types.AttributeValue, error) {
	if depth > maxNesting/2 {
		return nil, ErrFallback
	}
	var v types.AttributeValue
	count := 0
	err := d.object(func(typ []byte) error {
		count++
		var err error
		v, err = d.typedValue(typ, depth)
		return err
	})
	if err != nil || count != 1 {
		return nil, ErrFallback
	}
	return v, nil
}

func (d *decoder) typedValue(typ []byte, depth int) (types.AttributeValue, error) {
	switch string(typ) {
	case "S":
		s, err := d.str()
		return d.stringValue(s), err
	case "N":
		s, err := d.str()
		return d.numberValue(s), err
	case "B":
		b, err := d.binary()
		return &types.AttributeValueMemberB{Value: b}, err
	case "BOOL":
		b, err := d.boolean()
		return &types.AttributeValueMemberBOOL{Value: b}, err
	case "NULL":
		b, err := d.boolean()
		return &types.AttributeValueMemberNULL{Value: b}, err
	case "SS", "NS":
		var ss []string
		err := d.array(func() error {
			s, err := d.str()
			ss = append(ss, s)
			return err
		})
		if string(typ) == "SS" {
			return &types.AttributeValueMemberSS{Value: ss}, err
		}
		return &types.AttributeValueMemberNS{Value: ss}, err
	case "BS":
		var bs [][]byte
		err := d.array(func() error {
			b, err := d.binary()
			bs = append(bs, b)
			return err
		})
		return &types.AttributeValueMemberBS{Value: bs}, err
	case "L":
		l := []types.AttributeValue{}
		err := d.array(func() error {
			e, err := d.attrValue(depth + 1)
			l = append(l, e)
			return err
		})
		return &types.AttributeValueMemberL{Value: l}, err
	case "M":
		m := map[string]types.AttributeValue{}
		err := d.object(func(k []byte) error {
			key := string(k)
			e, err := d.attrValue(depth + 1)
			m[key] = e
			return err
		})
		return &types.AttributeValueMemberM{Value: m}, err
	}
	return nil, ErrFallback
}

// binary reads a base64 string value, decoded.
func (d *decoder) binary() ([]byte, error) {
	s, err := d.string(&d.text)
	if err != nil {
		return nil, err
	}
	b := make([]byte, base64.StdEncoding.DecodedLen(len(s)))
	n, err := base64.StdEncoding.Decode(b, s)
	if err != nil {
		return nil, ErrFallback
	}
	return b[:n], nil
}

// binaryLen returns the decoded length of a base64 string value, checking
// it decodes.
func (d *decoder) binaryLen() (int, error) {
	s, err := d.string(&d.text)
	if err != nil {
		return 0, err
	}
	if need := base64.StdEncoding.DecodedLen(len(s)); cap(d.scratch) < need {
		d.scratch = make([]byte, need)
	}
	n, err := base64.StdEncoding.Decode(d.scratch[:cap(d.scratch)], s)
	if err != nil {
		return 0, ErrFallback
	}
	return n, nil
}

// boolean reads true or false.
func (d *decoder) boolean() (bool, error) {
	if !d.at('t') && !d.at('f') {
		return false, ErrFallback
	}
	lit := "true"
	if d.b[d.i] == 'f' {
		lit = "false"
	}
	i, err := jsonscan.ScanLiteral(d.b, d.i, lit)
	if err != nil {
		return false, ErrFallback
	}
	d.i = i
	return lit == "true", nil
}

// valueSize reads one attribute value without decoding it and returns its
// size by DynamoDB's rules (size.go: valueSize for decoded values).
func (d *decoder) valueSize(depth int) (int, error) {
	if depth > maxNesting/2 {
		return 0, ErrFallback
	}
	size, count := 0, 0
	err := d.object(func(typ []byte) error {
		count++
		var err error
		size, err = d.typedSize(typ, depth)
		return err
	})
	if err != nil || count != 1 {
		return 0, ErrFallback
	}
	return size, nil
}

func (d *decoder) typedSize(typ []byte, depth int) (int, error) {
	n := 0
	switch string(typ) {
	case "S":
		s, err := d.string(&d.text)
		return len(s), err
	case "N":
		s, err := d.string(&d.text)
		return numberSize(s), err
	case "B":
		return d.binaryLen()
	case "BOOL", "NULL":
		_, err := d.boolean()
		return 1, err
	case "SS":
		err := d.array(func() error {
			s, err := d.string(&d.text)
			n += len(s)
			return err
		})
		return n, err
	case "NS":
		err := d.array(func() error {
			s, err := d.string(&d.text)
			n += numberSize(s)
			return err
		})
		return n, err
	case "BS":
		err := d.array(func() error {
			l, err := d.binaryLen()
			n += l
			return err
		})
		return n, err
	case "L":
		n = 3
		err := d.array(func() error {
			l, err := d.valueSize(depth + 1)
			n += l + 1
			return err
		})
		return n, err
	case "M":
		n = 3
		err := d.object(func(k []byte) error {
			l, err := d.valueSize(depth + 1)
			n += len(k) + l + 1
			return err
		})
		return n, err
	}
	return 0, ErrFallback
}
