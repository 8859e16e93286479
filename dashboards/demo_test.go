package dashboards

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hotkeyd/hotkeyd/ingest"
	"github.com/hotkeyd/hotkeyd/ingest/demo"
	"github.com/hotkeyd/hotkeyd/internal/testenv"
)

// startDemo starts hotkeyd on a workload with a planted hot key and returns
// the process and the planted keys. Until the built-in demo workload is in
// the binary it runs `hotkeyd run` on JSON lines written to its stdin: 500
// users of table orders, one of them (USER#42) taking a quarter of the writes.
func startDemo(t *testing.T) (*testenv.Hotkeyd, []demo.Plant) {
	t.Helper()
	cfg := filepath.Join(t.TempDir(), "hotkeyd.yaml")
	if err := os.WriteFile(cfg, []byte("window: 10s\nsources:\n  - type: jsonl\n    paths: [\"-\"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	pr, pw := io.Pipe()
	done := make(chan struct{})
	t.Cleanup(func() { close(done); pw.Close() })
	go func() {
		i := 0
		for {
			select {
			case <-done:
				return
			case <-time.After(5 * time.Millisecond):
			}
			for j := 0; j < 20; j++ {
				i++
				pk := fmt.Sprintf("USER#%d", i%500)
				if i%4 == 0 {
					pk = "USER#42"
				}
				fmt.Fprintf(pw, `{"table":"orders","pk":%q,"op":"PutItem","units":1}`+"\n", pk)
			}
		}
	}()
	h := testenv.StartHotkeyd(t, testenv.HotkeydOptions{Stdin: pr}, "run", "--config.file="+cfg)
	return h, []demo.Plant{{Table: "orders", Key: "USER#42", Class: ingest.Write, Findings: []string{"hot_key"}}}
}
