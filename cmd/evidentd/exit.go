package main

// helpRequested reports whether the arguments ask for help (-h, -help, --help): help asked
// for is an answer, printed on stdout with exit code 0.
func helpRequested(args []string) bool {
	for _, a := range args {
		switch a {
		case "--":
			return false
		case "-h", "--h", "-help", "--help":
			return true
		}
	}
	return false
}
