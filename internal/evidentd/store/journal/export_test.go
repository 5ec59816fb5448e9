package journal

// Crash stops l as a kill -9 would leave it: the indexer stops, nothing more is folded into
// the store, and the journal's files and lock are let go. The inner store is not closed.
func (l *Ledger) Crash() {
	l.closeOnce.Do(func() {
		l.cancel()
		<-l.done
		<-l.loaded
		l.log.Close()
		l.lock()
	})
}

// ReadSegment exposes readSegment to the tests.
var ReadSegment = readSegment

// Encode and Decode expose the frame payload's codec to the tests.
var (
	Encode       = encode
	Decode       = decode
	PayloadBound = payloadBound
)

// SegmentMagic is the first bytes of every segment.
const SegmentMagic = segmentMagic

// IDsReady reports whether the filter of record ids answers (the store's ids are read).
func (l *Ledger) IDsReady() bool {
	l.ov.RLock()
	defer l.ov.RUnlock()
	return l.ids.ready
}
