// Package oldfmt decodes the byte formats of the embedded store before the Pebble store,
// for package legacy: the frames of the record file and of the entry journal's segments,
// and the journal's payloads (condensed from the old packages frame and journal). It is
// apart from package legacy so that its fuzz target runs without the SQLite driver linked
// in (whose size made coverage-guided fuzzing crawl).
package oldfmt

import "errors"

// ErrCorrupt is wrapped by every error of bytes that do not decode: a journal frame that
// does not check (other than a torn tail of the last segment), a payload that does not
// decode, a segment without its magic.
var ErrCorrupt = errors.New("embedded store of an earlier evidentd is corrupt")
