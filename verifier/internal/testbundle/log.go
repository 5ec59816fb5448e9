package testbundle

import (
	"crypto/sha256"
	"fmt"

	tlog "github.com/transparency-dev/formats/log"
	"golang.org/x/mod/sumdb/note"
)

// addFiller registers Options.Filler other statements in the log, numbered on from the last.
func (bd *builder) addFiller() {
	for range bd.o.Filler {
		h := sha256.Sum256([]byte(fmt.Sprintf("other statement %d", bd.filler)))
		bd.filler++
		bd.tree.AppendData(h[:])
	}
}

// checkpointAt is the log's C2SP checkpoint at size, signed the first time it is asked for
// (every checkpoint signed is kept, for Options.CheckpointFiles).
func (bd *builder) checkpointAt(size uint64) []byte {
	bd.tb.Helper()
	if cp, ok := bd.checkpoints[size]; ok {
		return cp
	}
	body := tlog.Checkpoint{Origin: bd.b.Origin, Size: size, Hash: bd.tree.HashAt(size)}.Marshal()
	cp, err := note.Sign(&note.Note{Text: string(body)}, bd.noteSigner)
	bd.must(err)
	bd.checkpoints[size] = cp
	return cp
}
