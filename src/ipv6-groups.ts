// IPv6 addresses in any of their spellings, as their eight 16-bit groups: webhook targets compare
// them with the addresses they refuse (webhooks/target.ts), and limits count a client by its /64
// (http/rate-limit.ts).

/** An IPv6 address (checked by isIP, in any spelling) as its eight 16-bit groups. */
export function ipv6GroupsOf(address: string): number[] {
  // A zone (fe80::1%eth0) names an interface, not part of the address.
  let text = address.split("%")[0]!;
  const dotted = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (dotted) {
    const [a, b, c, d] = dotted.slice(1).map(Number) as [number, number, number, number];
    text = `${text.slice(0, dotted.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const groupsIn = (part: string) => (part === "" ? [] : part.split(":").map((group) => parseInt(group, 16)));
  const [head, tail] = text.split("::") as [string, string | undefined];
  if (tail === undefined) return groupsIn(head);
  const [front, back] = [groupsIn(head), groupsIn(tail)];
  return [...front, ...new Array<number>(8 - front.length - back.length).fill(0), ...back];
}

/** The dotted IPv4 address held by two 16-bit groups (the last two of ::ffff:a.b.c.d). */
export function ipv4TextOf(high: number, low: number): string {
  return `${high >> 8}.${high & 255}.${low >> 8}.${low & 255}`;
}

/** One spelling for each IPv6 address (eight hex groups, none left out), to compare them by. */
export function ipv6TextOf(groups: readonly number[]): string {
  return groups.map((group) => group.toString(16)).join(":");
}
