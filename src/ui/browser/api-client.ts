// The page's one way to the API: the API key or the user's access token goes in Authorization (never
// in the page's URL), and a refusal becomes an ApiFailure carrying the API's own code, message and
// details (docs/errors.md), and Retry-After's seconds when the answer has them.

export interface Answer<T> {
  readonly status: number;
  readonly headers: Headers;
  readonly body: T;
}

export class ApiFailure extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details: Record<string, unknown>,
    /** Retry-After of a 429 or 503, in seconds; null when the answer had none. */
    readonly retryAfterS: number | null = null,
  ) {
    super(message);
  }
}

export interface CallInit {
  readonly body?: unknown;
  readonly headers?: Record<string, string>;
}

export class ApiClient {
  /** `credential`: an API key or a signed-in user's access token, both sent as Bearer; null for signing in, which needs neither. */
  constructor(readonly credential: string | null) {}

  async call<T>(method: string, path: string, init: CallInit = {}): Promise<Answer<T>> {
    const headers: Record<string, string> = { ...(this.credential === null ? {} : { Authorization: `Bearer ${this.credential}` }), ...init.headers };
    if (init.body !== undefined) headers["Content-Type"] = "application/json";
    let response: Response;
    try {
      response = await fetch(path, { method, headers, body: init.body === undefined ? undefined : JSON.stringify(init.body), cache: "no-store" });
    } catch (error) {
      // fetch refuses a header it cannot send (a key with a line break, say) before the network.
      const message = error instanceof TypeError && /header/i.test(error.message) ? "That key cannot be sent in a header; paste it again, without spaces or line breaks." : "The server could not be reached; is tabula still running?";
      throw new ApiFailure(0, "network", message, {});
    }
    const text = await response.text();
    const body = parseJson(text);
    if (response.status >= 400) {
      const error = (body as { error?: { code?: string; message?: string; details?: Record<string, unknown> } } | undefined)?.error;
      const retryAfterS = Number.parseInt(response.headers.get("Retry-After") ?? "", 10);
      throw new ApiFailure(response.status, error?.code ?? `http_${response.status}`, error?.message ?? `The server answered ${response.status}.`, error?.details ?? {}, Number.isNaN(retryAfterS) ? null : retryAfterS);
    }
    return { status: response.status, headers: response.headers, body: body as T };
  }
}

function parseJson(text: string): unknown {
  if (text === "") return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return undefined; // not JSON (a proxy's error page): the status speaks instead
  }
}

/** The message to show for anything a call threw. */
export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
