package cloudtrail

import (
	"bytes"
	"errors"
	"io"

	"github.com/hotkeyd/hotkeyd/ingest/input"
)

// Sniff reports whether head, the first bytes of an input (a few KiB),
// looks like CloudTrail: a {"Records":[ file, an EventBridge envelope
// ("detail-type"), a bare event ("eventVersion", "eventSource"), or an
// array of those. Compressed input is looked into (package input); a
// compressed prefix too short to tell counts as CloudTrail, whose files are
// delivered gzipped.
func Sniff(head []byte) bool {
	plain, codec, err := input.DecompressHead(head, 8<<10)
	switch {
	case codec == "":
		return sniffText(head, false)
	case err != nil:
		return errors.Is(err, io.ErrUnexpectedEOF) // a header cut short
	case len(plain) == 0:
		return true
	}
	return sniffText(plain, len(plain) < 8<<10)
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
