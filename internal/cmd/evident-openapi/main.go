// Command evident-openapi prints the OpenAPI description evidentd serves with the profiles it
// serves by default: api/openapi.json with the routes the profiles add (the COP Ledger). CI
// lints it as it lints the committed file.
package main

import (
	"crypto"
	"crypto/ed25519"
	"fmt"
	"os"

	"github.com/evident-log/evident/internal/evidentd/server"
	"github.com/evident-log/evident/ledger/profile"
	"github.com/evident-log/evident/ledger/profile/service"
)

func main() {
	// The routes do not depend on the keys: a throwaway key opens each extension.
	exts, err := profile.Default().Open(func(profile.Provider) (service.Env, error) {
		return service.Env{Origin: "example.org/log", Key: func(string) (crypto.Signer, error) {
			_, k, err := ed25519.GenerateKey(nil)
			return k, err
		}}, nil
	})
	if err == nil {
		err = server.CheckExtensions(exts)
	}
	var desc []byte
	if err == nil {
		desc, err = server.Describe(exts)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "evident-openapi:", err)
		os.Exit(1)
	}
	os.Stdout.Write(desc)
}
