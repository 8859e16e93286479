package input

import (
	"errors"
	"fmt"
	"io"
)

// LimitError is compressed content that asks for more memory than a
// reader gives it: a zstd window or an xz dictionary past MaxWindow. It
// is wrapped in a *CorruptError, so that readers count it as a bad file.
type LimitError struct {
	// Codec is the compression format.
	Codec string
	// What names what was asked for: "window", "dictionary".
	What string
	// Asked is the size asked for in bytes, 0 when the decoder did not
	// say.
	Asked int64
	// Limit is the most that is given, in bytes.
	Limit int64
}

func (e *LimitError) Error() string {
	if e.Asked == 0 {
		return fmt.Sprintf("%s %s over the limit of %d MiB", e.Codec, e.What, e.Limit>>20)
	}
	return fmt.Sprintf("%s %s of %d MiB over the limit of %d MiB", e.Codec, e.What, e.Asked>>20, e.Limit>>20)
}

// errXZStructure is an xz container the guard cannot follow; the decoder
// would refuse it as well.
var errXZStructure = errors.New("xz: bad container structure")

// xzGuard follows an xz file's container (xz-file-format 1.1.0) in the
// bytes that pass to the decoder, and refuses a block whose LZMA2
// dictionary is over max before the decoder has its whole block header:
// github.com/ulikunitz/xz allocates whatever dictionary a block header
// asks for, up to 4 GiB, and has no setting to cap it. The guard does not
// decompress: it reads the headers, and walks LZMA2 chunks by their sizes
// to find where each block ends.
type xzGuard struct {
	r   io.Reader
	max int64
	err error

	state xzState
	off   int64  // bytes into the current stream
	check int64  // size of each block's check
	buf   []byte // the header being gathered
	want  int    // its length
	skip  int64  // bytes to pass over before going to after
	after xzState

	records int64 // index varints still to read; -1 before the count
	varint  uint64
	shift   uint
}

type xzState int

const (
	xzStreamHeader xzState = iota // 12 bytes
	xzBlockOrIndex                // a block header's size byte, or the index indicator
	xzBlockHeader                 // want bytes
	xzChunk                       // an LZMA2 chunk's control byte
	xzChunkHeader                 // the rest of a chunk's header, want bytes
	xzSkip                        // skip bytes, then after
	xzBlockPad                    // zero bytes up to a multiple of 4
	xzIndex                       // the index's varints
	xzIndexPad                    // zero bytes up to a multiple of 4
	xzFooter                      // 12 bytes
	xzStreamPad                   // zero bytes between streams
)

func newXZGuard(r io.Reader, max int64) *xzGuard {
	return &xzGuard{r: r, max: max, want: 12}
}

func (g *xzGuard) Read(p []byte) (int, error) {
	if g.err != nil {
		return 0, g.err
	}
	n, err := g.r.Read(p)
	if gerr := g.scan(p[:n]); gerr != nil {
		// Nothing of this read is handed on: the decoder must not get the
		// end of a header that asks too much.
		g.err = gerr
		return 0, gerr
	}
	return n, err
}

// scan follows the container over p.
func (g *xzGuard) scan(p []byte) error {
	for len(p) > 0 {
		if g.state == xzSkip {
			n := min(int64(len(p)), g.skip)
			g.skip -= n
			g.off += n
			p = p[n:]
			if g.skip == 0 {
				g.state = g.after
			}
			continue
		}
		b := p[0]
		switch g.state {
		case xzBlockPad, xzIndexPad:
			if g.off%4 == 0 {
				if g.state == xzBlockPad {
					g.skipThen(g.check, xzBlockOrIndex)
				} else {
					g.skipThen(4, xzFooter) // the index's CRC32
					g.want = 12
				}
				continue
			}
			if b != 0 {
				return errXZStructure
			}
		case xzStreamPad:
			if b != 0 {
				if g.off%4 != 0 {
					return errXZStructure
				}
				g.state, g.off, g.buf, g.want = xzStreamHeader, 0, g.buf[:0], 12
				continue
			}
		case xzBlockOrIndex:
			if b == 0 {
				g.state, g.records, g.varint, g.shift = xzIndex, -1, 0, 0
			} else {
				g.state, g.want, g.buf = xzBlockHeader, (int(b)+1)*4, append(g.buf[:0], b)
			}
		case xzIndex:
			if err := g.indexByte(b); err != nil {
				return err
			}
		case xzChunk:
			switch {
			case b == 0: // the end of the block's LZMA2 data
				g.state = xzBlockPad
			case b <= 2: // uncompressed: 2 bytes of size
				g.state, g.want, g.buf = xzChunkHeader, 3, append(g.buf[:0], b)
			case b >= 0x80: // LZMA: sizes, and properties when they are reset
				g.want = 5
				if (b>>5)&3 >= 2 {
					g.want = 6
				}
				g.state, g.buf = xzChunkHeader, append(g.buf[:0], b)
			default:
				return errXZStructure
			}
		default: // gathering a header of want bytes
			g.buf = append(g.buf, b)
			if len(g.buf) == g.want {
				if err := g.header(); err != nil {
					return err
				}
			}
		}
		g.off++
		p = p[1:]
	}
	return nil
}

// header reads the header gathered in buf.
func (g *xzGuard) header() error {
	h := g.buf
	switch g.state {
	case xzStreamHeader:
		if string(h[:6]) != "\xfd7zXZ\x00" || h[6] != 0 || h[7] > 0x0f {
			return errXZStructure
		}
		// The check's size: 0, 4, 8, 16, 32 or 64 bytes by its type.
		g.check = 0
		if t := h[7]; t > 0 {
			g.check = 4 << ((t - 1) / 3)
		}
		g.state, g.buf = xzBlockOrIndex, g.buf[:0]
	case xzBlockHeader:
		if err := g.blockHeader(h); err != nil {
			return err
		}
		g.state, g.buf = xzChunk, g.buf[:0]
	case xzChunkHeader:
		var n int64
		if h[0] <= 2 {
			n = int64(h[1])<<8 | int64(h[2]) + 1
		} else {
			n = int64(h[3])<<8 | int64(h[4]) + 1
		}
		g.skipThen(n, xzChunk)
	case xzFooter:
		if string(h[10:12]) != "YZ" {
			return errXZStructure
		}
		g.state, g.buf = xzStreamPad, g.buf[:0]
	}
	return nil
}

// blockHeader checks the LZMA2 dictionary a block header asks for.
func (g *xzGuard) blockHeader(h []byte) error {
	flags := h[1]
	if flags&0x3c != 0 {
		return errXZStructure
	}
	filters := int(flags&3) + 1
	rest := h[2 : len(h)-4] // less the header's CRC32
	var err error
	if flags&0x40 != 0 { // compressed size
		if _, rest, err = uvarint(rest); err != nil {
			return err
		}
	}
	if flags&0x80 != 0 { // uncompressed size
		if _, rest, err = uvarint(rest); err != nil {
			return err
		}
	}
	for i := 0; i < filters; i++ {
		var id, size uint64
		if id, rest, err = uvarint(rest); err != nil {
			return err
		}
		if size, rest, err = uvarint(rest); err != nil {
			return err
		}
		if size > uint64(len(rest)) {
			return errXZStructure
		}
		props := rest[:size]
		rest = rest[size:]
		if id != 0x21 {
			continue // the decoder refuses filters but LZMA2
		}
		if len(props) != 1 || props[0] > 40 {
			return errXZStructure
		}
		if dict := lzma2Dict(props[0]); dict > g.max {
			return &CorruptError{Codec: "xz", Err: &LimitError{Codec: "xz", What: "dictionary", Asked: dict, Limit: g.max}}
		}
	}
	return nil
}

// lzma2Dict returns the dictionary size an LZMA2 property byte (0 to 40)
// stands for.
func lzma2Dict(b byte) int64 {
	if b == 40 {
		return 1<<32 - 1
	}
	return int64(2|b&1) << (b/2 + 11)
}

// indexByte reads the index's varints a byte at a time: the number of
// records, then two for each record.
func (g *xzGuard) indexByte(b byte) error {
	if g.shift > 63 {
		return errXZStructure
	}
	g.varint |= uint64(b&0x7f) << g.shift
	g.shift += 7
	if b&0x80 != 0 {
		return nil
	}
	v := g.varint
	g.varint, g.shift = 0, 0
	if g.records < 0 {
		if v > 1<<40 {
			return errXZStructure
		}
		g.records = int64(v) * 2
	} else {
		g.records--
	}
	if g.records == 0 {
		g.state = xzIndexPad
	}
	return nil
}

// uvarint reads one of xz's variable-length integers from the start of p.
func uvarint(p []byte) (uint64, []byte, error) {
	var v uint64
	for i := 0; i < len(p) && i < 9; i++ {
		v |= uint64(p[i]&0x7f) << (7 * i)
		if p[i]&0x80 == 0 {
			return v, p[i+1:], nil
		}
	}
	return 0, nil, errXZStructure
}

// skipThen passes over n bytes, then goes to next.
func (g *xzGuard) skipThen(n int64, next xzState) {
	g.buf = g.buf[:0]
	if n == 0 {
		g.state = next
		return
	}
	g.state, g.skip, g.after = xzSkip, n, next
}
