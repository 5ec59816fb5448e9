package witness

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"sort"
	"strings"

	fnote "github.com/transparency-dev/formats/note"
	"golang.org/x/mod/sumdb/note"
)

// ErrConfig is wrapped by every error in a known-logs file.
var ErrConfig = errors.New("witness config")

// MaxConfigSize bounds a known-logs file.
const MaxConfigSize = 4 << 20

// KnownLog is a log the witness accepts checkpoints from.
type KnownLog struct {
	// Origin is the checkpoint origin line of the log.
	Origin string
	// VKeys are the log's signed-note verifier keys; a checkpoint needs a valid signature
	// by at least one of them (several keys: a key rotation in progress).
	VKeys []string

	verifiers []note.Verifier
}

// Config is the witness's list of known logs, read from a text file:
//
//	# comments run to the end of the line
//	log <origin> <vkey> [<vkey>...]
//
// One line per log; origins are unique. Each vkey is a C2SP signed-note verifier key
// ("<name>+<hash>+<base64>", Ed25519 or any algorithm transparency-dev/formats reads).
type Config struct {
	Logs []KnownLog
}

// ParseConfig reads a known-logs file.
func ParseConfig(b []byte) (*Config, error) {
	if len(b) > MaxConfigSize {
		return nil, fmt.Errorf("%w: %d bytes is over %d", ErrConfig, len(b), MaxConfigSize)
	}
	c := &Config{}
	seen := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 4096), MaxConfigSize)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if f[0] != "log" || len(f) < 3 {
			return nil, fmt.Errorf("%w: line %d: want: log <origin> <vkey> [<vkey>...]", ErrConfig, n)
		}
		l := KnownLog{Origin: f[1], VKeys: append([]string(nil), f[2:]...)}
		if seen[l.Origin] {
			return nil, fmt.Errorf("%w: line %d: origin %.80q listed twice", ErrConfig, n, l.Origin)
		}
		seen[l.Origin] = true
		for _, k := range l.VKeys {
			v, err := fnote.NewVerifier(k)
			if err != nil {
				return nil, fmt.Errorf("%w: line %d: key %.80q: %v", ErrConfig, n, k, err)
			}
			l.verifiers = append(l.verifiers, v)
		}
		c.Logs = append(c.Logs, l)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	return c, nil
}

// String prints the config; ParseConfig(c.String()) gives the same logs, sorted by origin.
func (c *Config) String() string {
	logs := append([]KnownLog(nil), c.Logs...)
	sort.Slice(logs, func(i, j int) bool { return logs[i].Origin < logs[j].Origin })
	var b strings.Builder
	for _, l := range logs {
		b.WriteString("log " + l.Origin + " " + strings.Join(l.VKeys, " ") + "\n")
	}
	return b.String()
}

// NewKnownLog makes a KnownLog from an origin and its verifier keys.
func NewKnownLog(origin string, vkeys ...string) (KnownLog, error) {
	c, err := ParseConfig([]byte("log " + origin + " " + strings.Join(vkeys, " ") + "\n"))
	if err != nil {
		return KnownLog{}, err
	}
	if len(c.Logs) != 1 || c.Logs[0].Origin != origin {
		return KnownLog{}, fmt.Errorf("%w: origin %.80q", ErrConfig, origin)
	}
	return c.Logs[0], nil
}
