package log

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/evident-log/evident/misbehaviour"
	"github.com/evident-log/evident/tlogpolicy"
	"github.com/evident-log/evident/tlogwitness"
)

// Witness refusals.
//
// Tessera posts each checkpoint to the witnesses of the policy with the HTTP client of its
// driver and only reports a refusal as an error. A witness that refuses the log's checkpoint
// as contradicting one it cosigned (tlog-witness: a 409 that is not a size answer, or a 422)
// says the log's key may have signed another history, which an operator must learn and keep.
// refusalWatcher is that client's RoundTripper: it sees the witnesses' answers on their way to
// Tessera, hands each refusal to WitnessConfig.OnRefusal, and passes every answer through
// unchanged.

// IsRefusal reports whether a witness's answer refuses a checkpoint as contradicting the one
// it cosigned: 422 (the consistency proof failed), or 409 without the size answer's content
// type (the same tree size with another root). It reads the content type as Tessera does: a
// 409 is a size answer only with exactly one Content-Type, SizeContentType.
func IsRefusal(status int, h http.Header) bool {
	switch status {
	case http.StatusUnprocessableEntity:
		return true
	case http.StatusConflict:
		ct := h.Values("Content-Type")
		return len(ct) != 1 || ct[0] != tlogwitness.SizeContentType
	}
	return false
}

// refusalWatcher is an http.RoundTripper that observes the add-checkpoint POSTs to the
// witnesses it knows (by URL) and reports their refusals.
type refusalWatcher struct {
	base      http.RoundTripper
	witnesses map[string]string // add-checkpoint URL → witness name
	onRefusal func(*misbehaviour.Refusal)
	now       func() time.Time
}

// witnessClient returns the client Tessera posts checkpoints with: base (nil for
// http.DefaultClient) with a transport that reports the refusals of the policy's witnesses
// to c.OnRefusal. Without witnesses or OnRefusal it returns base unchanged.
func witnessClient(c *WitnessConfig, base *http.Client) (*http.Client, error) {
	if c == nil || c.OnRefusal == nil {
		return base, nil
	}
	p, err := tlogpolicy.Parse(c.Policy)
	if err != nil {
		return nil, fmt.Errorf("log: witness policy: %w", err)
	}
	ws := map[string]string{}
	for _, w := range p.Witnesses {
		u, err := url.Parse(w.URL)
		if err != nil {
			return nil, fmt.Errorf("log: witness policy: witness %q: %w", w.Name, err)
		}
		ws[u.JoinPath("/add-checkpoint").String()] = w.Name // the URL Tessera posts to
	}
	hc := http.Client{}
	if base != nil {
		hc = *base
	}
	rt := hc.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	hc.Transport = &refusalWatcher{base: rt, witnesses: ws, onRefusal: c.OnRefusal, now: time.Now}
	return &hc, nil
}

// RoundTrip implements http.RoundTripper.
func (rw *refusalWatcher) RoundTrip(req *http.Request) (*http.Response, error) {
	name, watched := rw.witnesses[req.URL.String()]
	if !watched || req.Method != http.MethodPost {
		return rw.base.RoundTrip(req)
	}
	sent, out, err := requestBody(req)
	if err != nil {
		return nil, fmt.Errorf("log: witness %s: reading the add-checkpoint body: %w", name, err)
	}
	resp, err := rw.base.RoundTrip(out)
	if err != nil || !IsRefusal(resp.StatusCode, resp.Header) {
		return resp, err
	}
	answered, err := refusalAnswer(resp)
	if err != nil {
		return resp, nil // Tessera reads the same body and reports the failure itself
	}
	rw.onRefusal(misbehaviour.NewRefusal(name, req.URL.String(), resp.StatusCode, sent, answered, rw.now()))
	return resp, nil
}

// requestBody returns a copy of req's body (at most tlogwitness.MaxRequestSize bytes of it)
// and the request to send, which still has its whole body: req itself when it can give its
// body again (GetBody, as Tessera's requests can), else a clone of req reading a buffer of
// what req's body held. On error req's body is closed, as http.RoundTripper requires.
func requestBody(req *http.Request) ([]byte, *http.Request, error) {
	if req.Body == nil || req.Body == http.NoBody {
		return nil, req, nil
	}
	if req.GetBody != nil {
		b, err := bodyAgain(req)
		if err != nil {
			req.Body.Close()
			return nil, nil, err
		}
		return b, req, nil
	}
	b, err := io.ReadAll(req.Body)
	req.Body.Close()
	if err != nil {
		return nil, nil, err
	}
	out := req.Clone(req.Context())
	out.Body = io.NopCloser(bytes.NewReader(b))
	return b[:min(len(b), tlogwitness.MaxRequestSize)], out, nil
}

// bodyAgain reads at most tlogwitness.MaxRequestSize bytes of a fresh copy of req's body.
func bodyAgain(req *http.Request) ([]byte, error) {
	rc, err := req.GetBody()
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return io.ReadAll(io.LimitReader(rc, tlogwitness.MaxRequestSize))
}

// refusalAnswer returns the first misbehaviour.MaxResponse bytes of a refusal's body (all of
// a proof of misbehaviour whose checkpoints and references carry ML-DSA-44 signatures, about
// 200 KB at most) and puts them back in front of the rest, so that Tessera reads the whole
// body unchanged.
func refusalAnswer(resp *http.Response) ([]byte, error) {
	head, err := io.ReadAll(io.LimitReader(resp.Body, misbehaviour.MaxResponse))
	resp.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(head), resp.Body), resp.Body}
	return head, err
}
