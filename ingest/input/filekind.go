package input

import "io/fs"

// FileKind names the kind of a file that is not a regular one ("a
// directory", "a named pipe", "a socket", "a character device", "a
// device"), for the errors that refuse to read it.
func FileKind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return m.Type().String()
}
