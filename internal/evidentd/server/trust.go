package server

import (
	"io"
	"net/http"
	"slices"
	"strings"

	"github.com/evident-log/evident/api"
	"github.com/evident-log/evident/bundle"
	"github.com/evident-log/evident/trustfile"
)

// TrustFileType is the media type of GET /.well-known/evident-trust.
const TrustFileType = "application/json"

// handleLogVKey serves the log's signed-note verifier key as text, as keys/log.vkey holds it.
func (s *Server) handleLogVKey(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	io.WriteString(w, s.c.Service.Log().VerifierKey()+"\n")
}

// handleLogMLDSAVKey serves the log's ML-DSA-44 checkpoint verifier key (a signed-note key of
// type 0x06) as text, as keys/log-mldsa.vkey holds it, or not_found when the log has none.
func (s *Server) handleLogMLDSAVKey(w http.ResponseWriter, r *http.Request) {
	pq := s.c.Service.Log().PostQuantumVerifierKey()
	if pq == "" {
		problem(w, http.StatusNotFound, api.CodeNotFound, "this log has no post-quantum (ML-DSA-44) checkpoint key: evidentd runs without -log-mldsa", -1)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	io.WriteString(w, pq+"\n")
}

// handleTrustFile serves the service's trust file (docs/trust.md): what a verifier pins with
// evident verify --trust.
func (s *Server) handleTrustFile(w http.ResponseWriter, r *http.Request) {
	f, err := s.trustFile()
	var b []byte
	if err == nil {
		b, err = f.Marshal()
	}
	if err != nil {
		s.c.Logger.Error("trust file", "err", err)
		problem(w, http.StatusInternalServerError, api.CodeInternal, "the trust file cannot be made; the service log has why", -1)
		return
	}
	w.Header().Set("Content-Type", TrustFileType)
	w.Header().Set("Cache-Control", "no-cache")
	w.Write(b)
}

// trustFile assembles the trust file from the log and the key history: the current
// checkpoint keys first, then retired ones of the same origin, every statement and receipt
// key with its window, and the witness policy without URLs (as bundles carry it).
func (s *Server) trustFile() (*trustfile.File, error) {
	l := s.c.Service.Log()
	f := &trustfile.File{Format: trustfile.Format, Origin: l.Origin(), LogKeys: []string{l.VerifierKey()}}
	if pq := l.PostQuantumVerifierKey(); pq != "" {
		f.LogMLDSAKeys = []string{pq}
	}
	if wp := l.WitnessPolicy(); wp != nil {
		f.WitnessPolicy = wp.WithoutURLs().String()
	}
	if s.c.SCITT == nil || s.c.SCITT.Keys == nil {
		ik, err := trustfile.IssuerKeyOf(s.c.Service.Signer().Public(), "", "")
		if err != nil {
			return nil, err
		}
		f.IssuerKeys = []trustfile.IssuerKey{ik}
		return f, nil
	}
	h := s.c.SCITT.Keys.History()
	for _, ck := range h.CheckpointKeys {
		name, _, _ := strings.Cut(ck.VKey, "+")
		if name != f.Origin || slices.Contains(f.LogKeys, ck.VKey) || slices.Contains(f.LogMLDSAKeys, ck.VKey) {
			continue
		}
		switch {
		case trustfile.IsMLDSA44(ck.VKey):
			f.LogMLDSAKeys = append(f.LogMLDSAKeys, ck.VKey)
		case ck.Role == bundle.RolePrimary:
			f.LogKeys = append(f.LogKeys, ck.VKey)
		}
	}
	for _, k := range h.Keys {
		f.IssuerKeys = append(f.IssuerKeys, trustfile.IssuerKey{KID: k.KID, COSEKey: k.COSEKey, NotBefore: k.NotBefore, NotAfter: k.NotAfter})
	}
	return f, nil
}
