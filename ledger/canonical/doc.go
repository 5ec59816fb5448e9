// Package canonical is a strict JSON parser and an RFC 8785 (JSON
// Canonicalization Scheme, JCS) encoder for the evidence-ingest hot path.
//
// Parse accepts exactly RFC 8259 JSON and additionally refuses what RFC 8785
// and I-JSON (RFC 7493) require a canonicalizer to refuse: invalid UTF-8,
// lone surrogates in \u escapes, duplicate object keys (compared after
// unescaping) and numbers that overflow an IEEE 754 double (underflow rounds
// to 0, as in ECMAScript). It also bounds nesting depth and input size.
// Encode writes the RFC 8785 form: no whitespace, object members sorted by
// their UTF-16 code units, strings with the minimal escaping of RFC 8785
// section 3.2.2.2, and numbers in their ECMAScript serialisation (via
// jcs.NumberToJSON).
//
// With Options.SafeIntegersOnly (the CHAP preset) it also applies the CHAP
// 0.3 number rule: a number is accepted only if its exact mathematical value,
// decided on the literal text without rounding through float64, is an integer
// n with |n| <= 2^53-1. Integer-valued forms such as 2.0, 1e2 and -0 are
// accepted and canonicalise to 2, 100 and 0.
//
// What it does not do: it does not stream (the whole value is held in
// memory), it does not decode into Go structs (use the Value tree), it does
// not accept JSON extensions (comments, trailing commas, NaN, a byte order
// mark), and it does not preserve the input's number spelling or member
// order in the canonical output. Strings in a parsed Value may share memory
// with a single copy of the input, so keeping one of them alive keeps that
// copy alive.
package canonical
