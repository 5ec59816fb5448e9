//go:build !race

package verifier_test

const raceEnabled = false
