package sketch

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// maxFuncLines is the most lines a function of the package (not its
// tests) may span, from its signature to its closing brace (its doc
// comment not counted): a longer one is split into named steps.
const maxFuncLines = 80

// TestFunctionsShort holds the package's functions to maxFuncLines lines.
func TestFunctionsShort(t *testing.T) {
	fset := token.NewFileSet()
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	funcs := 0
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok {
				continue
			}
			funcs++
			from, to := fset.Position(fd.Pos()), fset.Position(fd.End())
			if n := to.Line - from.Line + 1; n > maxFuncLines {
				t.Errorf("%s:%d: %s is %d lines, more than %d: split it into named steps", from.Filename, from.Line, funcName(fd), n, maxFuncLines)
			}
		}
	}
	if funcs < 100 {
		// The check must have read the package.
		t.Fatalf("read %d functions, expected the package's hundreds", funcs)
	}
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
	if ix, ok := typ.(*ast.IndexExpr); ok {
		typ = ix.X
	}
	if id, ok := typ.(*ast.Ident); ok {
		return id.Name + "." + fd.Name.Name
	}
	return fd.Name.Name
}
