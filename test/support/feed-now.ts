// Where a change feed stands once every write answered so far can be read. On PostgreSQL the feed's
// head stays below the cluster's oldest open transaction (docs/postgresql.md): while another test's
// transaction is open, writes already answered may still come after a position read at once. This
// reads on, a short long poll at a time, until one brings nothing.

export async function feedNow(read: (path: string) => Promise<{ body: any }>, path: string): Promise<string> {
  let next = (await read(path)).body.next as string;
  const join = path.includes("?") ? "&" : "?";
  for (;;) {
    const page = await read(`${path}${join}since=${encodeURIComponent(next)}&wait=0.3&limit=1000`);
    if (page.body.changes.length === 0) return next;
    next = page.body.next as string;
  }
}
