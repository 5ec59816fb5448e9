package main

import (
	"fmt"
	"io"
	"os"

	"github.com/evident-log/evident/misbehaviour"
)

// writeProofs writes each proof of misbehaviour into dir and says on stderr where, and how
// to check it; keyHint names the log key in that advice.
func writeProofs(dir string, proofs []*misbehaviour.Proof, keyHint string, stderr io.Writer) error {
	for _, p := range proofs {
		path, err := misbehaviour.WriteFile(dir, p)
		if err != nil {
			return err
		}
		fmt.Fprintf(stderr, "proof of misbehaviour written to %s: check it with evident misbehaviour check %s --log-key %s\n", path, path, keyHint)
	}
	return nil
}

// logKeyHint names the log key for the advice printed with a proof: the first --log-key
// that is a file, else KEY.
func logKeyHint(values []string) string {
	for _, v := range values {
		if st, err := os.Stat(v); err == nil && st.Mode().IsRegular() {
			return v
		}
	}
	return "KEY"
}
