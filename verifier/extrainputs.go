package verifier

import (
	"bytes"
	"fmt"

	"github.com/evident-log/evident/misbehaviour"
)

// extraItem is one checkpoint an ExtraCheckpoint expands into, with the consistency proof
// that came with it (hasProof), from tree size old.
type extraItem struct {
	name     string
	raw      []byte
	old      uint64
	hashes   [][]byte
	hasProof bool
}

// expandExtra turns an extra input into its checkpoints. A checkpoint note is itself; an
// add-checkpoint body is its checkpoint with its proof; JSON is whatever
// misbehaviour.ParseAll reads (a proof of misbehaviour, a witness's forks answer or fork
// record, an evidentd refusal with a proof), each proof giving its smaller checkpoint, its
// larger one with the consistency proof from the smaller's size, and its references, named
// NAME#1, NAME#2, … in that order.
func expandExtra(x ExtraCheckpoint) ([]extraItem, error) {
	if !isJSON(x.Data) {
		raw, old, hashes, ok := splitExtra(x.Data)
		return []extraItem{{name: x.Name, raw: raw, old: old, hashes: hashes, hasProof: ok}}, nil
	}
	proofs, err := misbehaviour.ParseAll(x.Data)
	if err != nil {
		return nil, err
	}
	var items []extraItem
	add := func(it extraItem) {
		it.name = fmt.Sprintf("%s#%d", x.Name, len(items)+1)
		items = append(items, it)
	}
	for _, p := range proofs {
		small, large := []byte(p.Checkpoints[0]), []byte(p.Checkpoints[1])
		add(extraItem{raw: small})
		it := extraItem{raw: large}
		if p.Kind == misbehaviour.KindInconsistent {
			it.old, it.hasProof = noteSize(small), true
			if it.hashes, err = p.Hashes(); err != nil {
				return nil, err
			}
		}
		add(it)
		for _, r := range p.References {
			add(extraItem{raw: []byte(r)})
		}
	}
	return items, nil
}

// isJSON says whether data is a JSON object or array (a checkpoint note starts with its origin).
func isJSON(data []byte) bool {
	t := bytes.TrimLeft(data, " \t\r\n")
	return len(t) > 0 && (t[0] == '{' || t[0] == '[')
}

// noteSize is the tree size a checkpoint note's body states (0 when it states none); the
// note's signature is verified where it is used.
func noteSize(n []byte) uint64 {
	_, size, _ := misbehaviour.CheckpointSize(n)
	return size
}
