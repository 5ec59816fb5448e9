package main

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"

	"github.com/evident-log/evident/misbehaviour"
	"github.com/evident-log/evident/trustfile"
)

// maxKeyFile bounds a file given as a log key: a vkey, a few of them, or a trust file.
const maxKeyFile = trustfile.MaxSize

// readVKeys turns --log-key values into the log's signed-note verifier keys, each listed
// once. A value is a vkey (Ed25519, key type 0x01, or ML-DSA-44, key type 0x06), a file
// holding vkeys one a line (keys/log.vkey, trust/log-mldsa.vkey of a bundle), or a trust file,
// whose Ed25519 and ML-DSA-44 log keys are all taken: a user never cuts a file by hand. Two
// different keys of one name and key hash are refused: no signature line could tell them apart.
func readVKeys(values []string) ([]string, error) {
	var out []string
	for _, v := range values {
		keys, err := logKeysOf(v)
		if err != nil {
			return nil, err
		}
		for _, k := range keys {
			if !slices.Contains(out, k) {
				out = append(out, k)
			}
		}
	}
	if _, err := misbehaviour.Verifiers(out); err != nil {
		return nil, err
	}
	return out, nil
}

// logKeysOf reads one --log-key value: a file when one of that name exists, else a vkey.
func logKeysOf(v string) ([]string, error) {
	b, err := readKeyFile(v)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return checkVKeys(v, []string{strings.TrimSpace(v)})
	case err != nil:
		return nil, err
	}
	if t := bytes.TrimSpace(b); len(t) > 0 && t[0] == '{' {
		tf, err := trustfile.Parse(b)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", v, err)
		}
		return append(slices.Clone(tf.LogKeys), tf.LogMLDSAKeys...), nil
	}
	var keys []string
	for _, line := range strings.Split(string(b), "\n") {
		if line = strings.TrimSpace(line); line != "" {
			keys = append(keys, line)
		}
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("%s: no vkey in the file", v)
	}
	return checkVKeys(v, keys)
}

// readKeyFile reads a file named as a key, refusing one too large to be a key or trust file.
func readKeyFile(name string) ([]byte, error) {
	b, err := readAtMost(name, maxKeyFile)
	if err == nil && len(b) > maxKeyFile {
		return nil, fmt.Errorf("%s: over %d bytes, not a key or a trust file", name, maxKeyFile)
	}
	return b, err
}

// checkVKeys checks that every key parses as an Ed25519 or ML-DSA-44 signed-note verifier key.
func checkVKeys(from string, keys []string) ([]string, error) {
	for _, k := range keys {
		if _, err := misbehaviour.Verifiers([]string{k}); err != nil {
			if k == from {
				return nil, fmt.Errorf("%.80q is neither a vkey (Ed25519 or ML-DSA-44), nor a file holding one, nor a trust file: %w", k, err)
			}
			return nil, fmt.Errorf("%s: %w", from, err)
		}
	}
	return keys, nil
}
