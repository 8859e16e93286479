package cloudtrail

import (
	"bytes"
	"io"

	"github.com/klauspost/compress/gzip"
)

// Sniff reports whether head, the first bytes of an input (a few KiB),
// looks like CloudTrail: a {"Records":[ file, an EventBridge envelope
// ("detail-type"), a bare event ("eventVersion", "eventSource"), or an
// array of those. Gzip input is looked into; a gzip prefix too short to
// tell counts as CloudTrail, the format CloudTrail delivers.
func Sniff(head []byte) bool {
	if len(head) >= 2 && head[0] == 0x1f && head[1] == 0x8b {
		zr, err := gzip.NewReader(bytes.NewReader(head))
		if err != nil {
			return len(head) < 18 // a header cut short
		}
		buf := make([]byte, 8<<10)
		n, _ := io.ReadFull(zr, buf)
		if n == 0 {
			return true
		}
		return sniffText(buf[:n], n < len(buf))
	}
	return sniffText(head, false)
}

var (
	recordsKey = []byte(`"Records"`)
	markers    = [][]byte{[]byte(`"eventSource"`), []byte(`"detail-type"`), []byte(`"eventVersion"`)}
)

// sniffText looks at decompressed text; short says the text may end early.
func sniffText(b []byte, short bool) bool {
	b = bytes.TrimLeft(b, " \t\r\n")
	b = bytes.TrimPrefix(b, []byte("\ufeff"))
	b = bytes.TrimLeft(b, " \t\r\n")
	if len(b) > 0 && b[0] == '[' {
		b = bytes.TrimLeft(b[1:], " \t\r\n")
	}
	if len(b) == 0 || b[0] != '{' {
		return false
	}
	rest := bytes.TrimLeft(b[1:], " \t\r\n")
	if bytes.HasPrefix(rest, recordsKey) || (short && len(rest) < len(recordsKey) && bytes.HasPrefix(recordsKey, rest)) {
		return true
	}
	for _, m := range markers {
		if bytes.Contains(b, m) {
			return true
		}
	}
	return false
}
