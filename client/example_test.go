package client_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/evident-log/evident/api"
	"github.com/evident-log/evident/client"
)

func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := client.New("http://127.0.0.1:8080", client.WithToken(os.Getenv("EVIDENT_TOKEN")))
	if err != nil {
		log.Fatal(err)
	}
	records := [][]byte{[]byte(`{"jsonrpc":"2.0","id":"1","method":"task.create","params":{"task_id":"t1"}}`)}
	res, err := c.Submit(ctx, "wsp_acme", records)
	switch {
	case client.IsCode(err, api.CodePushback):
		log.Print("the log is busy; retry later")
		return
	case err != nil:
		log.Fatal(err)
	}
	fmt.Println("chain size", res.Size, "head", res.Head)
	seal, err := c.Seal(ctx, "wsp_acme", false)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("seal", seal.N, "at log index", seal.LogIndex)
	f, err := os.Create("wsp_acme.evident.zip")
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	if _, err := c.Export(ctx, client.ExportQuery{Chains: []string{"wsp_acme"}}, f); err != nil {
		log.Fatal(err)
	}
}
