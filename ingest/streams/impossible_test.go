package streams

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/hotkeyd/hotkeyd/ingest/internal/ingesttest"
	"github.com/hotkeyd/hotkeyd/ingest/internal/shards"
	"github.com/hotkeyd/hotkeyd/internal/testenv"
)

// impossibleSequences are checkpoint positions that are well-formed JSON
// but no position of the shard: not a sequence number, and a sequence
// number past the shard's last record.
var impossibleSequences = map[string]string{
	"NotANumber":  "abc",
	"BeyondShard": "999999999999999999999999999999999999",
}

// TestImpossibleCheckpoint runs the reader on a checkpoint file that holds
// a sequence number DynamoDB refuses (its ValidationException, from
// DynamoDB Local): the checkpoint is treated as corrupt — reported, moved
// aside, the shard read again from its first record — instead of being
// retried forever.
func TestImpossibleCheckpoint(t *testing.T) {
	d := testenv.DynamoDBLocal(t)
	for name, seq := range impossibleSequences {
		t.Run(name, func(t *testing.T) { testImpossibleCheckpoint(t, d, "f_imp_"+strings.ToLower(name), seq) })
	}
	t.Run("Leased", func(t *testing.T) {
		for name, seq := range impossibleSequences {
			t.Run(name, func(t *testing.T) { testImpossibleLeaseCheckpoint(t, d, "l_imp_"+strings.ToLower(name), seq) })
		}
	})
	t.Run("FolderNotWritable", func(t *testing.T) { testCheckpointFolderNotWritable(t, d) })
}

func testImpossibleCheckpoint(t *testing.T, d *testenv.DDBLocal, table, seq string) {
	createTable(t, d, hashTable(table))
	putItems(t, d.DB, table, "pk", "k", 0, 20)
	arn, shard, _ := readShard(t, d, table)
	dir := t.TempDir()
	cps := shards.NewStore(dir)
	if err := cps.Save(shards.Checkpoint{StreamARN: arn, ShardID: shard, Sequence: seq, Updated: time.Now().UTC()}); err != nil {
		t.Fatal(err)
	}
	file := cps.Path(arn, shard)

	cfg := fastConfig()
	cfg.Tables = []string{table}
	cfg.CheckpointDir = dir
	// Room for the SDK's own retries of a server error within one call.
	cfg.CallTimeout = 10 * time.Second
	r := start(t, cfg, d.Streams, d.DB)
	ingesttest.WaitFor(t, ingesttest.Eventually, "the shard read from its first record", func() bool { return len(r.sink.Events()) >= 20 })
	r.stop(t)
	exactlyOnce(t, keysOf(r.sink, table), "k", 20)
	if err := r.rep.Last(shards.ReasonCheckpoint); err == nil || !strings.Contains(err.Error(), file) {
		t.Errorf("checkpoint error %v does not name %s", err, file)
	}
	if _, err := os.Stat(file + ".corrupt"); err != nil {
		t.Errorf("impossible checkpoint not kept aside: %v", err)
	}
	b, err := os.ReadFile(file)
	var cp shards.Checkpoint
	if err != nil || json.Unmarshal(b, &cp) != nil || cp.Sequence == seq || cp.Sequence == "" {
		t.Errorf("no new checkpoint written: %v, %s", err, b)
	}
	if got := r.logged("unusable checkpoint"); got != 1 {
		t.Errorf("%d log lines about the checkpoint, want 1", got)
	}
}

// testImpossibleLeaseCheckpoint is the same fault where the checkpoint
// lives: in the shard's lease item.
func testImpossibleLeaseCheckpoint(t *testing.T, d *testenv.DDBLocal, table, seq string) {
	leases := table + "_leases"
	createTable(t, d, hashTable(table))
	putItems(t, d.DB, table, "pk", "k", 0, 20)
	arn, shard, _ := readShard(t, d, table)
	createLeaseTable(t, d, leases)
	if _, err := d.DB.PutItem(context.Background(), &dynamodb.PutItemInput{
		TableName: aws.String(leases),
		Item: map[string]ddbtypes.AttributeValue{
			"leaseKey":     &ddbtypes.AttributeValueMemberS{Value: arn + ":" + shard},
			"leaseCounter": &ddbtypes.AttributeValueMemberN{Value: "1"},
			"checkpoint":   &ddbtypes.AttributeValueMemberS{Value: seq},
		},
	}); err != nil {
		t.Fatal(err)
	}
	cfg := leasedConfig(leases, "w1", table)
	cfg.CallTimeout = 10 * time.Second
	r := start(t, cfg, d.Streams, d.DB)
	ingesttest.WaitFor(t, ingesttest.Eventually, "the shard read from its first record", func() bool { return len(r.sink.Events()) >= 20 })
	time.Sleep(300 * time.Millisecond)
	r.stop(t)
	exactlyOnce(t, keysOf(r.sink, table), "k", 20)
	out, err := d.DB.GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName: aws.String(leases),
		Key:       map[string]ddbtypes.AttributeValue{"leaseKey": &ddbtypes.AttributeValueMemberS{Value: arn + ":" + shard}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if cp, _ := out.Item["checkpoint"].(*ddbtypes.AttributeValueMemberS); cp == nil || cp.Value == seq {
		t.Errorf("the lease still holds the impossible checkpoint: %+v", out.Item["checkpoint"])
	}
}

// testCheckpointFolderNotWritable gives the reader a checkpoint folder
// that cannot be made (a file stands in its path): the reader reads on and
// is not ready while that lasts; it is ready again once checkpoints can
// be written.
func testCheckpointFolderNotWritable(t *testing.T, d *testenv.DDBLocal) {
	const table = "f_cp_folder"
	createTable(t, d, hashTable(table))
	base := t.TempDir()
	blocker := filepath.Join(base, "blocker")
	if err := os.WriteFile(blocker, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := fastConfig()
	cfg.Tables = []string{table}
	cfg.CheckpointDir = filepath.Join(blocker, "checkpoints")
	r := start(t, cfg, d.Streams, d.DB)
	putItems(t, d.DB, table, "pk", "k", 0, 5)
	ingesttest.WaitFor(t, ingesttest.Eventually, "5 events", func() bool { return len(r.sink.Events()) >= 5 })
	ingesttest.WaitFor(t, ingesttest.Eventually, "not ready", func() bool {
		err := r.src.Ready()
		return err != nil && strings.Contains(err.Error(), "checkpoint")
	})
	if err := os.Remove(blocker); err != nil {
		t.Fatal(err)
	}
	putItems(t, d.DB, table, "pk", "k", 5, 5)
	ingesttest.WaitFor(t, ingesttest.Eventually, "ready again", func() bool { return r.src.Ready() == nil })
	r.stop(t)
}
