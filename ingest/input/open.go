package input

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
)

// SniffLen is how many bytes of an input's content (decompressed) Head
// returns, and format detection looks at.
const SniffLen = 4096

// Input is one input opened whole for reading: its content, decompressed
// and buffered, positioned at its start. Read it with Read (it is an
// io.Reader); Head looks at its first bytes without consuming them.
type Input struct {
	// Name names the input in messages: the path as given, "-" for
	// standard input.
	Name string
	*bufio.Reader
	content *Reader
	file    *os.File
}

// Open opens the file name, or stdin for "-", and decompresses its content
// (see Decompress). A directory, or anything else that is not a regular
// file, a pipe or a terminal, is refused. The error is the *fs.PathError of
// the file system, or a *CorruptError for a bad compressed header.
func Open(name string, stdin io.Reader) (*Input, error) {
	if name == "-" {
		return NewInput(name, stdin)
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if m := fi.Mode(); !m.IsRegular() && m&(os.ModeNamedPipe|os.ModeCharDevice) == 0 {
		f.Close()
		if m.IsDir() {
			return nil, errors.New("is a directory")
		}
		return nil, fmt.Errorf("not a regular file (%s)", m.Type())
	}
	in, err := NewInput(name, f)
	if err != nil {
		f.Close()
		return nil, err
	}
	in.file = f
	return in, nil
}

// NewInput returns the Input of r's content, decompressed. Close does not
// close r.
func NewInput(name string, r io.Reader) (*Input, error) {
	content, err := Decompress(r)
	if err != nil {
		return nil, err
	}
	return &Input{Name: name, Reader: bufio.NewReaderSize(content, 1<<20), content: content}, nil
}

// Head returns the first bytes of the content (up to SniffLen, fewer for a
// shorter input) without consuming them. They are valid until the next
// Read.
func (in *Input) Head() []byte {
	head, _ := in.Peek(SniffLen) // a short input is fine; errors surface when reading
	return head
}

// Codec returns the compression format the content was in, "" for none.
func (in *Input) Codec() string { return in.content.Codec() }

// BytesRead returns how many bytes of the file (compressed, when it is)
// were read so far. It is safe to call while another goroutine reads.
func (in *Input) BytesRead() int64 { return in.content.BytesIn() }

// Close releases the decompressor and closes the file Open opened.
func (in *Input) Close() error {
	in.content.Close()
	if in.file != nil {
		return in.file.Close()
	}
	return nil
}
