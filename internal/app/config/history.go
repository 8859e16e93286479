package config

import (
	"errors"
	"fmt"

	"github.com/alecthomas/units"
	"gopkg.in/yaml.v3"

	"github.com/hotkeyd/hotkeyd/history"
)

// DefaultHistoryPath is history.path's default (and --history.path's).
const DefaultHistoryPath = "data/"

// History is where the daemon keeps its history (package history): the
// file's history: section, which the --history.path and
// --history.retention.size flags override. A reload does not move or
// resize it: a change applies at the next start (the reload says so).
type History struct {
	// Path is the directory of the database (history.db); empty keeps
	// no history.
	Path string `yaml:"path"`
	// Retention bounds the database.
	Retention HistoryRetention `yaml:"retention"`
}

// HistoryRetention bounds the history database.
type HistoryRetention struct {
	// Size is the most the database may hold; past it the oldest cells
	// of the finest resolution go first.
	Size ByteSize `yaml:"size"`
}

// ByteSize is a size in bytes, written in the file as a whole number of
// bytes or with a base-2 unit: 512MiB, 2GiB, 100KiB (as the
// --history.retention.size flag takes it).
type ByteSize int64

// UnmarshalStrictYAML reads a size such as 512MiB, or a number of bytes.
func (b *ByteSize) UnmarshalStrictYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return errors.New("want a size such as 512MiB or 2GiB")
	}
	if n.ShortTag() == "!!int" {
		var v int64
		if err := n.Decode(&v); err != nil {
			return fmt.Errorf("%q is not a size such as 512MiB or 2GiB", n.Value)
		}
		*b = ByteSize(v)
		return nil
	}
	v, err := units.ParseBase2Bytes(n.Value)
	if err != nil {
		return fmt.Errorf("%q is not a size such as 512MiB or 2GiB (KiB, MiB, GiB, TiB)", n.Value)
	}
	*b = ByteSize(v)
	return nil
}

// String writes the size as the file takes it.
func (b ByteSize) String() string { return units.Base2Bytes(b).String() }

// defaultHistory is the history: section's defaults.
func defaultHistory() History {
	return History{Path: DefaultHistoryPath, Retention: HistoryRetention{Size: history.DefaultRetentionSize}}
}

// validate checks the history: section.
func (h History) validate() error {
	if h.Retention.Size <= 0 {
		return fmt.Errorf("history.retention.size: must be positive, got %d", h.Retention.Size)
	}
	return nil
}
