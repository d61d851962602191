// Follows one entity's change feed (docs/change-feed.md) as Server-Sent Events. EventSource cannot send
// headers, so the API key (or the signed-in user's token) rides as ?key= on this request only, which
// the feed's routes accept; the page's own URL never holds it. EventSource reconnects by itself,
// resuming with Last-Event-ID.

const EVENT_TYPES = ["create", "update", "delete", "restore", "sync"] as const;

export type LiveState = "live" | "reconnecting" | "stopped";

export interface LiveFeed {
  close(): void;
}

export function followChanges(entity: string, credential: string | null, onChange: (id: string, type: string) => void, onState: (state: LiveState) => void): LiveFeed {
  const query = credential === null ? "" : `?key=${encodeURIComponent(credential)}`;
  const source = new EventSource(`/api/entities/${encodeURIComponent(entity)}/changes${query}`);
  for (const type of EVENT_TYPES) {
    source.addEventListener(type, (event) => {
      const change = JSON.parse((event as MessageEvent<string>).data) as { id: string };
      onChange(change.id, type);
    });
  }
  // A stream that fell behind is closed by the server; EventSource resumes from its last id.
  source.addEventListener("overflow", () => onState("reconnecting"));
  source.addEventListener("open", () => onState("live"));
  // CLOSED after an error: the server refused the stream (a 403, say) and EventSource gave up.
  source.addEventListener("error", () => onState(source.readyState === EventSource.CLOSED ? "stopped" : "reconnecting"));
  return { close: () => source.close() };
}
