package daemon

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hotkeyd/hotkeyd/internal/app/config"
)

func TestChangedKeys(t *testing.T) {
	base := config.Default()
	for _, c := range []struct {
		change func(*config.Config)
		want   []string
	}{
		{func(*config.Config) {}, nil},
		{func(c *config.Config) { c.Detector.Threshold = 0.3 }, []string{"threshold"}},
		{func(c *config.Config) { c.Detector.Threshold, c.Detector.Top = 0.3, 5 }, []string{"threshold", "detector"}},
		{func(c *config.Config) { c.Detector.Top = 20; c.Window = time.Hour }, []string{"window", "detector"}},
		{func(c *config.Config) { c.Tables = map[string]config.Table{"orders": {PartitionKey: "id"}} }, []string{"tables"}},
		{func(c *config.Config) { c.Keys, c.KeyHashSecret = "hash", "s" }, []string{"keys", "key_hash_secret"}},
	} {
		next := base
		c.change(&next)
		if got := changedKeys(base, next); !slices.Equal(got, c.want) {
			t.Errorf("changedKeys = %v, want %v", got, c.want)
		}
	}
}

// TestReloadKeysClassified: every key of the configuration file says how a
// reload applies it.
func TestReloadKeysClassified(t *testing.T) {
	ct := reflect.TypeFor[config.Config]()
	names := []string{"threshold"} // the detector's, set at the top level
	for i := range ct.NumField() {
		name, _, _ := strings.Cut(ct.Field(i).Tag.Get("yaml"), ",")
		if name != "" && name != "-" {
			names = append(names, name)
		}
	}
	for _, name := range names {
		if _, ok := reloadKeys[name]; !ok {
			t.Errorf("config key %s: not in reloadKeys; say how a reload applies it (and document it in the README)", name)
		}
	}
}
