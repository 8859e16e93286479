package input

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync/atomic"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/ulikunitz/xz"
)

// MaxWindow bounds the memory a compressed stream may ask for: a zstd
// window, an xz (LZMA2) dictionary. 64 MiB is enough for every level of
// the zstd tool without --long and of the xz tool (xz -9 uses a 64 MiB
// dictionary), and a bound on what a hostile stream can make the reader
// allocate. gzip's window is 32 KiB by its format. Past it, reading fails
// with a *CorruptError holding a *LimitError.
const MaxWindow = 64 << 20

// codec is a compression format, recognised by its magic number.
type codec struct {
	// name is the format's name, and its HTTP content coding where it has
	// one.
	name  string
	magic []byte
	open  func(io.Reader) (io.Reader, func(), error)
}

// codecs are the formats Decompress recognises.
var codecs = []codec{
	{name: "gzip", magic: []byte{0x1f, 0x8b}, open: func(r io.Reader) (io.Reader, func(), error) {
		zr, err := gzip.NewReader(r)
		if err != nil {
			return nil, nil, err
		}
		return zr, func() { zr.Close() }, nil
	}},
	{name: "zstd", magic: []byte{0x28, 0xb5, 0x2f, 0xfd}, open: func(r io.Reader) (io.Reader, func(), error) {
		// One block at a time: no goroutines behind the reader.
		zr, err := zstd.NewReader(r, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true), zstd.WithDecoderMaxWindow(MaxWindow))
		if err != nil {
			return nil, nil, err
		}
		return zr, zr.Close, nil
	}},
	{name: "xz", magic: []byte{0xfd, '7', 'z', 'X', 'Z', 0x00}, open: func(r io.Reader) (io.Reader, func(), error) {
		zr, err := xz.NewReader(newXZGuard(r, MaxWindow))
		if err != nil {
			return nil, nil, err
		}
		return zr, func() {}, nil
	}},
}

// magicLen is the longest magic number.
const magicLen = 6

// sniffCodec returns the codec whose magic number head starts with.
func sniffCodec(head []byte) *codec {
	for i := range codecs {
		if bytes.HasPrefix(head, codecs[i].magic) {
			return &codecs[i]
		}
	}
	return nil
}

// SniffCodec returns the name of the compression format whose magic
// number head starts with, or "". undecided is set when head is too short
// to tell: it is the start of a magic number.
func SniffCodec(head []byte) (name string, undecided bool) {
	if c := sniffCodec(head); c != nil {
		return c.name, false
	}
	for _, c := range codecs {
		if len(head) < len(c.magic) && bytes.HasPrefix(c.magic, head) {
			return "", true
		}
	}
	return "", false
}

// Codecs returns the names of the compression formats recognised: "gzip",
// "zstd", "xz".
func Codecs() []string {
	names := make([]string, len(codecs))
	for i, c := range codecs {
		names[i] = c.name
	}
	return names
}

// CorruptError is compressed content that could not be decompressed: a
// truncated file, a corrupt one, one that is not what its magic number
// says. Errors of the reader underneath are never wrapped in it, so that a
// reader can tell a bad file (a rejection) from a failing one (an error).
type CorruptError struct {
	// Codec is the compression format.
	Codec string
	Err   error
}

func (e *CorruptError) Error() string {
	var le *LimitError
	if errors.As(e.Err, &le) {
		return le.Error()
	}
	return "truncated or corrupt " + e.Codec + ": " + e.Err.Error()
}

// Unwrap returns the decompressor's error.
func (e *CorruptError) Unwrap() error { return e.Err }

// Reader is content read through its codec: decompressed when it was
// compressed, as it is otherwise.
type Reader struct {
	codec string
	src   *source
	r     io.Reader
	close func()
}

// source counts the bytes read from the reader underneath and keeps its
// first error, to tell it from a decompressor's.
type source struct {
	r   io.Reader
	n   atomic.Int64
	err error
}

func (s *source) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	s.n.Add(int64(n))
	if err != nil && err != io.EOF && s.err == nil {
		s.err = err
	}
	return n, err
}

// Decompress returns a Reader of r's content: decompressed when r starts
// with the magic number of gzip, zstd or xz (several gzip members one
// after the other are read as one), as it is otherwise. The error is a
// *CorruptError when the compressed header is bad, or r's own error.
func Decompress(r io.Reader) (*Reader, error) {
	src := &source{r: r}
	// The magic number is read ahead and put back in front of the rest,
	// rather than peeked through a buffer: the decoders above buffer
	// already, and plain content then reaches them without a second copy.
	var magic [magicLen]byte
	n, _ := io.ReadFull(src, magic[:])
	if src.err != nil {
		return nil, src.err
	}
	rest := io.MultiReader(bytes.NewReader(magic[:n]), src)
	c := sniffCodec(magic[:n])
	if c == nil {
		return &Reader{src: src, r: &bomSkipper{r: rest}, close: func() {}}, nil
	}
	return open(c, src, rest)
}

// DecompressAs returns a Reader of r's content compressed with the named
// codec ("gzip", "x-gzip", "zstd": an HTTP Content-Encoding), or "" or
// "identity" for none. ok is false for a name it does not know.
func DecompressAs(r io.Reader, name string) (rd *Reader, ok bool, err error) {
	src := &source{r: r}
	// Content codings are case-insensitive (RFC 9110, 8.4.1).
	name = strings.ToLower(strings.TrimSpace(name))
	switch name {
	case "", "identity":
		return &Reader{src: src, r: &bomSkipper{r: src}, close: func() {}}, true, nil
	case "x-gzip":
		name = "gzip"
	}
	for i := range codecs {
		if codecs[i].name == name {
			rd, err := open(&codecs[i], src, src)
			return rd, true, err
		}
	}
	return nil, false, nil
}

func open(c *codec, src *source, r io.Reader) (*Reader, error) {
	zr, closeFn, err := c.open(r)
	if err != nil {
		if src.err != nil {
			return nil, src.err
		}
		if ce := (*CorruptError)(nil); errors.As(err, &ce) {
			return nil, ce
		}
		return nil, &CorruptError{Codec: c.name, Err: err}
	}
	return &Reader{codec: c.name, src: src, r: &bomSkipper{r: zr}, close: closeFn}, nil
}

// utf8BOM is the byte order mark some Windows tools write at the start of
// a UTF-8 file. JSON forbids it, so it is left out of the content.
var utf8BOM = []byte{0xef, 0xbb, 0xbf}

// bomSkipper leaves out a UTF-8 byte order mark at the start of r.
type bomSkipper struct {
	r    io.Reader
	head []byte // the first bytes read, when they are not a BOM
	err  error  // the error that came with them
	done bool
}

func (b *bomSkipper) Read(p []byte) (int, error) {
	if !b.done {
		b.done = true
		var h [3]byte
		n := 0
		for n < len(h) && b.err == nil {
			var k int
			k, b.err = b.r.Read(h[n:])
			n += k
		}
		if n < 3 || !bytes.Equal(h[:], utf8BOM) {
			b.head = append([]byte(nil), h[:n]...)
		}
	}
	if len(b.head) > 0 {
		n := copy(p, b.head)
		b.head = b.head[n:]
		return n, nil
	}
	if b.err != nil {
		return 0, b.err
	}
	return b.r.Read(p)
}

// Read reads decompressed content. Errors of the decompressor are
// *CorruptError; those of the reader underneath are returned as they are.
func (r *Reader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if err != nil && err != io.EOF && r.codec != "" {
		if r.src.err != nil {
			return n, r.src.err
		}
		var ce *CorruptError
		switch {
		case errors.As(err, &ce):
		case errors.Is(err, zstd.ErrWindowSizeExceeded):
			err = &CorruptError{Codec: r.codec, Err: &LimitError{Codec: r.codec, What: "window", Limit: MaxWindow}}
		default:
			err = &CorruptError{Codec: r.codec, Err: err}
		}
	}
	return n, err
}

// Codec returns the compression format of the content, "" for none.
func (r *Reader) Codec() string { return r.codec }

// BytesIn returns how many bytes were read from the reader underneath (of
// compressed content, when it is). It is safe to call while another
// goroutine reads.
func (r *Reader) BytesIn() int64 { return r.src.n.Load() }

// Close releases the decompressor. It does not close the reader
// underneath.
func (r *Reader) Close() error {
	r.close()
	return nil
}

// DecompressHead returns the start of the content head is the beginning
// of: head itself when it is not compressed, else as much of the content as
// head's bytes give, at most max bytes. codec is the compression format's
// name. err is set when head is compressed and its header is cut short
// (io.ErrUnexpectedEOF) or corrupt; a stream cut short later is not an
// error, only a shorter result.
func DecompressHead(head []byte, max int) (plain []byte, codec string, err error) {
	c := sniffCodec(head)
	if c == nil {
		return bytes.TrimPrefix(head, utf8BOM), "", nil
	}
	zr, closeFn, err := c.open(bytes.NewReader(head))
	if err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, c.name, fmt.Errorf("%s header: %w", c.name, err)
	}
	defer closeFn()
	buf := make([]byte, max)
	n, _ := io.ReadFull(zr, buf)
	return bytes.TrimPrefix(buf[:n], utf8BOM), c.name, nil
}
