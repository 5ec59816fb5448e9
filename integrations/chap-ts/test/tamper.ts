// Tampering helpers shared by the tests.

/** Flips one bit of byte i of a base64 member's bytes (or of the text member). */
export function flip(r: Record<string, unknown>, member: "statement" | "seal" | "checkpoint", i: number, bit = 1): Record<string, unknown> {
  const c = { ...r };
  if (member === "checkpoint") {
    const b = Buffer.from(r.checkpoint as string, "utf8");
    b[i] ^= bit;
    c.checkpoint = b.toString("latin1") === b.toString("utf8") ? b.toString("utf8") : b.toString("latin1");
  } else {
    const b = Buffer.from(r[member] as string, "base64");
    b[i] ^= bit;
    c[member] = b.toString("base64");
  }
  return c;
}

export function positions(n: number, samples: number): number[] {
  const out = new Set<number>([0, 1, n - 1, n - 2]);
  for (let k = 0; out.size < Math.min(n, samples); k++) out.add(Math.floor(((k * 2654435761) % 2 ** 32) / 2 ** 32 * n));
  return [...out].filter((i) => i >= 0 && i < n).sort((a, b) => a - b);
}

