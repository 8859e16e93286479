package testenv

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

func TestDynamoDBLocalSurvivesRestart(t *testing.T) {
	d := DynamoDBLocal(t, WithDBPath(t.TempDir()))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	_, err := d.DB.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String("restart"),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
		BillingMode:          types.BillingModePayPerRequest,
	})
	if err != nil {
		t.Fatalf("create table: %v", err)
	}
	if _, err := d.DB.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String("restart"),
		Item:      map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "a"}},
	}); err != nil {
		t.Fatalf("put item: %v", err)
	}
	d.Stop()
	sctx, scancel := context.WithTimeout(ctx, 2*time.Second)
	_, err = d.DB.ListTables(sctx, &dynamodb.ListTablesInput{})
	scancel()
	if err == nil {
		t.Fatal("list tables answered while the emulator was stopped")
	}
	d.Start()
	out, err := d.DB.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String("restart"),
		Key:       map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "a"}},
	})
	if err != nil {
		t.Fatalf("get item after restart: %v", err)
	}
	if out.Item == nil {
		t.Fatal("item lost across restart")
	}
}
