package bundle

// COPNodesFile lists the public keys of the COP nodes whose ledgers the bundle carries
// (format evident-cop-nodes/v1, docs/profiles/cop.md); present when a COP ledger is.
const COPNodesFile = "trust/cop-nodes.json"

// COPLedgerFile returns the path of a COP Topic's ledger (COP 1.0 §9.6): one JSON object per
// line, record i for the chain's entry i.
func COPLedgerFile(dir string) string { return "chains/" + dir + "/cop-ledger.jsonl" }
