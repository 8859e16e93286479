package input

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/ulikunitz/xz"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const text = `{"ts":"2026-11-22T10:00:00Z","table":"orders","pk":"USER#1","op":"PutItem"}` + "\n"

// compress returns s compressed with codec ("" for none).
func compress(t testing.TB, codec, s string) []byte {
	t.Helper()
	var buf bytes.Buffer
	var w io.WriteCloser
	var err error
	switch codec {
	case "":
		return []byte(s)
	case "gzip":
		w = gzip.NewWriter(&buf)
	case "zstd":
		w, err = zstd.NewWriter(&buf)
	case "xz":
		w, err = xz.NewWriter(&buf)
	}
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(w, s); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestDecompress(t *testing.T) {
	long := strings.Repeat(text, 2000)
	for _, codec := range []string{"", "gzip", "zstd", "xz"} {
		t.Run("codec "+codec, func(t *testing.T) {
			in := compress(t, codec, long)
			r, err := Decompress(bytes.NewReader(in))
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			got, err := io.ReadAll(r)
			if err != nil || string(got) != long {
				t.Fatalf("read %d bytes, %v; want %d", len(got), err, len(long))
			}
			if r.Codec() != codec || r.BytesIn() != int64(len(in)) {
				t.Errorf("codec %q, %d bytes in; want %q, %d", r.Codec(), r.BytesIn(), codec, len(in))
			}
			if codec == "" {
				return
			}
			// Cut short: a *CorruptError, after the part that could be read.
			r, err = Decompress(bytes.NewReader(in[:len(in)/2]))
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			got, err = io.ReadAll(r)
			var ce *CorruptError
			if !errors.As(err, &ce) || ce.Codec != codec || !strings.Contains(err.Error(), "truncated or corrupt "+codec) {
				t.Errorf("truncated %s: %v, want a *CorruptError", codec, err)
			}
			if !strings.HasPrefix(long, string(got)) {
				t.Errorf("truncated %s: read bytes that are not the content's", codec)
			}
			// Its first bytes, for a sniffer.
			head, name, err := DecompressHead(in[:min(len(in), 200)], 100)
			if err != nil || name != codec || !strings.HasPrefix(long, string(head)) {
				t.Errorf("DecompressHead: %q %q %v", head, name, err)
			}
		})
	}
}

func TestDecompressErrors(t *testing.T) {
	// A bad header is a *CorruptError.
	_, err := Decompress(bytes.NewReader([]byte{0x1f, 0x8b, 0, 0}))
	var ce *CorruptError
	if !errors.As(err, &ce) {
		t.Errorf("bad gzip header: %v, want a *CorruptError", err)
	}
	if _, _, err := DecompressHead([]byte{0x1f, 0x8b, 8}, 10); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("gzip header cut short: %v, want io.ErrUnexpectedEOF", err)
	}
	// The reader's own failure is returned as it is.
	fail := errors.New("disk on fire")
	in := compress(t, "gzip", strings.Repeat(text, 100))
	r, err := Decompress(io.MultiReader(bytes.NewReader(in[:40]), &failing{fail}))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := io.ReadAll(r); !errors.Is(err, fail) || errors.As(err, &ce) {
		t.Errorf("failing reader: %v, want its error unwrapped", err)
	}
}

type failing struct{ err error }

func (f *failing) Read([]byte) (int, error) { return 0, f.err }

func TestDecompressAs(t *testing.T) {
	for _, c := range []struct {
		name, codec string
	}{{"", ""}, {"identity", ""}, {"gzip", "gzip"}, {"x-gzip", "gzip"}, {"zstd", "zstd"}} {
		r, ok, err := DecompressAs(bytes.NewReader(compress(t, c.codec, text)), c.name)
		if !ok || err != nil {
			t.Fatalf("%q: %v %v", c.name, ok, err)
		}
		got, err := io.ReadAll(r)
		r.Close()
		if err != nil || string(got) != text {
			t.Errorf("%q: %q %v", c.name, got, err)
		}
	}
	if _, ok, _ := DecompressAs(strings.NewReader(text), "br"); ok {
		t.Error("br accepted")
	}
	if _, _, err := DecompressAs(strings.NewReader(text), "gzip"); err == nil {
		t.Error("plain text accepted as gzip")
	}
}

func TestOpen(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "access.log.zst")
	if err := os.WriteFile(path, compress(t, "zstd", text), 0o644); err != nil {
		t.Fatal(err)
	}
	in, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if string(in.Head()) != text || in.Codec() != "zstd" || in.Name != path {
		t.Errorf("head %q codec %q name %q", in.Head(), in.Codec(), in.Name)
	}
	got, err := io.ReadAll(in)
	if err != nil || string(got) != text {
		t.Errorf("read %q, %v", got, err)
	}
	if err := in.Close(); err != nil {
		t.Error(err)
	}
	in, err = Open("-", strings.NewReader(text))
	if err != nil || string(in.Head()) != text {
		t.Fatalf("stdin: %v", err)
	}
	in.Close()
	if _, err := Open(dir, nil); err == nil || !strings.Contains(err.Error(), "is a directory") {
		t.Errorf("a directory: %v", err)
	}
	if _, err := Open(filepath.Join(dir, "missing"), nil); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a missing file: %v", err)
	}
}

// TestDecompressSkipsByteOrderMark: a UTF-8 byte order mark at the start
// of the content, compressed or not, is left out, for readers and for
// sniffers; content shorter than a mark is read as it is.
func TestDecompressSkipsByteOrderMark(t *testing.T) {
	for _, codec := range []string{"", "gzip", "zstd", "xz"} {
		in := compress(t, codec, "\ufeff"+text)
		r, err := Decompress(iotest.OneByteReader(bytes.NewReader(in)))
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(r)
		r.Close()
		if err != nil || string(got) != text {
			t.Errorf("codec %q: %q, %v", codec, got, err)
		}
		head, _, err := DecompressHead(in, 100)
		if err != nil || !strings.HasPrefix(text, string(head)) {
			t.Errorf("codec %q head: %q, %v", codec, head, err)
		}
	}
	for _, s := range []string{"", "{", "\xef\xbb", "\ufeff"} {
		r, _ := Decompress(strings.NewReader(s))
		got, err := io.ReadAll(r)
		if want := strings.TrimPrefix(s, "\ufeff"); err != nil || string(got) != want {
			t.Errorf("%q: %q, %v; want %q", s, got, err, want)
		}
	}
}
