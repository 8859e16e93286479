package input

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"testing/iotest"
)

// TestXZGuardFollowsWhatXZWrites reads through the guard what the xz tool
// writes with every setting that changes the container: check types,
// presets, several blocks with their sizes in the headers (threads),
// concatenated streams with padding, an empty stream; a byte at a time
// and whole.
func TestXZGuardFollowsWhatXZWrites(t *testing.T) {
	tool, err := exec.LookPath("xz")
	if err != nil {
		t.Skip("no xz tool:", err)
	}
	long := strings.Repeat(text, 40000) // 3 MB: several chunks and blocks
	random := make([]byte, 300000)      // stored in uncompressed chunks
	x := uint32(1)
	for i := range random {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		random[i] = byte(x)
	}
	xzOf := func(t *testing.T, s string, args ...string) []byte {
		t.Helper()
		cmd := exec.Command(tool, append([]string{"-c"}, args...)...)
		cmd.Stdin = strings.NewReader(s)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("xz %v: %v", args, err)
		}
		return out
	}
	for _, c := range []struct {
		name string
		in   func(t *testing.T) []byte
		want string
	}{
		{"default", func(t *testing.T) []byte { return xzOf(t, long) }, long},
		{"-0 check none", func(t *testing.T) []byte { return xzOf(t, long, "-0", "--check=none") }, long},
		{"-9 check sha256", func(t *testing.T) []byte { return xzOf(t, long, "-9", "--check=sha256") }, long},
		{"check crc32, blocks with sizes", func(t *testing.T) []byte {
			return xzOf(t, long, "-T2", "--block-size=200000", "--check=crc32")
		}, long},
		{"incompressible", func(t *testing.T) []byte { return xzOf(t, string(random)+long) }, string(random) + long},
		{"empty", func(t *testing.T) []byte { return xzOf(t, "") }, ""},
		{"streams and padding", func(t *testing.T) []byte {
			var b []byte
			b = append(b, xzOf(t, text)...)
			b = append(b, 0, 0, 0, 0, 0, 0, 0, 0)
			return append(b, xzOf(t, long, "-1")...)
		}, text + long},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := c.in(t)
			want := c.want
			for _, oneByte := range []bool{false, true} {
				var src io.Reader = bytes.NewReader(in)
				if oneByte {
					src = iotest.OneByteReader(src)
				}
				r, err := Decompress(src)
				if err != nil {
					t.Fatal(err)
				}
				got, err := io.ReadAll(r)
				r.Close()
				if err != nil {
					t.Fatalf("one byte at a time %v: %v", oneByte, err)
				}
				if string(got) != want {
					t.Fatalf("one byte at a time %v: read %d bytes, want %d", oneByte, len(got), len(want))
				}
			}
		})
	}
}

// TestDecompressRefusesLargeDictionaries reads xz files whose block
// header asks for a 1.5 GiB dictionary (a valid file: the xz tool reads
// it, with 1.5 GiB of memory): refused with a *LimitError in a
// *CorruptError before the decoder allocates it, in the first stream or
// a later one.
func TestDecompressRefusesLargeDictionaries(t *testing.T) {
	for _, name := range []string{"dict-1536mib.xz", "dict-1536mib-second-stream.xz"} {
		t.Run(name, func(t *testing.T) {
			in, err := os.ReadFile("testdata/" + name)
			if err != nil {
				t.Fatal(err)
			}
			r, err := Decompress(bytes.NewReader(in))
			if err == nil {
				_, err = io.ReadAll(r)
				r.Close()
			}
			var ce *CorruptError
			var le *LimitError
			if !errors.As(err, &ce) || !errors.As(err, &le) || le.Asked != 1536<<20 || le.Limit != MaxWindow {
				t.Fatalf("got %v, want a *LimitError in a *CorruptError", err)
			}
			if got, want := err.Error(), "xz dictionary of 1536 MiB over the limit of 64 MiB"; got != want {
				t.Errorf("error %q, want %q", got, want)
			}
		})
	}
}

// TestDecompressZstdWindowLimit: a zstd frame asking for a window past
// MaxWindow says what it asked for, not "truncated or corrupt".
func TestDecompressZstdWindowLimit(t *testing.T) {
	// A frame by hand: a window descriptor asking for 1 GiB (exponent 20),
	// then one raw last block holding the text.
	frame := []byte{0x28, 0xb5, 0x2f, 0xfd, 0x00, 20 << 3}
	n := len(text)<<3 | 1
	frame = append(frame, byte(n), byte(n>>8), byte(n>>16))
	frame = append(frame, text...)
	r, err := Decompress(bytes.NewReader(frame))
	if err == nil {
		_, err = io.ReadAll(r)
		r.Close()
	}
	var le *LimitError
	var ce *CorruptError
	if !errors.As(err, &le) || le.Codec != "zstd" || !errors.As(err, &ce) {
		t.Fatalf("got %v, want a *LimitError in a *CorruptError", err)
	}
	if got, want := err.Error(), "zstd window over the limit of 64 MiB"; got != want {
		t.Errorf("error %q, want %q", got, want)
	}
	// The same frame asking for 1 MiB is read.
	frame[5] = 10 << 3
	r, err = Decompress(bytes.NewReader(frame))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if got, err := io.ReadAll(r); err != nil || string(got) != text {
		t.Fatalf("1 MiB window: %q, %v", got, err)
	}
}
