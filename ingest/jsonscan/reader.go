package jsonscan

import (
	"bufio"
	"bytes"
	"errors"
	"io"
)

// Reader cuts a byte stream into JSON values without parsing them: it
// tracks strings and nesting only, so that a multi-megabyte
// {"Records":[...]} file is handed to a record parser one record at a time
// instead of being loaded whole. The parser checks what it is given.
//
// It resynchronises on lines, for files of one value per line: a raw
// newline inside a string (which JSON does not allow), or a line starting
// with '{' inside an unfinished value, ends the value as ErrBroken and the
// next value is read from that line.
type Reader struct {
	r   *bufio.Reader
	buf []byte
	max int
}

// Errors of Reader.Value.
var (
	// ErrTruncated is returned when the input ends inside a value.
	ErrTruncated = errors.New("input ends inside a record")
	// ErrBroken is returned for a value cut short by a line that starts a
	// new object (a truncated line of a one-record-per-line file) or by a
	// raw newline inside a string. The Reader stops before the new line, so
	// the next value is still read.
	ErrBroken = errors.New("record cut short by the next line")
	// ErrTooLong is returned for a value longer than the Reader's limit.
	// The value is skipped whole.
	ErrTooLong = errors.New("record over the size limit")
)

// NewReader returns a Reader of r that refuses values over max bytes.
func NewReader(r io.Reader, max int) *Reader {
	return &Reader{r: bufio.NewReaderSize(r, 64<<10), max: max}
}

// PeekByte skips white space (and a UTF-8 byte order mark) and returns the
// next byte without consuming it. err is io.EOF at the end of the input.
func (s *Reader) PeekByte() (byte, error) {
	for {
		b, err := s.r.Peek(1)
		if len(b) == 0 {
			if err == nil {
				err = io.EOF
			}
			return 0, err
		}
		if IsSpace(b[0]) {
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

// Peek returns the next n bytes (fewer at the end of the input) without
// consuming them; they are valid until the next call of any method.
func (s *Reader) Peek(n int) []byte {
	b, _ := s.r.Peek(n)
	return b
}

// Discard consumes n bytes, as many as Peek returned at most.
func (s *Reader) Discard(n int) { s.r.Discard(n) }

// SkipLine discards up to and including the next newline.
func (s *Reader) SkipLine() {
	for {
		_, err := s.r.ReadSlice('\n')
		if err != bufio.ErrBufferFull {
			return
		}
	}
}

// SkipScalar skips a string, number or literal up to the next ',', ']',
// '}' or white space, without checking it.
func (s *Reader) SkipScalar() error {
	inStr, esc := false, false
	for {
		b, err := s.r.Peek(1)
		if len(b) == 0 {
			if err == nil || err == io.EOF {
				return nil
			}
			return err
		}
		c := b[0]
		switch {
		case inStr && esc:
			esc = false
		case inStr && c == '\\':
			esc = true
		case inStr && c == '"':
			inStr = false
		case inStr:
		case c == '"':
			inStr = true
		case c == ',' || c == ']' || c == '}' || IsSpace(c):
			return nil
		}
		s.r.Discard(1)
	}
}

// Value reads the raw bytes of the next JSON value, which starts with '{'
// or '['. The returned slice is valid until the next call of any method.
// On ErrBroken and ErrTooLong the stream is positioned after the bad value;
// on ErrTruncated and read errors it is at the end.
func (s *Reader) Value() ([]byte, error) {
	return s.scan(0, true)
}

// SkipRest discards the rest of a container whose opening bracket was
// consumed already (the members after "Records").
func (s *Reader) SkipRest() error {
	_, err := s.scan(1, false)
	return err
}

// scan reads up to the end of the value at depth (the closing bracket that
// takes it to 0), keeping its bytes when keep. It reads better whole (one of
// the long scanners docs/architecture.md lists): the byte loop's state
// (inside a string, after a backslash, after a newline, the depth) lives in
// locals across the buffer's chunks, which steps split out would pass back
// and forth on every byte.
func (s *Reader) scan(depth int, keep bool) ([]byte, error) {
	s.buf = s.buf[:0]
	inStr, esc, nl := false, false, false
	tooLong := false
	for {
		chunk, err := s.r.Peek(1)
		if len(chunk) == 0 {
			if err == nil || err == io.EOF {
				err = ErrTruncated
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
					return nil, ErrBroken
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
					return nil, ErrBroken
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
						return nil, ErrTooLong
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
