package jsonl

import "bytes"

// lineStatus is what lineReader.next found.
type lineStatus uint8

const (
	needMore    lineStatus = iota // no complete line buffered
	lineOK                        // a complete line
	lineTooLong                   // a line over the limit; its bytes are being dropped
)

// lineReader splits a byte stream into lines with a fixed buffer of the
// maximum line length, so a huge line costs no memory: it is reported once
// and its bytes are dropped up to the next newline, where reading resyncs.
type lineReader struct {
	buf        []byte
	r, w       int
	max        int
	discarding bool
	// lines counts the lines returned (too-long ones included), the line
	// number of the last one.
	lines int64
}

func newLineReader(max int) *lineReader {
	return &lineReader{buf: make([]byte, max+1), max: max}
}

// next returns the next complete line without its newline. The line is
// valid until the next call to fill.
func (l *lineReader) next() ([]byte, lineStatus) {
	for l.r < l.w {
		i := bytes.IndexByte(l.buf[l.r:l.w], '\n')
		if i < 0 {
			if l.discarding {
				l.r, l.w = 0, 0
				return nil, needMore
			}
			if l.w-l.r > l.max {
				l.discarding = true
				l.r, l.w = 0, 0
				l.lines++
				return nil, lineTooLong
			}
			return nil, needMore
		}
		line := l.buf[l.r : l.r+i]
		l.r += i + 1
		if l.discarding {
			l.discarding = false
			continue
		}
		l.lines++
		return line, lineOK
	}
	return nil, needMore
}

// space makes room at the end of the buffer and returns it.
func (l *lineReader) space() []byte {
	if l.r > 0 && (l.r == l.w || len(l.buf)-l.w < len(l.buf)/2) {
		l.w = copy(l.buf, l.buf[l.r:l.w])
		l.r = 0
	}
	return l.buf[l.w:]
}

// wrote records n bytes written into the slice space returned.
func (l *lineReader) wrote(n int) { l.w += n }

// rest returns the unterminated last line at the end of the input, if any,
// and empties the buffer.
func (l *lineReader) rest() ([]byte, bool) {
	if l.discarding || l.r == l.w {
		l.reset()
		return nil, false
	}
	line := l.buf[l.r:l.w]
	l.r, l.w = 0, 0
	l.lines++
	return line, true
}

// reset drops everything buffered (after a truncation).
func (l *lineReader) reset() {
	l.r, l.w = 0, 0
	l.discarding = false
}
