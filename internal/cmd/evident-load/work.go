package main

import (
	"bytes"
	"fmt"
	"time"

	"github.com/evident-log/evident/internal/scenario/chapscenario"
)

// scenarioStart is the first envelope's timestamp: every run sends the same envelopes.
var scenarioStart = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// generate signs the n envelopes of chain (chapscenario.Long) and hands them to deliver in
// request bodies of up to batch envelopes each, in chain order.
func generate(chain string, n, batch int, deliver func(body []byte, count int) error) error {
	var buf bytes.Buffer
	count := 0
	flush := func() error {
		if count == 0 {
			return nil
		}
		if err := deliver(buf.Bytes(), count); err != nil {
			return err
		}
		buf.Reset()
		count = 0
		return nil
	}
	_, err := chapscenario.Long(chain, n, scenarioStart, func(raw []byte) error {
		if count > 0 {
			buf.WriteByte('\n')
		}
		buf.Write(raw)
		count++
		if count >= batch {
			return flush()
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("chain %s: %w", chain, err)
	}
	return flush()
}

// chainLoad is one chain's request bodies, signed before the run.
type chainLoad struct {
	bodies [][]byte
	counts []int
}

// each hands the bodies to deliver in order.
func (l *chainLoad) each(deliver func(body []byte, count int) error) error {
	for i, b := range l.bodies {
		if err := deliver(b, l.counts[i]); err != nil {
			return err
		}
	}
	return nil
}

// prepareAll signs every chain's envelopes into request bodies.
func prepareAll(cfg config) ([]*chainLoad, error) {
	out := make([]*chainLoad, cfg.chains)
	for c := range out {
		l := &chainLoad{}
		err := generate(fmt.Sprintf("%s_%d", cfg.prefix, c), cfg.n, cfg.batch, func(body []byte, count int) error {
			l.bodies = append(l.bodies, bytes.Clone(body))
			l.counts = append(l.counts, count)
			return nil
		})
		if err != nil {
			return nil, err
		}
		out[c] = l
	}
	return out, nil
}

// contentType is the media type of a request body of count envelopes.
func contentType(count int) string {
	if count == 1 {
		return "application/json"
	}
	return "application/jsonl"
}
