package cloudtrail

import (
	"bufio"
	"bytes"
	"errors"
	"io"
)

// scanner cuts a byte stream into JSON values without parsing them: it
// tracks strings and nesting only, so that a multi-megabyte
// {"Records":[...]} file is handed to the record parser one record at a
// time instead of being loaded whole. The record parser validates.
type scanner struct {
	r   *bufio.Reader
	buf []byte
	max int
}

// errTruncated is returned when the input ends inside a value.
var errTruncated = errors.New("input ends inside a record")

// errBroken is returned for a value cut short by a line that starts a new
// object (a truncated line of a one-record-per-line file) or by a raw
// newline inside a string. The scanner stops before the new line, so the
// next record is still read.
var errBroken = errors.New("record cut short by the next line")

// errTooLong is returned for a value longer than the scanner's limit. The
// value is skipped whole.
var errTooLong = errors.New("record over the size limit")

func newScanner(r io.Reader, max int) *scanner {
	return &scanner{r: bufio.NewReaderSize(r, 64<<10), max: max}
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

// peekByte skips white space (and a UTF-8 byte order mark) and returns the
// next byte without consuming it. err is io.EOF at the end of the input.
func (s *scanner) peekByte() (byte, error) {
	for {
		b, err := s.r.Peek(1)
		if len(b) == 0 {
			if err == nil {
				err = io.EOF
			}
			return 0, err
		}
		if isSpace(b[0]) {
			s.r.Discard(1)
			continue
		}
		if b[0] == 0xEF {
			if bom, _ := s.r.Peek(3); len(bom) == 3 && bom[1] == 0xBB && bom[2] == 0xBF {
				s.r.Discard(3)
				continue
			}
		}
		return b[0], nil
	}
}

// recordsPrefix matches `{ "Records" : [` with any white space and returns
// its length, or 0. Only the first bytes are looked at: AWS writes the
// Records key first, and any other layout falls back to reading the
// object whole.
func (s *scanner) recordsPrefix() int {
	b, _ := s.r.Peek(256)
	i := 0
	skip := func() {
		for i < len(b) && isSpace(b[i]) {
			i++
		}
	}
	expect := func(lit string) bool {
		skip()
		if len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
			return false
		}
		i += len(lit)
		return true
	}
	if expect("{") && expect(`"Records"`) && expect(":") && expect("[") {
		return i
	}
	return 0
}

// skipLine discards up to and including the next newline.
func (s *scanner) skipLine() {
	for {
		_, err := s.r.ReadSlice('\n')
		if err != bufio.ErrBufferFull {
			return
		}
	}
}

// value reads the raw bytes of the next JSON value, which starts with
// '{' or '['. The returned slice is valid until the next call of any
// scanner method. On
// errBroken and errTooLong the stream is positioned after the bad value;
// on errTruncated and read errors it is at the end.
func (s *scanner) value() ([]byte, error) {
	return s.scan(0, true)
}

// skipRest discards the rest of a container whose opening bracket was
// consumed already (the members after "Records").
func (s *scanner) skipRest() error {
	_, err := s.scan(1, false)
	return err
}

func (s *scanner) scan(depth int, keep bool) ([]byte, error) {
	s.buf = s.buf[:0]
	inStr, esc, nl := false, false, false
	tooLong := false
	for {
		chunk, err := s.r.Peek(1)
		if len(chunk) == 0 {
			if err == nil || err == io.EOF {
				err = errTruncated
			}
			return nil, err
		}
		chunk, _ = s.r.Peek(s.r.Buffered())
		for i := 0; i < len(chunk); i++ {
			c := chunk[i]
			if inStr {
				if esc {
					esc = false
					continue
				}
				// Jump to the closing quote unless a backslash or a raw
				// newline comes first (IndexByte is vectorised; strings are
				// most of a record's bytes).
				rest := chunk[i:]
				seg := rest
				q := bytes.IndexByte(rest, '"')
				if q >= 0 {
					seg = rest[:q]
				}
				stop := bytes.IndexByte(seg, '\\')
				if nl := bytes.IndexByte(seg, '\n'); nl >= 0 && (stop < 0 || nl < stop) {
					stop = nl
				}
				switch {
				case stop < 0 && q < 0:
					i = len(chunk) - 1
				case stop < 0:
					i += q
					inStr = false
				case rest[stop] == '\\':
					i += stop
					esc = true
				default:
					// JSON strings cannot hold a raw newline: the line was
					// cut. Resume at the next line.
					s.r.Discard(i + stop)
					return nil, errBroken
				}
				continue
			}
			wasNL := nl
			nl = false
			switch c {
			case '"':
				inStr = true
			case '\n':
				nl = true
			case '{', '[':
				if wasNL && c == '{' && depth > 0 {
					// A line starting with '{' inside an unfinished value:
					// the previous line was a truncated one-line record.
					// Leave the new line for the next call.
					s.r.Discard(i)
					return nil, errBroken
				}
				depth++
			case '}', ']':
				depth--
				if depth <= 0 {
					n := i + 1
					out := s.buf
					if keep && !tooLong {
						switch {
						case len(s.buf)+n > s.max:
							tooLong = true
						case len(s.buf) == 0:
							// The whole value is in the read buffer: no
							// copy. It stays valid until the next read.
							out = chunk[:n]
						default:
							s.buf = append(s.buf, chunk[:n]...)
							out = s.buf
						}
					}
					s.r.Discard(n)
					if tooLong {
						return nil, errTooLong
					}
					return out, nil
				}
			}
		}
		if keep && !tooLong {
			if len(s.buf)+len(chunk) > s.max {
				tooLong = true
				s.buf = s.buf[:0]
			} else {
				s.buf = append(s.buf, chunk...)
			}
		}
		s.r.Discard(len(chunk))
	}
}
