package statefile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

type doc struct {
	Header
	Last map[string]string `json:"last"`
}

// TestLoad reads the files of testdata/ as a format of version 2 that
// still reads version 1 and unversioned files.
func TestLoad(t *testing.T) {
	f := Format{What: "state", Version: 2, Older: []int{0, 1}, Redo: "start over"}
	for _, tc := range []struct {
		file    string
		found   bool
		last    string
		corrupt string // text of the error, "" for none
	}{
		{"v2.json", true, "b", ""},
		{"v1.json", true, "a", ""},
		{"unversioned.json", true, "u", ""},
		{"missing.json", false, "", ""},
		{"v3.json", false, "", "unknown version 3"},
		{"torn.json", false, "", "unexpected end of JSON input"},
		{"shape.json", false, "", "cannot unmarshal"},
	} {
		var d doc
		path := filepath.Join("testdata", tc.file)
		found, err := f.Load(path, &d)
		if found != tc.found {
			t.Errorf("%s: found %v, want %v", tc.file, found, tc.found)
		}
		if tc.corrupt == "" {
			if err != nil {
				t.Errorf("%s: %v", tc.file, err)
			}
			if found && (d.Last["k"] != tc.last || d.Version != 2) {
				t.Errorf("%s: read %+v, want last %q at version 2", tc.file, d, tc.last)
			}
			continue
		}
		if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), tc.corrupt) || !strings.Contains(err.Error(), path) ||
			!strings.HasSuffix(err.Error(), " (move it away to start over)") {
			t.Errorf("%s: error %v, want ErrCorrupt naming the file and %q, and what moving it away does", tc.file, err, tc.corrupt)
		}
	}
}

// TestSaveLoad writes into a folder that does not exist yet and reads
// the file back, stamped with the version.
func TestSaveLoad(t *testing.T) {
	f := Format{What: "checkpoint", Version: 1, DirMode: 0o755}
	path := filepath.Join(t.TempDir(), "a", "b", "state.json")
	if err := f.Save(path, &doc{Last: map[string]string{"k": "v"}}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(b), `{"version":1,"last":{"k":"v"}}`+"\n"; got != want {
		t.Errorf("file %q, want %q", got, want)
	}
	var d doc
	if found, err := f.Load(path, &d); !found || err != nil || d.Last["k"] != "v" {
		t.Errorf("load: %v, %v, %+v", found, err, d)
	}
}

// TestSaveUnwritable names the file when its folder cannot be made.
func TestSaveUnwritable(t *testing.T) {
	blocker := filepath.Join(t.TempDir(), "blocker")
	if err := os.WriteFile(blocker, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(blocker, "state.json")
	err := Format{What: "state", Version: 1}.Save(path, &doc{})
	if err == nil || !strings.Contains(err.Error(), "write state") || !strings.Contains(err.Error(), path) {
		t.Errorf("save under a file: %v", err)
	}
}
