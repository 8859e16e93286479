package app

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// maxFuncLines is the most lines a function of the product (not its tests)
// may span, from its signature to its closing brace (its doc comment not
// counted): a longer one is split into named steps.
const maxFuncLines = 80

// longScanners are the functions allowed past maxFuncLines (at most three,
// each listed in docs/architecture.md): byte-at-a-time scanners on the hot
// path whose state (a nesting level, inside a string or not) lives in local
// variables across one loop, so that steps split out would pass that state
// back and forth on every byte. Each says so in its comment.
var longScanners = map[string]bool{
	"ingest/jsonscan/scan.go: Skip":          true,
	"ingest/jsonscan/reader.go: Reader.scan": true,
}

// movingPaths are the folders, files or functions ("dir/file.go: Name")
// whose long functions a piece of work under way splits: an entry goes
// once its work lands, and the list is empty when none is under way.
var movingPaths = []string{}

// TestFunctionsShort holds every non-test function of the module to
// maxFuncLines lines, but for the longScanners.
func TestFunctionsShort(t *testing.T) {
	if len(longScanners) > 3 {
		t.Errorf("%d long scanners allowed: at most three", len(longScanners))
	}
	doc, err := os.ReadFile("../../docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	for name := range longScanners {
		file, fn, _ := strings.Cut(name, ": ")
		if !strings.Contains(string(doc), "`"+fn+"` (`"+file+"`)") {
			t.Errorf("docs/architecture.md does not list the long scanner %s as `%s` (`%s`)", name, fn, file)
		}
	}
	long := longFunctions(t, "../..")
	seen := map[string]bool{}
	for _, f := range long {
		if longScanners[f.name] {
			seen[f.name] = true
			continue
		}
		if moving(f.name) {
			continue
		}
		t.Errorf("%s:%d: %s is %d lines, more than %d: split it into named steps", f.file, f.line, f.name[len(f.file)+2:], f.lines, maxFuncLines)
	}
	for _, p := range movingPaths {
		if !slices.ContainsFunc(long, func(f longFunction) bool { return strings.HasPrefix(f.name, p) }) {
			t.Errorf("nothing under %q is over %d lines any more: take it off movingPaths", p, maxFuncLines)
		}
	}
	for name := range longScanners {
		if !seen[name] {
			t.Errorf("long scanner %s is no longer over %d lines (or gone): take it off the list", name, maxFuncLines)
		}
	}
}

// moving reports whether a function lies under one of movingPaths.
func moving(name string) bool {
	for _, p := range movingPaths {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// longFunction is a function over maxFuncLines lines: name is its file
// (relative to the module) and its name, "dir/file.go: Type.Method".
type longFunction struct {
	name, file  string
	line, lines int
}

// longFunctions parses every non-test .go file under root (testdata and
// hidden folders aside) and returns the functions over maxFuncLines lines.
func longFunctions(t *testing.T, root string) []longFunction {
	t.Helper()
	fset := token.NewFileSet()
	var long []longFunction
	funcs := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		for _, decl := range f.Decls {
			fd, ok := decl.(*ast.FuncDecl)
			if !ok {
				continue
			}
			funcs++
			from, to := fset.Position(fd.Pos()), fset.Position(fd.End())
			if n := to.Line - from.Line + 1; n > maxFuncLines {
				long = append(long, longFunction{name: rel + ": " + funcName(fd), file: rel, line: from.Line, lines: n})
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if funcs < 1500 {
		// The check must have read the module.
		t.Fatalf("read %d functions, expected the module's thousands", funcs)
	}
	return long
}

// funcName is a function's name, with its receiver's type for a method.
func funcName(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return fd.Name.Name
	}
	typ := fd.Recv.List[0].Type
	if st, ok := typ.(*ast.StarExpr); ok {
		typ = st.X
	}
	switch ix := typ.(type) {
	case *ast.IndexExpr:
		typ = ix.X
	case *ast.IndexListExpr:
		typ = ix.X
	}
	if id, ok := typ.(*ast.Ident); ok {
		return id.Name + "." + fd.Name.Name
	}
	return fd.Name.Name
}
