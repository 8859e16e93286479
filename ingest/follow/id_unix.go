//go:build unix

package follow

import (
	"os"
	"syscall"
)

// fileID is a file's identity: its device and inode numbers, the same
// under every name and across renames.
type fileID struct{ dev, ino uint64 }

// idOf returns the identity of the file fi describes.
func idOf(fi os.FileInfo) fileID {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return fileID{dev: uint64(st.Dev), ino: uint64(st.Ino)} //nolint:unconvert // the field types differ between platforms
	}
	return fileID{}
}
