package testenv

import (
	"context"
	"net"
	"net/http"
	"os"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
)

// stranger is another process's server on a loopback port: it answers
// every request the way an emulator would, so a start that only asks the
// port whether it answers takes it for its own.
func stranger(t *testing.T, body string) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		_, _ = w.Write([]byte(body))
	})}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return l.Addr().(*net.TCPAddr).Port
}

// takenFirst picks taken first and free ports after it, counting picks.
func takenFirst(taken int, picks *atomic.Int32) func() (int, error) {
	return func() (int, error) {
		if picks.Add(1) == 1 {
			return taken, nil
		}
		return freePort()
	}
}

// TestDynamoDBLocalPortTaken gives DynamoDB Local a port another server
// holds, one that answers ListTables: the emulator fails to bind it and
// stays up, and the start sees that, never takes the stranger for the
// emulator, and starts again on a new port.
func TestDynamoDBLocalPortTaken(t *testing.T) {
	taken := stranger(t, `{"TableNames":["not-mine"]}`)
	var picks atomic.Int32
	d := DynamoDBLocal(t, func(o *ddbOptions) { o.pick = takenFirst(taken, &picks) })
	if d.port == taken {
		t.Fatalf("DynamoDB Local's endpoint is %s, the port another server holds", d.Endpoint)
	}
	if got := picks.Load(); got != 2 {
		t.Errorf("%d ports picked, want 2 (the taken one, then a free one)", got)
	}
	out, err := d.DB.ListTables(context.Background(), &dynamodb.ListTablesInput{})
	if err != nil || len(out.TableNames) != 0 {
		t.Errorf("ListTables on the emulator = %v, %v; want no tables", out, err)
	}
}

// TestKinesalitePortTaken does the same for kinesalite, which exits when
// its port is taken.
func TestKinesalitePortTaken(t *testing.T) {
	taken := stranger(t, `{"StreamNames":["not-mine"],"HasMoreStreams":false}`)
	var picks atomic.Int32
	k := startKinesalite(t, takenFirst(taken, &picks))
	if k.p.port == taken {
		t.Fatalf("kinesalite's endpoint is %s, the port another server holds", k.Endpoint)
	}
	if got := picks.Load(); got != 2 {
		t.Errorf("%d ports picked, want 2 (the taken one, then a free one)", got)
	}
	out, err := k.Client.ListStreams(context.Background(), &kinesis.ListStreamsInput{})
	if err != nil || len(out.StreamNames) != 0 {
		t.Errorf("ListStreams on the emulator = %v, %v; want no streams", out, err)
	}
}

// TestListensOn tells this process's listener from a port it does not
// hold.
func TestListensOn(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port
	if ok, err := listensOn(os.Getpid(), port); err != nil || !ok {
		t.Errorf("listensOn(self, %d) = %v, %v; want true", port, ok, err)
	}
	free, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := listensOn(os.Getpid(), free); err != nil || ok {
		t.Errorf("listensOn(self, %d) = %v, %v; want false", free, ok, err)
	}
}
