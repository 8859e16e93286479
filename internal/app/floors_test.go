package app

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/hotkeyd/hotkeyd"

// floors are the floors of docs/architecture.md, top first: a package's
// floor is that of the longest prefix listed ("x/..." is x and everything
// under it). A package may import packages of its own floor and below,
// except that the readers' floor stands beside the pipeline's floors, not
// under them: readers import only readers' shared parts, the ground and
// helpers, and only the wiring and the programs import readers.
var floors = [][]string{
	{"cmd/...", "internal/cmd/...", "dashboards/...", "deploy/..."},
	{"internal/app/..."},
	{"ingest/..."},
	{"export", "judge", "history"},
	{"detect", "detect/report", "detect/forecast", "history/view"},
	{"sketch"},
	{"traffic"},
	{"internal/atomicfile", "internal/awsclient", "internal/awslog", "internal/benchgen", "internal/exactcounter", "internal/logging", "internal/plural", "internal/promutil", "internal/strictyaml", "internal/testenv"},
}

// viewModels are what the renderers show: they import nothing of the
// module. renderers render them: of the module they import only the view
// models, the ground and the helpers, never the detector, the sketches,
// the history's store or the rest of their floor.
var (
	viewModels = map[string]bool{"detect/report": true, "history/view": true}
	renderers  = map[string]bool{"export": true}
)

// readersFloor is the floor of ingest/..., groundFloor that of the event
// contract.
const readersFloor, groundFloor = 2, 6

// knownUp are the arrows pointing up that a move under way removes: the
// importing package, and the move. Once it has moved, its entry must go.
var knownUp = map[string]string{}

// floorOf returns the floor of package path p (relative to the module),
// or -1 when no floor lists it.
func floorOf(p string) int {
	best, bestLen := -1, -1
	for i, fl := range floors {
		for _, pat := range fl {
			base, tree := strings.CutSuffix(pat, "/...")
			if (p == base || tree && strings.HasPrefix(p, base+"/")) && len(base) > bestLen {
				best, bestLen = i, len(base)
			}
		}
	}
	return best
}

// TestFloors: every package of the module has a floor, and imports only
// packages of its floor or below; the readers import nothing downstream
// and nothing downstream imports them (sketch, detect, export and judge
// stand on traffic, not on ingest/...); traffic and the view models import
// nothing of the module, export only the view models, the ground and helpers,
// and no reader imports another reader.
func TestFloors(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, module+"/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	readers := map[string]bool{"ingest/streams": true, "ingest/kinesis": true, "ingest/cloudtrail": true, "ingest/jsonl": true, "ingest/demo": true}
	// gatherers put readers together for whole inputs (analyze): they
	// import readers, and neither a reader nor a shared part imports them.
	gatherers := map[string]bool{"ingest/formats": true, "ingest/parallel": true}
	packages := 0
	seen := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg := strings.TrimPrefix(fields[0], module+"/")
		packages++
		seen[pkg] = true
		from := floorOf(pkg)
		if from < 0 {
			t.Errorf("%s has no floor: place it in docs/architecture.md and in this test's floors", pkg)
			continue
		}
		for _, imp := range fields[1:] {
			dep, ok := strings.CutPrefix(imp, module+"/")
			if !ok {
				continue
			}
			switch to := floorOf(dep); {
			case to >= 0 && to < from && knownUp[pkg] != "":
				t.Logf("%s imports %s: known, %s", pkg, dep, knownUp[pkg])
			case to >= 0 && to < from:
				t.Errorf("%s (floor %d) imports %s (floor %d): an arrow pointing up", pkg, from, dep, to)
			case viewModels[pkg]:
				t.Errorf("%s imports %s: a view model imports nothing of hotkeyd", pkg, dep)
			case pkg == "detect/forecast":
				t.Errorf("detect/forecast imports %s: the forecast's method imports nothing of hotkeyd", dep)
			case renderers[pkg] && to >= 0 && to < groundFloor && !viewModels[dep]:
				t.Errorf("renderer %s imports %s: it renders the view models (detect/report, history/view), with the ground and the helpers alone", pkg, dep)
			case from == readersFloor && to > readersFloor && to < groundFloor:
				t.Errorf("reader %s imports %s: readers know nothing downstream of the event contract", pkg, dep)
			case pkg == "traffic":
				t.Errorf("traffic imports %s: the ground package imports nothing of hotkeyd", dep)
			case from == 0 && to == 0 && dep != pkg && !strings.HasPrefix(dep, "dashboards") && !strings.HasPrefix(dep, "deploy"):
				t.Errorf("%s imports the program %s", pkg, dep)
			}
			if readers[pkg] && readers[dep] {
				t.Errorf("reader %s imports reader %s: readers share parts below them, never each other", pkg, dep)
			}
			if from == readersFloor && !gatherers[pkg] && gatherers[dep] {
				t.Errorf("%s imports %s, which gathers readers: only the wiring and the programs import it", pkg, dep)
			}
			if from == readersFloor && !readers[pkg] && !gatherers[pkg] && readers[dep] {
				t.Errorf("shared part %s imports reader %s: the parts the readers share stand below every reader", pkg, dep)
			}
		}
	}
	for pkg, move := range knownUp {
		if !seen[pkg] {
			t.Errorf("%s is gone (%s): remove it from knownUp", pkg, move)
		}
	}
	if packages < 30 {
		t.Errorf("go list named %d packages; want the whole module", packages)
	}
}

// TestPipelineTestsStandOnTraffic: the tests of sketch, detect, export and
// judge do not import the readers either, so that a reader's change never
// breaks the pipeline's tests.
func TestPipelineTestsStandOnTraffic(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .TestImports}} {{.}}{{end}}{{range .XTestImports}} {{.}}{{end}}`,
		module+"/sketch/...", module+"/detect/...", module+"/export/...", module+"/judge/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		for _, imp := range fields[1:] {
			if strings.HasPrefix(imp, module+"/ingest") {
				t.Errorf("the tests of %s import the reader package %s", fields[0], imp)
			}
		}
	}
}

// TestFloorOf: the longest prefix places a package.
func TestFloorOf(t *testing.T) {
	for p, want := range map[string]int{
		"cmd/hotkeyd": 0, "internal/cmd/screenshots": 0, "internal/app/config": 1, "ingest/internal/shards": 2, "judge": 3,
		"detect/report": 4, "sketch": 5, "traffic": 6, "internal/promutil": 7, "internal/nothing": -1, "detector": -1, "trafficker": -1,
	} {
		if got := floorOf(p); got != want {
			t.Errorf("floorOf(%q) = %d, want %d", p, got, want)
		}
	}
}

// TestArchitectureNamesEveryPackage: docs/architecture.md names every
// package of the module, in backquotes, as its floors table and its
// packages table do.
func TestArchitectureNamesEveryPackage(t *testing.T) {
	doc, err := os.ReadFile("../../docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("go", "list", module+"/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, p := range strings.Fields(string(out)) {
		pkg := strings.TrimPrefix(p, module+"/")
		if !strings.Contains(string(doc), "`"+pkg+"`") {
			t.Errorf("docs/architecture.md does not name %s", pkg)
		}
	}
}
