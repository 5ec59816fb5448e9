// Package gendoc keeps the generated sections of the docs current: the text between the lines
//
//	<!-- generated: NAME (HOW TO REGENERATE); do not edit -->
//	<!-- end: NAME -->
//
// which a test fills from the code (the profiles' tables, the import graph).
package gendoc

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
)

// ErrNoSection is returned by Splice for a document without the section's markers.
var ErrNoSection = errors.New("gendoc: no generated section")

// Splice returns doc with the body of its generated section name replaced by body.
func Splice(doc, name, body string) (string, error) {
	i := strings.Index(doc, "<!-- generated: "+name+" ")
	if i < 0 {
		return "", fmt.Errorf("%w %q", ErrNoSection, name)
	}
	nl := strings.Index(doc[i:], "-->\n")
	if nl < 0 {
		return "", fmt.Errorf("%w %q: its begin marker does not end", ErrNoSection, name)
	}
	start := i + nl + len("-->\n")
	j := strings.Index(doc[start:], "<!-- end: "+name+" -->")
	if j < 0 {
		return "", fmt.Errorf("%w %q: no end marker", ErrNoSection, name)
	}
	return doc[:start] + body + doc[start+j:], nil
}

// Section is one generated section: its name and what it must hold.
type Section struct {
	Name, Body string
}

// Update splices the sections into the file at path and reports whether any of them
// changed; with write it rewrites the file, otherwise it leaves it as it is.
func Update(path string, write bool, sections ...Section) (changed bool, err error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return false, err
	}
	doc := string(b)
	for _, s := range sections {
		if doc, err = Splice(doc, s.Name, s.Body); err != nil {
			return false, fmt.Errorf("%s: %w", path, err)
		}
	}
	if doc == string(b) {
		return false, nil
	}
	if write {
		return true, os.WriteFile(path, []byte(doc), 0o644)
	}
	return true, nil
}

// Keep fails tb unless the file at path holds each section's body; with update it rewrites
// the file instead. how says how to update, for the failure message.
func Keep(tb testing.TB, path string, update bool, how string, sections ...Section) {
	tb.Helper()
	changed, err := Update(path, update, sections...)
	if err != nil {
		tb.Fatal(err)
	}
	if changed && !update {
		tb.Errorf("%s: a generated section is not what the code says; run %s", path, how)
	}
}
