package replay

import (
	"fmt"
	"strings"

	"github.com/evident-log/evident/ledger"
	"github.com/evident-log/evident/ledger/profile/chap"
)

// The workspace family: creation, profiles, modes, membership and keys, audit submission.

func (b *Builder) workspaceCreate(c *call) string {
	// The reference Coordinator starts a workspace in trial mode unless told otherwise.
	b.setMode(c.seq, c.r, firstNonEmpty(str(c.p, "mode"), "trial"))
	return fmt.Sprintf("%s created workspace %s (profiles %s, mode %s)", orDash(c.r.From), firstNonEmpty(str(c.p, "workspace_id"), c.r.Workspace), strings.Join(strs(c.p, "profiles"), ", "), orDash(b.mode))
}

func (b *Builder) setProfiles(c *call) string {
	profiles := strings.Join(strs(c.p, "profiles"), ", ")
	b.t.Controls = append(b.t.Controls, fmt.Sprintf("profiles set to %s by %s at seq %d", profiles, c.r.From, c.seq))
	return fmt.Sprintf("%s set the workspace's profiles: %s", c.r.From, profiles)
}

func (b *Builder) modeChange(c *call) string {
	md := firstNonEmpty(str(c.p, "mode"), str(c.p, "to"))
	prev := b.mode
	b.setMode(c.seq, c.r, md)
	return fmt.Sprintf("%s changed mode %s → %s", c.r.From, orDash(prev), orDash(md))
}

func (b *Builder) setMode(seq uint64, r *chap.Record, md string) {
	mc := ModeChange{Seq: seq, By: r.From, From: b.mode, To: md}
	if !r.TS.IsZero() {
		mc.TS = ledger.Timestamp(r.TS)
	}
	b.t.Modes = append(b.t.Modes, mc)
	b.mode = md
}

func (b *Builder) join(c *call) string {
	uri := firstNonEmpty(str(c.p, "uri"), str(c.p, "participant"), c.r.From)
	if _, known := b.roles[uri]; !known {
		b.roles[uri] = firstNonEmpty(str(c.p, "role"), b.left[uri])
	}
	if uri != c.r.From {
		return fmt.Sprintf("%s admitted %s as %s", c.r.From, uri, orDash(b.roles[uri]))
	}
	return fmt.Sprintf("%s joined as %s", uri, orDash(b.roles[uri]))
}

func (b *Builder) leave(c *call) string {
	// The reference Coordinator deletes the member: it is no member from here on.
	if role, ok := b.roles[c.r.From]; ok {
		b.left[c.r.From] = role
		delete(b.roles, c.r.From)
	}
	return c.r.From + " left"
}

func (b *Builder) rotateKey(c *call) string {
	return fmt.Sprintf("%s rotated key %s", c.r.From, str(c.p, "old_kid"))
}

func (b *Builder) revokeKey(c *call) string {
	return fmt.Sprintf("%s revoked key %s of %s", c.r.From, str(c.p, "kid"), firstNonEmpty(str(c.p, "target_uri"), str(c.p, "participant"), c.r.From))
}

func (b *Builder) submitToSCITT(c *call) string {
	rng, _ := c.p.Object("range")
	s := fmt.Sprintf("audit entries %s..%s submitted to a SCITT log by %s at seq %d", orDash(str(rng, "from_seq")), orDash(str(rng, "to_seq")), c.r.From, c.seq)
	b.t.Controls = append(b.t.Controls, s)
	return s
}
