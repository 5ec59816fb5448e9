package client

// SetMaxPolls sets how often Register asks for one pending registration, for a test, and
// returns a function that restores it.
func SetMaxPolls(n int) (restore func()) {
	old := maxPolls
	maxPolls = n
	return func() { maxPolls = old }
}
