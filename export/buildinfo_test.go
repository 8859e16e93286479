package export

import (
	"runtime"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestReadBuildInfo(t *testing.T) {
	bi := ReadBuildInfo(BuildInfo{})
	if bi.GoVersion != runtime.Version() {
		t.Errorf("GoVersion = %q, want %q", bi.GoVersion, runtime.Version())
	}
	if bi.Version == "" || bi.Revision == "" {
		t.Errorf("empty fields: %+v", bi)
	}
	o := ReadBuildInfo(BuildInfo{Version: "v1.2.3", Revision: "deadbeef"})
	if o.Version != "v1.2.3" || o.Revision != "deadbeef" || o.GoVersion != runtime.Version() {
		t.Errorf("overrides not applied: %+v", o)
	}
	want := `
# HELP hotkeyd_build_info A metric with a constant '1' value labeled by the version, revision and Go version hotkeyd was built from.
# TYPE hotkeyd_build_info gauge
hotkeyd_build_info{goversion="go1.26.8",revision="deadbeef",version="v1.2.3"} 1
`
	if err := testutil.CollectAndCompare(NewBuildInfoCollector(BuildInfo{Version: "v1.2.3", Revision: "deadbeef", GoVersion: "go1.26.8"}), strings.NewReader(want)); err != nil {
		t.Error(err)
	}
}
