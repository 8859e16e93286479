package analyze

import (
	"reflect"
	"testing"

	"github.com/hotkeyd/hotkeyd/internal/app/config"
	"github.com/hotkeyd/hotkeyd/traffic"
)

// defaultPipeline is the pipeline's settings of a config file that sets
// none.
func defaultPipeline() config.Pipeline {
	cfg := config.Default()
	return cfg.Pipeline()
}

func TestKeySchemas(t *testing.T) {
	got, err := KeySchemas(map[string]traffic.KeySchema{"Music": {PartitionKey: "Artist"}, "orders": {PartitionKey: "x"}},
		[]string{"orders=PK,SK", "sessions=id"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]traffic.KeySchema{
		"Music":    {PartitionKey: "Artist"},
		"orders":   {PartitionKey: "PK", SortKey: "SK"},
		"sessions": {PartitionKey: "id"},
	}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for k, v := range want {
		if !reflect.DeepEqual(got[k], v) {
			t.Errorf("%s = %+v, want %+v", k, got[k], v)
		}
	}
	for _, bad := range []string{"orders", "=PK", "orders=", "orders=a,b,c"} {
		if _, err := KeySchemas(nil, []string{bad}); err == nil {
			t.Errorf("--key-schema %q accepted", bad)
		}
	}
}
