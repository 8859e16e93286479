package ingest

import (
	"reflect"
	"testing"
)

func TestStatsAdd(t *testing.T) {
	var s Stats
	s.Add(Stats{Records: 3, Events: 2, Rejected: 1, NoSchema: []string{"orders", "carts"}})
	s.Add(Stats{Records: 4, Events: 4, NoSchema: []string{"carts", "accounts"}})
	s.AddNoSchema("orders")
	want := Stats{Records: 7, Events: 6, Rejected: 1, NoSchema: []string{"accounts", "carts", "orders"}}
	if !reflect.DeepEqual(s, want) {
		t.Errorf("got %+v, want %+v", s, want)
	}
}
