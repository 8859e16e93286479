//go:build !unix

package follow

import "os"

// fileID is a file's identity where the platform gives one; elsewhere it is
// always zero and files are told apart by os.SameFile alone.
type fileID struct{ dev, ino uint64 }

func idOf(os.FileInfo) fileID { return fileID{} }
