package api

import "github.com/evident-log/evident/ledger"

// ChainSummary is one chain as GET /v1/chains lists it.
type ChainSummary struct {
	Chain      string      `json:"chain"`
	Profile    string      `json:"profile"`
	Size       uint64      `json:"size"`
	Head       ledger.Link `json:"head"`
	Closed     bool        `json:"closed"`
	LastSeal   string      `json:"last_seal,omitempty"`
	SealedSize uint64      `json:"sealed_size"`
	Created    string      `json:"created"` // RFC 3339, when the chain's first record arrived
}

// ChainsPage is one page of GET /v1/chains?after=&limit=, chains in id order.
type ChainsPage struct {
	Chains []ChainSummary `json:"chains"`
	// Next is the after= of the following page; empty when this page is the last.
	Next string `json:"next,omitempty"`
}
