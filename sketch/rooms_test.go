package sketch

import (
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// rooms are the package's files by concern, the lowest first. A file uses
// what its own room and the rooms below it declare, never what a room
// above declares: the counting structures know nothing of tables, a table
// nothing of the Store, the Store nothing of merging and summaries.
var rooms = []struct {
	name  string
	files []string
}{
	{"ground: configuration, the snapshot's types, slots and seconds, keys, ranking", []string{
		"config.go", "snapshot.go", "seconds.go", "keys.go", "rank.go", "quanta.go"}},
	{"counting: count-min, named counts, distinct keys, throttled calls, exact seconds", []string{
		"cms.go", "counts.go", "smallest.go", "distinct.go", "throttle.go", "analyze.go"}},
	{"candidates: the keys counted exactly", []string{
		"candidates.go", "candview.go"}},
	{"a table: its window, counting into it, copying it out, its memory", []string{
		"table.go", "put.go", "tablesnap.go", "memory.go"}},
	{"the store and eviction", []string{
		"store.go", "evict.go", "watermark.go", "collect.go"}},
	{"merging and summaries", []string{
		"merge.go", "summary.go", "summarycodec.go", "combine.go"}},
}

// TestRoomsReferDown checks that every file of the package is in one room
// and uses nothing a room above its own declares.
func TestRoomsReferDown(t *testing.T) {
	room := map[string]int{}
	for i, r := range rooms {
		for _, f := range r.files {
			if _, dup := room[f]; dup {
				t.Fatalf("%s is in two rooms", f)
			}
			room[f] = i
		}
	}
	fset := token.NewFileSet()
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		if _, ok := room[name]; !ok {
			t.Errorf("%s is in no room: add it to rooms, where it belongs", name)
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, name, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	for f := range room {
		if !slices.Contains(names, f) {
			t.Errorf("rooms names %s, which is not a file of the package", f)
		}
	}
	info := &types.Info{Uses: map[*ast.Ident]types.Object{}}
	conf := types.Config{Importer: importer.ForCompiler(fset, "gc", exportData(t))}
	pkg, err := conf.Check("sketch", fset, files, info)
	if err != nil {
		t.Fatal(err)
	}
	uses := 0
	for id, obj := range info.Uses {
		if obj.Pkg() != pkg || !declaredAtTop(pkg, obj) {
			continue
		}
		uses++
		from, to := fset.Position(id.Pos()), fset.Position(obj.Pos())
		if rf, rt := room[from.Filename], room[to.Filename]; rt > rf {
			t.Errorf("%s:%d uses %s of %s, a room above (%s above %s)", from.Filename, from.Line, obj.Name(), to.Filename, rooms[rt].name, rooms[rf].name)
		}
	}
	if uses < 1000 {
		t.Fatalf("saw %d uses of the package's names, expected thousands", uses)
	}
}

// exportData returns where the go command keeps the compiled export data
// of the package's imports, for the type checker.
func exportData(t *testing.T) importer.Lookup {
	out, err := exec.Command("go", "list", "-export", "-deps", "-f", "{{.ImportPath}}\t{{.Export}}", ".").Output()
	if err != nil {
		t.Fatalf("go list -export: %v", err)
	}
	exports := map[string]string{}
	for line := range strings.Lines(string(out)) {
		if path, file, ok := strings.Cut(strings.TrimSpace(line), "\t"); ok && file != "" {
			exports[path] = file
		}
	}
	return func(path string) (io.ReadCloser, error) {
		file, ok := exports[path]
		if !ok {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(file)
	}
}

// declaredAtTop reports whether obj is declared at the package level, or
// is a method or a field (declared with its type).
func declaredAtTop(pkg *types.Package, obj types.Object) bool {
	if obj.Parent() == pkg.Scope() {
		return true
	}
	switch o := obj.(type) {
	case *types.Func:
		return o.Type().(*types.Signature).Recv() != nil
	case *types.Var:
		return o.IsField()
	}
	return false
}
