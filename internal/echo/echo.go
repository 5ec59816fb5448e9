// Package echo bounds what a service repeats of a client's input in an answer: a path, a
// query value or a header can be as long as the server lets a request be (a megabyte), and a
// problem detail that quotes one whole is as large. Every problem detail of evidentd that
// names something the client sent (a chain id, a path, a query value, a profile) names it
// through String or Quote.
package echo

import (
	"strconv"
	"unicode/utf8"
)

// Max is the most bytes of one client-provided value an answer repeats: every valid chain id
// (1 to 256 bytes) is repeated whole.
const Max = 256

// String returns s when it is at most Max bytes long; otherwise its first Max bytes or fewer,
// cut where a UTF-8 sequence starts (so that valid UTF-8 stays valid), followed by "…" and the
// size of the whole: "aaaa… (100000 bytes)".
func String(s string) string { return Cut(s, Max) }

// Quote is String quoted as strconv.Quote quotes, the marker of a cut outside the quotes:
// "\"aaaa\"… (100000 bytes)".
func Quote(s string) string {
	head, cut := prefix(s, Max)
	if !cut {
		return strconv.Quote(s)
	}
	return strconv.Quote(head) + marker(len(s))
}

// Cut is String with a bound of n bytes, for a whole message (a problem detail) rather than
// one value in it.
func Cut(s string, n int) string {
	head, cut := prefix(s, n)
	if !cut {
		return s
	}
	return head + marker(len(s))
}

// prefix returns the first n bytes of s or fewer, ending before a UTF-8 sequence that would be
// split, and whether s was longer than n.
func prefix(s string, n int) (string, bool) {
	if len(s) <= n {
		return s, false
	}
	i := max(n, 0)
	// Back off over at most utf8.UTFMax-1 continuation bytes; invalid UTF-8 is cut where it is.
	for j := i; j > 0 && j > i-utf8.UTFMax; j-- {
		if utf8.RuneStart(s[j]) {
			i = j
			break
		}
	}
	return s[:i], true
}

func marker(size int) string { return "… (" + strconv.Itoa(size) + " bytes)" }
